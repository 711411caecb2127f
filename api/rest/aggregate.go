package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
)

// aggregateBody is the POST .../aggregate body (docs/rest.md, Aggregates).
type aggregateBody struct {
	Where          map[string]any                        `json:"where"`
	GroupBy        []json.RawMessage                     `json:"groupBy"`
	Aggregates     map[string]map[string]json.RawMessage `json:"aggregates"`
	Having         map[string]any                        `json:"having"`
	OrderBy        json.RawMessage                       `json:"orderBy"`
	OrderDirection string                                `json:"orderDirection"`
	Limit          int                                   `json:"limit"`
	Offset         int                                   `json:"offset"`
}

func (h *Handler) aggregate(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	var body aggregateBody
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	p, err := body.plan(entity)
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.Aggregate(r.Context(), sc, p)
	return http.StatusOK, out, err
}

func (b *aggregateBody) plan(entity string) (query.Aggregation, error) {
	p := query.Aggregation{Entity: entity, Limit: b.Limit, Offset: b.Offset}
	var err error
	if p.Where, err = query.ParseWhere(b.Where); err != nil {
		return p, err
	}
	if p.Having, err = query.ParseWhereAt(b.Having, "having"); err != nil {
		return p, err
	}
	if p.OrderBy, err = parseOrder(b.OrderBy, b.OrderDirection); err != nil {
		return p, err
	}
	for i, raw := range b.GroupBy {
		path := fmt.Sprintf("groupBy[%d]", i)
		var k query.GroupKey
		if json.Unmarshal(raw, &k.Field) != nil {
			var obj struct {
				Field  string `json:"field"`
				Bucket string `json:"bucket"`
			}
			d := json.NewDecoder(strings.NewReader(string(raw)))
			d.DisallowUnknownFields()
			if d.Decode(&obj) != nil || obj.Field == "" {
				return p, apperr.Field(path, `must be a field name or {"field", "bucket"}`)
			}
			k = query.GroupKey{Field: obj.Field, Bucket: obj.Bucket}
		}
		p.GroupBy = append(p.GroupBy, k)
	}
	aliases := make([]string, 0, len(b.Aggregates))
	for a := range b.Aggregates {
		aliases = append(aliases, a)
	}
	slices.Sort(aliases) // one statement text per set of aggregates
	for _, alias := range aliases {
		spec, path := b.Aggregates[alias], "aggregates."+alias
		if len(spec) != 1 {
			return p, apperr.Field(path, "must name exactly one of count, countDistinct, sum, avg, min, max")
		}
		for fn, raw := range spec {
			var field string
			if json.Unmarshal(raw, &field) != nil || field == "" {
				return p, apperr.Field(path+"."+fn, "must be a field name (or \"*\" for count)")
			}
			if field == "*" && fn != string(query.Count) {
				return p, apperr.Field(path+"."+fn, "only count takes \"*\"")
			}
			p.Measures = append(p.Measures, query.Measure{Alias: alias, Func: query.AggFunc(fn), Field: field, Path: path + "." + fn})
		}
	}
	return p, nil
}

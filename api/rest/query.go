package rest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
)

// QueryRoutes registers the query, batch, vector-search and relationship
// routes (issue 3) next to the CRUD routes of Routes.
func (h *Handler) QueryRoutes(r *api.Router) {
	r.Handle("POST /api/v1/dynamic/{entity}/query", api.Func(h.query))
	r.Handle("POST /api/v1/dynamic/{entity}/vector-search", api.Func(h.vectorSearch))
	r.Handle("POST /api/v1/dynamic/{entity}/aggregate", api.Func(h.aggregate))
	r.Handle("POST /api/v1/dynamic/{entity}/batch", api.Func(h.batchCreate))
	r.Handle("PATCH /api/v1/dynamic/{entity}/batch", api.Func(h.batchUpdate))
	r.Handle("DELETE /api/v1/dynamic/{entity}/batch", api.Func(h.batchDelete))
	h.relationshipRoutes(r)
	h.writeRoutes(r)
}

// queryBody is the POST .../query body (docs/rest.md, Query). orderBy may be a field
// name (with orderDirection) or an array of {field, direction}.
type queryBody struct {
	Where          map[string]any  `json:"where"`
	Search         string          `json:"search"`
	Select         []string        `json:"select"`
	OrderBy        json.RawMessage `json:"orderBy"`
	OrderDirection string          `json:"orderDirection"`
	Offset         int             `json:"offset"`
	Limit          int             `json:"limit"`
	IncludeCount   bool            `json:"includeCount"`
	Traverse       []traverseSpec  `json:"traverse"`
	DistinctOn     []string        `json:"distinctOn"`
}

// traverseSpec is one traversal: related records nested under the
// relationship's name (or "as") in each item.
type traverseSpec struct {
	Relationship   string         `json:"relationship"`
	Direction      string         `json:"direction"`
	Select         []string       `json:"select"`
	Where          map[string]any `json:"where"`
	EdgeWhere      map[string]any `json:"edgeWhere"`
	Limit          int            `json:"limit"`
	Offset         int            `json:"offset"`
	OrderBy        string         `json:"orderBy"`
	OrderDirection string         `json:"orderDirection"`
	As             string         `json:"as"`
	// Edges adds "_relationship" and "properties" to each nested item.
	Edges bool `json:"edges"`
}

func (h *Handler) query(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	var body queryBody
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	l, err := body.plan(entity)
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.Query(r.Context(), sc, l)
	return http.StatusOK, out, err
}

func (b *queryBody) plan(entity string) (query.List, error) {
	l := query.List{Entity: entity, Search: b.Search, Offset: b.Offset, Limit: b.Limit, IncludeCount: b.IncludeCount, DistinctOn: b.DistinctOn}
	var err error
	if l.Where, err = query.ParseWhere(b.Where); err != nil {
		return l, err
	}
	if b.Select != nil {
		l.Select.Fields = b.Select
	}
	if l.OrderBy, err = parseOrder(b.OrderBy, b.OrderDirection); err != nil {
		return l, err
	}
	if l.Select.Nested, err = traversals(b.Traverse); err != nil {
		return l, err
	}
	return l, nil
}

// parseOrder accepts "field" (+ orderDirection) or [{field, direction}].
func parseOrder(raw json.RawMessage, dir string) ([]query.Order, error) {
	if len(raw) == 0 || string(raw) == "null" {
		if dir != "" {
			if _, err := direction(dir, "orderDirection"); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	var field string
	if json.Unmarshal(raw, &field) == nil {
		return orderOne(field, dir, "orderBy")
	}
	var list []struct {
		Field     string `json:"field"`
		Direction string `json:"direction"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, apperr.Field("orderBy", "must be a field name or an array of {field, direction}")
	}
	var out []query.Order
	for i, o := range list {
		one, err := orderOne(o.Field, o.Direction, fmt.Sprintf("orderBy[%d]", i))
		if err != nil {
			return nil, err
		}
		out = append(out, one...)
	}
	return out, nil
}

func orderOne(field, dir, path string) ([]query.Order, error) {
	if field == "" {
		return nil, apperr.Field(path, "must name a field")
	}
	desc, err := direction(dir, strings.Replace(path, "orderBy", "orderDirection", 1))
	if err != nil {
		return nil, err
	}
	return []query.Order{{Field: field, Desc: desc}}, nil
}

func direction(dir, path string) (bool, error) {
	switch strings.ToUpper(dir) {
	case "", "ASC":
		return false, nil
	case "DESC":
		return true, nil
	}
	return false, apperr.Field(path, "must be ASC or DESC")
}

func traversals(specs []traverseSpec) ([]query.Nested, error) {
	var out []query.Nested
	for i, t := range specs {
		path := fmt.Sprintf("traverse[%d]", i)
		if t.Relationship == "" {
			return nil, apperr.Field(path+".relationship", "is required")
		}
		n := query.Nested{Key: t.As, Relationship: t.Relationship, Direction: query.Direction(t.Direction),
			Select: query.Selection{Fields: t.Select}, Limit: t.Limit, Offset: t.Offset, Edges: t.Edges}
		switch n.Direction {
		case "", query.DirOut, query.DirIn, query.DirBoth:
		default:
			return nil, apperr.Field(path+".direction", "must be out, in or both")
		}
		var err error
		if n.Where, err = query.ParseWhereAt(t.Where, path+".where"); err != nil {
			return nil, err
		}
		if n.EdgeWhere, err = query.ParseWhereAt(t.EdgeWhere, path+".edgeWhere"); err != nil {
			return nil, err
		}
		if t.OrderBy != "" {
			if n.OrderBy, err = orderOne(t.OrderBy, t.OrderDirection, path+".orderBy"); err != nil {
				return nil, err
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// ParseListQuery parses the GET list's query parameters into a plan; the
// options are those of the query body: where (JSON-encoded), search,
// select (comma-separated), orderBy, orderDirection, limit, offset,
// includeCount and traverse (a JSON-encoded array as in the query body).
// Unknown parameters are ignored.
func ParseListQuery(q url.Values, entity string) (query.List, error) {
	l := query.List{Entity: entity, Search: q.Get("search"), Select: query.Selection{Fields: splitList(q.Get("select"))},
		DistinctOn: splitList(q.Get("distinctOn"))}
	var err error
	if l.Where, err = query.ParseWhereJSON(q.Get("where"), "where"); err != nil {
		return l, err
	}
	if err := pageParams(q, &l.Limit, &l.Offset); err != nil {
		return l, err
	}
	if v := q.Get("includeCount"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return l, apperr.Field("includeCount", "must be true or false")
		}
		l.IncludeCount = b
	}
	if l.OrderBy, err = orderParams(q); err != nil {
		return l, err
	}
	if v := q.Get("traverse"); v != "" {
		var specs []traverseSpec
		d := json.NewDecoder(strings.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&specs); err != nil {
			return l, apperr.Field("traverse", "must be a JSON array of {relationship, direction, select, where, limit}")
		}
		if l.Select.Nested, err = traversals(specs); err != nil {
			return l, err
		}
	}
	return l, nil
}

// pageParams parses the integer query parameters limit and offset.
func pageParams(q url.Values, limit, offset *int) error {
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", limit}, {"offset", offset}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				return apperr.Field(p.name, "must be an integer")
			}
			*p.dst = n
		}
	}
	return nil
}

// orderParams parses the query parameters orderBy and orderDirection.
func orderParams(q url.Values) ([]query.Order, error) {
	if f := q.Get("orderBy"); f != "" {
		return orderOne(f, q.Get("orderDirection"), "orderBy")
	}
	if d := q.Get("orderDirection"); d != "" {
		if _, err := direction(d, "orderDirection"); err != nil {
			return nil, err
		}
	}
	return nil, nil
}

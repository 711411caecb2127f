package rest

import (
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
)

// vectorBody is the vector-search request (docs/rest.md, Vector search).
type vectorBody struct {
	Field    string         `json:"field"`
	Vector   []any          `json:"vector"`
	TopK     *int           `json:"topK"`
	EfSearch *int           `json:"efSearch"`
	Where    map[string]any `json:"where"`
	Select   []string       `json:"select"`
}

// vectorSearch serves POST /api/v1/dynamic/{Entity}/vector-search:
// [{data, score}] ranked by cosine similarity (entity read scope).
func (h *Handler) vectorSearch(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	var b vectorBody
	if err := api.DecodeJSON(r, &b); err != nil {
		return 0, nil, err
	}
	if b.Field == "" {
		return 0, nil, apperr.Field("field", "is required (the name of a VECTOR field)")
	}
	v := query.VectorSearch{Entity: entity, Field: b.Field, Vector: b.Vector, Select: query.Selection{Fields: b.Select}}
	if b.TopK != nil {
		if *b.TopK < 1 || *b.TopK > query.MaxTopK {
			return 0, nil, apperr.Field("topK", "must be between 1 and %d", query.MaxTopK)
		}
		v.TopK = *b.TopK
	}
	if b.EfSearch != nil {
		if *b.EfSearch < 1 {
			return 0, nil, apperr.Field("efSearch", "must be between topK and %d", query.MaxEfSearch)
		}
		v.EfSearch = *b.EfSearch // the compiler checks it against topK
	}
	if v.Where, err = query.ParseWhere(b.Where); err != nil {
		return 0, nil, err
	}
	out, err := h.store.VectorSearch(r.Context(), sc, v)
	return http.StatusOK, out, err
}

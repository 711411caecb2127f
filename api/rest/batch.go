package rest

import (
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/records"
)

// Batch endpoints (spec §4.3): at most records.MaxBatch items, all
// validated before any write, one transaction. Success: 201 (create) or
// 200 with the §2.7 result; a rejected batch: 400 with the same result
// listing every failed item, nothing written.

func (h *Handler) batchCreate(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "create")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	items, err := decodeBatch(r, "items")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	res, err := h.store.BatchCreate(r.Context(), sc, entity, items)
	writeBatch(w, r, res, err, http.StatusCreated)
}

func (h *Handler) batchUpdate(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "update")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	list, err := decodeBatch(r, "items")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	items := make([]records.BatchUpdateItem, len(list))
	for i, it := range list {
		items[i].Raw = it
		obj, ok := it.(map[string]any)
		if !ok {
			continue // no id: the store reports the item
		}
		items[i].ID = obj["id"]
		if d, ok := obj["data"].(map[string]any); ok {
			items[i].Data = d // otherwise the store reports "data"
		}
	}
	res, err := h.store.BatchUpdate(r.Context(), sc, entity, items)
	writeBatch(w, r, res, err, http.StatusOK)
}

func (h *Handler) batchDelete(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "delete")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	ids, err := decodeBatch(r, "ids")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	res, err := h.store.BatchDelete(r.Context(), sc, entity, ids)
	writeBatch(w, r, res, err, http.StatusOK)
}

// decodeBatch decodes the body (one pass, numbers as json.Number) and
// refuses an oversized batch before any further work. It returns the
// member's array.
func decodeBatch(r *http.Request, member string) ([]any, error) {
	var body map[string]any
	if err := api.DecodeJSON(r, &body); err != nil {
		return nil, err
	}
	v, ok := body[member]
	if !ok {
		return nil, apperr.Field(member, "is required (an array)")
	}
	for k := range body {
		if k != member {
			return nil, apperr.Field(k, "unknown member (the body is {%q: [...]})", member)
		}
	}
	list, ok := v.([]any)
	if !ok {
		return nil, apperr.Field(member, "must be an array")
	}
	if len(list) > records.MaxBatch {
		return nil, apperr.Field(member, "holds %d items; a batch holds at most %d", len(list), records.MaxBatch)
	}
	return list, nil
}

func writeBatch(w http.ResponseWriter, r *http.Request, res *records.BatchResult, err error, okStatus int) {
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if res.Rejected() {
		api.WriteJSON(w, http.StatusBadRequest, res)
		return
	}
	api.WriteJSON(w, okStatus, res)
}

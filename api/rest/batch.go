package rest

import (
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/records"
)

// Batch endpoints (docs/rest.md, Batches): at most records.MaxBatch items, all
// validated before any write, one transaction. Success: 201 (create) or
// 200 with the batch result; a rejected batch: 400 with the same result
// listing every failed item, nothing written.

func (h *Handler) batchCreate(r *http.Request) (int, any, error) {
	sc, entity, items, err := h.batchScope(r, "create", "items")
	if err != nil {
		return 0, nil, err
	}
	res, err := h.store.BatchCreate(r.Context(), sc, entity, items)
	return batchResponse(res, err, http.StatusCreated)
}

func (h *Handler) batchUpdate(r *http.Request) (int, any, error) {
	sc, entity, list, err := h.batchScope(r, "update", "items")
	if err != nil {
		return 0, nil, err
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
	return batchResponse(res, err, http.StatusOK)
}

func (h *Handler) batchDelete(r *http.Request) (int, any, error) {
	sc, entity, ids, err := h.batchScope(r, "delete", "ids")
	if err != nil {
		return 0, nil, err
	}
	res, err := h.store.BatchDelete(r.Context(), sc, entity, ids)
	return batchResponse(res, err, http.StatusOK)
}

// batchScope authorises op on the path's entity, resolves the tenant's
// scope and decodes the body's member array.
func (h *Handler) batchScope(r *http.Request, op, member string) (*records.Scope, string, []any, error) {
	sc, entity, err := h.scope(r, op)
	if err != nil {
		return nil, "", nil, err
	}
	list, err := decodeBatch(r, member)
	return sc, entity, list, err
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

// batchResponse renders a batch result: okStatus on success, 400 with the
// same result when the batch was rejected.
func batchResponse(res *records.BatchResult, err error, okStatus int) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	if res.Rejected() {
		return http.StatusBadRequest, res, nil
	}
	return okStatus, res, nil
}

package rest

import (
	"net/http"
	"strconv"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/records"
)

// LifecycleRoutes registers the routes of the entity options softDelete
// and history (docs/rest.md, Soft delete and history):
//
//	POST /api/v1/dynamic/{Entity}/{id}/restore   (scope delete) → the record
//	GET  /api/v1/dynamic/{Entity}/{id}/history   (scope read)   → a page of versions
//
// and every read of a record (get, list, query, vector search, the
// relationship list of a record) takes ?withDeleted=true (see withDeleted).
func (h *Handler) LifecycleRoutes(r *api.Router) {
	r.Handle("POST /api/v1/dynamic/{entity}/{id}/restore", api.Func(h.restore))
	r.Handle("GET /api/v1/dynamic/{entity}/{id}/history", api.Func(h.history))
}

// withDeleted applies ?withDeleted=true to a read scope: the soft-deleted
// records of entity are shown to a principal with its delete scope, and
// FORBIDDEN to any other.
func withDeleted(r *http.Request, sc *records.Scope, entity string) (*records.Scope, error) {
	v := r.URL.Query().Get("withDeleted")
	if v == "" {
		return sc, nil
	}
	show, err := strconv.ParseBool(v)
	if err != nil {
		return nil, apperr.Field("withDeleted", "must be true or false")
	}
	if !show {
		return sc, nil
	}
	return sc.WithDeleted(entity)
}

func (h *Handler) restore(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "delete")
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.Restore(r.Context(), sc, entity, r.PathValue("id"))
	return http.StatusOK, out, err
}

func (h *Handler) history(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	limit := 0
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > records.MaxHistoryLimit {
			return 0, nil, apperr.Field("limit", "must be an integer between 1 and %d", records.MaxHistoryLimit)
		}
	}
	out, err := h.store.History(r.Context(), sc, entity, r.PathValue("id"), limit, q.Get("cursor"))
	return http.StatusOK, out, err
}

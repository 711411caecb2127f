// Package rest serves the dynamic REST API of a tenant's active schema:
// entity CRUD, query, batch, vector search and relationships under
// /api/v1/dynamic/{Entity}.
package rest

import (
	"net/http"
	"strings"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
)

// Handler serves the dynamic REST API.
type Handler struct {
	store *records.Store
	files FileLookup
}

// New returns the REST handler. files may be nil (no ?expand=files).
func New(store *records.Store, files FileLookup) *Handler {
	return &Handler{store: store, files: files}
}

// Routes registers the CRUD routes.
func (h *Handler) Routes(r *api.Router) {
	r.Handle("GET /api/v1/dynamic/{entity}", api.Func(h.list))
	r.Handle("POST /api/v1/dynamic/{entity}", api.Func(h.create))
	r.Handle("GET /api/v1/dynamic/{entity}/{id}", api.Func(h.get))
	r.Handle("PUT /api/v1/dynamic/{entity}/{id}", api.Func(h.replace))
	r.Handle("PATCH /api/v1/dynamic/{entity}/{id}", api.Func(h.patch))
	r.Handle("DELETE /api/v1/dynamic/{entity}/{id}", api.Func(h.delete))
}

// scope authorises op on the path's entity and resolves the tenant's scope.
func (h *Handler) scope(r *http.Request, op string) (*records.Scope, string, error) {
	entity := r.PathValue("entity")
	if err := api.Principal(r).Require("entity", entity, op); err != nil {
		return nil, "", err
	}
	sc, err := h.store.Scope(r.Context(), api.Principal(r))
	if err != nil {
		return nil, "", err
	}
	if _, err := sc.Entity(entity); err != nil {
		return nil, "", err
	}
	if op == "read" {
		if sc, err = withDeleted(r, sc, entity); err != nil {
			return nil, "", err
		}
	}
	return sc, entity, nil
}

func (h *Handler) get(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.Get(r.Context(), sc, entity, r.PathValue("id"), query.Selection{Fields: splitList(r.URL.Query().Get("select"))})
	if err == nil && wantsFiles(r) {
		out, err = h.expandFiles(r.Context(), sc, entity, out, false)
	}
	return http.StatusOK, out, err
}

func (h *Handler) list(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	l, err := ParseListQuery(r.URL.Query(), entity)
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.Query(r.Context(), sc, l)
	if err == nil && wantsFiles(r) {
		out, err = h.expandFiles(r.Context(), sc, entity, out, true)
	}
	return http.StatusOK, out, err
}

func (h *Handler) create(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "create")
	if err != nil {
		return 0, nil, err
	}
	var input map[string]any
	if err := decodeObject(r, &input); err != nil {
		return 0, nil, err
	}
	out, err := h.store.Create(r.Context(), sc, entity, input)
	return http.StatusCreated, out, err
}

func (h *Handler) replace(r *http.Request) (int, any, error) { return h.update(r, records.Replace) }
func (h *Handler) patch(r *http.Request) (int, any, error)   { return h.update(r, records.Patch) }

func (h *Handler) update(r *http.Request, mode records.Mode) (int, any, error) {
	sc, entity, err := h.scope(r, "update")
	if err != nil {
		return 0, nil, err
	}
	var input map[string]any
	if err := decodeObject(r, &input); err != nil {
		return 0, nil, err
	}
	out, err := h.store.Update(r.Context(), sc, entity, r.PathValue("id"), input, mode)
	return http.StatusOK, out, err
}

func (h *Handler) delete(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "delete")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, h.store.Delete(r.Context(), sc, entity, r.PathValue("id"))
}

// decodeObject decodes a JSON object body (null and non-objects are 400).
func decodeObject(r *http.Request, dst *map[string]any) error {
	var v any
	if err := api.DecodeJSON(r, &v); err != nil {
		return err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return apperr.New(apperr.BadRequest, "the request body must be a JSON object of fields")
	}
	*dst = m
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := make([]string, 0, len(parts))
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

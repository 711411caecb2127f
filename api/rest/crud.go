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
	r.HandleFunc("GET /api/v1/dynamic/{entity}", h.list)
	r.HandleFunc("POST /api/v1/dynamic/{entity}", h.create)
	r.HandleFunc("GET /api/v1/dynamic/{entity}/{id}", h.get)
	r.HandleFunc("PUT /api/v1/dynamic/{entity}/{id}", h.replace)
	r.HandleFunc("PATCH /api/v1/dynamic/{entity}/{id}", h.patch)
	r.HandleFunc("DELETE /api/v1/dynamic/{entity}/{id}", h.delete)
}

// scope authorises op on the path's entity and resolves the tenant's scope.
func (h *Handler) scope(r *http.Request, op string) (*records.Scope, string, error) {
	entity := r.PathValue("entity")
	if err := api.Principal(r).Require("entity", entity, op); err != nil {
		return nil, "", err
	}
	sc, err := h.store.Scope(r.Context(), api.Principal(r).TenantID)
	if err != nil {
		return nil, "", err
	}
	if _, err := sc.Compiler.Entity(entity); err != nil {
		return nil, "", err
	}
	return sc, entity, nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	out, err := h.store.Get(r.Context(), sc, entity, r.PathValue("id"), query.Selection{Fields: splitList(r.URL.Query().Get("select"))})
	if err == nil && wantsFiles(r) {
		out, err = h.expandFiles(r.Context(), sc, entity, out, false)
	}
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, out)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	l, err := ParseListQuery(r.URL.Query(), entity)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	out, err := h.store.List(r.Context(), sc, l)
	if err == nil && wantsFiles(r) {
		out, err = h.expandFiles(r.Context(), sc, entity, out, true)
	}
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, out)
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "create")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	var input map[string]any
	if err := decodeObject(r, &input); err != nil {
		api.WriteError(w, r, err)
		return
	}
	out, err := h.store.Create(r.Context(), sc, entity, input)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusCreated, out)
}

func (h *Handler) replace(w http.ResponseWriter, r *http.Request) { h.update(w, r, records.Replace) }
func (h *Handler) patch(w http.ResponseWriter, r *http.Request)   { h.update(w, r, records.Patch) }

func (h *Handler) update(w http.ResponseWriter, r *http.Request, mode records.Mode) {
	sc, entity, err := h.scope(r, "update")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	var input map[string]any
	if err := decodeObject(r, &input); err != nil {
		api.WriteError(w, r, err)
		return
	}
	out, err := h.store.Update(r.Context(), sc, entity, r.PathValue("id"), input, mode)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, out)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	sc, entity, err := h.scope(r, "delete")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := h.store.Delete(r.Context(), sc, entity, r.PathValue("id")); err != nil {
		api.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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

// Package tenants is the HTTP surface of the operator's tenant API (the
// operator token, DDS_OPERATOR_TOKEN, not a tenant's credential):
// GET /api/v1/tenants[/{id}], DELETE /api/v1/tenants/{id} (202 with a
// tenant job), POST /api/v1/tenants/{id}/export and
// POST /api/v1/tenants/import (202 with a tenant job), POST
// /api/v1/tenant-archives (an upload URL for an archive to import), and
// GET /api/v1/tenant-jobs[/{id}], and their OpenAPI document at
// GET /api/v1/operator/openapi.json. Creating a tenant
// (POST /api/v1/tenants) stays with the management API (api/admin).
package tenants

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/lifecycle"
)

// Handler serves the operator's tenant API.
type Handler struct {
	svc           *lifecycle.Service
	operatorToken string
	doc           []byte // the OpenAPI document of these routes
}

// New returns the handler; an empty operatorToken turns the API off (every
// route answers 401).
// doc is the routes' OpenAPI document (openapi.Generator.Operator).
func New(svc *lifecycle.Service, operatorToken string, doc []byte) *Handler {
	return &Handler{svc: svc, operatorToken: operatorToken, doc: doc}
}

// Routes registers the routes. They are public to the router (no tenant
// credential) and check the operator token themselves.
func (h *Handler) Routes(r *api.Router) {
	r.Public("GET /api/v1/tenants", h.operator(h.list))
	r.Public("GET /api/v1/tenants/{id}", h.operator(h.get))
	r.Public("DELETE /api/v1/tenants/{id}", h.operator(h.delete))
	r.Public("POST /api/v1/tenants/{id}/export", h.operator(h.export))
	r.Public("POST /api/v1/tenants/import", h.operator(h.importTenant))
	r.Public("POST /api/v1/tenant-archives", h.operator(h.upload))
	r.Public("GET /api/v1/tenant-jobs", h.operator(h.jobs))
	r.Public("GET /api/v1/tenant-jobs/{id}", h.operator(h.job))
	r.Public("GET /api/v1/operator/openapi.json", h.operator(func(*http.Request) (int, any, error) {
		return http.StatusOK, json.RawMessage(h.doc), nil
	}))
}

// operator runs f for a request bearing the operator token, and answers
// 401 otherwise (compared in constant time).
func (h *Handler) operator(f api.Func) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if h.operatorToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(h.operatorToken)) != 1 {
			api.WriteError(w, r, apperr.New(apperr.Unauthenticated, "the tenant API needs the operator token (DDS_OPERATOR_TOKEN)"))
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
		f.ServeHTTP(w, r)
	})
}

func limitParam(r *http.Request, def, most int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > most {
		return 0, apperr.Field("limit", "must be an integer from 1 to %d", most)
	}
	return n, nil
}

func (h *Handler) list(r *http.Request) (int, any, error) {
	limit, err := limitParam(r, 100, 1000)
	if err != nil {
		return 0, nil, err
	}
	ts, err := h.svc.List(r.Context(), r.URL.Query().Get("after"), limit)
	if err != nil {
		return 0, nil, err
	}
	body := map[string]any{"tenants": ts, "nextAfter": nil}
	if len(ts) == limit {
		body["nextAfter"] = ts[len(ts)-1].ID
	}
	return http.StatusOK, body, nil
}

func (h *Handler) get(r *http.Request) (int, any, error) {
	t, err := h.svc.Get(r.Context(), r.PathValue("id"))
	return http.StatusOK, t, err
}

func (h *Handler) delete(r *http.Request) (int, any, error) {
	j, err := h.svc.Delete(r.Context(), r.PathValue("id"))
	return http.StatusAccepted, j, err
}

func (h *Handler) jobs(r *http.Request) (int, any, error) {
	limit, err := limitParam(r, 50, 500)
	if err != nil {
		return 0, nil, err
	}
	js, err := h.svc.Jobs(r.Context(), r.URL.Query().Get("tenantId"), limit)
	return http.StatusOK, map[string]any{"jobs": js}, err
}

func (h *Handler) job(r *http.Request) (int, any, error) {
	j, err := h.svc.Job(r.Context(), r.PathValue("id"))
	return http.StatusOK, j, err
}

func (h *Handler) export(r *http.Request) (int, any, error) {
	j, err := h.svc.Export(r.Context(), r.PathValue("id"))
	return http.StatusAccepted, j, err
}

func (h *Handler) importTenant(r *http.Request) (int, any, error) {
	var body lifecycle.ImportSpec
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	j, err := h.svc.Import(r.Context(), body)
	return http.StatusAccepted, j, err
}

func (h *Handler) upload(r *http.Request) (int, any, error) {
	var body struct {
		SizeBytes *int64 `json:"sizeBytes"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	u, err := h.svc.NewUpload(r.Context(), body.SizeBytes)
	return http.StatusCreated, u, err
}

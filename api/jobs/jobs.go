// Package jobs is the HTTP surface of batch jobs: POST /api/v1/jobs
// (import, update or delete by filter), GET /api/v1/jobs[/{id}] and
// POST /api/v1/jobs/{id}/cancel. Creating a job needs job:*:create and the
// entity scope of its operation (create for an import, update, delete);
// reading and cancelling need job:*:read and job:*:create.
package jobs

import (
	"net/http"
	"strconv"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	svc "github.com/dds-project/dds/jobs"
)

// Handler serves the job API.
type Handler struct {
	jobs *svc.Service
}

// New returns the handler.
func New(jobs *svc.Service) *Handler { return &Handler{jobs: jobs} }

// Routes registers the job API.
func (h *Handler) Routes(r *api.Router) {
	r.Handle("POST /api/v1/jobs", api.Func(h.create))
	r.Handle("GET /api/v1/jobs", api.Func(h.list))
	r.Handle("GET /api/v1/jobs/{id}", api.Func(h.get))
	r.Handle("POST /api/v1/jobs/{id}/cancel", api.Func(h.cancel))
}

func (h *Handler) create(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "job", "create")
	if err != nil {
		return 0, nil, err
	}
	var body map[string]any
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	req, err := svc.DecodeRequest(body)
	if err != nil {
		return 0, nil, err
	}
	if err := p.Require("entity", req.Entity, svc.Op(req.Type)); err != nil {
		return 0, nil, err
	}
	j, err := h.jobs.Create(r.Context(), p, req)
	return http.StatusAccepted, j, err
}

func (h *Handler) get(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "job", "read")
	if err != nil {
		return 0, nil, err
	}
	j, err := h.jobs.Get(r.Context(), p.TenantID, r.PathValue("id"))
	return http.StatusOK, j, err
}

func (h *Handler) list(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "job", "read")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	limit, err := intParam(q.Get("limit"), "limit")
	if err != nil {
		return 0, nil, err
	}
	offset, err := intParam(q.Get("offset"), "offset")
	if err != nil {
		return 0, nil, err
	}
	res, err := h.jobs.List(r.Context(), p.TenantID, q.Get("status"), limit, offset)
	return http.StatusOK, res, err
}

func (h *Handler) cancel(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "job", "create")
	if err != nil {
		return 0, nil, err
	}
	j, err := h.jobs.Cancel(r.Context(), p.TenantID, r.PathValue("id"))
	return http.StatusAccepted, j, err
}

func intParam(s, name string) (int, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, apperr.Field(name, "must be an integer")
	}
	return n, nil
}

// Package files is the HTTP surface of the file API (docs/files.md):
// upload-url, confirm, metadata, download-url, list and delete, with scopes
// file:*:<op>, plus the public routes serving the local storage driver's
// presigned URLs. A principal under row rules reaches only the files it
// uploaded and those the records it may read hold (rules.go).
package files

import (
	"net/http"
	"strconv"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	svc "github.com/dds-project/dds/files"
	"github.com/dds-project/dds/storage"
)

// Handler serves the file API.
type Handler struct {
	files   *svc.Service
	local   *storage.Local // nil unless the local driver is configured
	records Records
}

// New returns the handler. When store is the local driver, its presigned
// URLs are served by this server (public routes under storage.LocalRoute).
// records decides what principals under row rules reach (rules.go).
func New(files *svc.Service, store storage.Driver, records Records) *Handler {
	local, _ := store.(*storage.Local)
	return &Handler{files: files, local: local, records: records}
}

// Routes registers the file API.
func (h *Handler) Routes(r *api.Router) {
	r.Handle("POST /api/v1/files/upload-url", api.Func(h.uploadURL))
	r.Handle("POST /api/v1/files/{id}/confirm", api.Func(h.confirm))
	r.Handle("GET /api/v1/files/{id}/download-url", api.Func(h.downloadURL))
	r.Handle("GET /api/v1/files/{id}", api.Func(h.get))
	r.Handle("GET /api/v1/files", api.Func(h.list))
	r.Handle("DELETE /api/v1/files/{id}", api.Func(h.delete))
	if h.local != nil { // its errors rendered the way every other route's are
		h.local.Routes(r.Public, api.WriteError)
	}
}

// tenant checks the scope file:*:op and returns the caller's tenant.
func tenant(r *http.Request, op string) (string, error) {
	p, err := api.Authorize(r, "file", op)
	return p.TenantID, err
}

func (h *Handler) uploadURL(r *http.Request) (int, any, error) {
	t, err := tenant(r, "create")
	if err != nil {
		return 0, nil, err
	}
	var req svc.UploadRequest
	if err := api.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Uploader, err = h.uploadTarget(r, req); err != nil {
		return 0, nil, err
	}
	res, err := h.files.RequestUpload(r.Context(), t, req)
	return http.StatusCreated, res, err
}

func (h *Handler) confirm(r *http.Request) (int, any, error) {
	t, err := tenant(r, "create")
	if err != nil {
		return 0, nil, err
	}
	if err := h.reach(r, t, false); err != nil {
		return 0, nil, err
	}
	f, err := h.files.Confirm(r.Context(), t, r.PathValue("id"))
	return http.StatusOK, f, err
}

func (h *Handler) downloadURL(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	if err := h.reach(r, t, true); err != nil {
		return 0, nil, err
	}
	d, err := h.files.DownloadURL(r.Context(), t, r.PathValue("id"))
	return http.StatusOK, d, err
}

func (h *Handler) get(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	if err := h.reach(r, t, true); err != nil {
		return 0, nil, err
	}
	f, err := h.files.Get(r.Context(), t, r.PathValue("id"))
	return http.StatusOK, f, err
}

func (h *Handler) list(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	f := svc.ListFilter{EntityName: q.Get("entityName"), EntityID: q.Get("entityId"), FieldName: q.Get("fieldName"),
		MimeType: q.Get("mimeType"), Status: q.Get("status")}
	var errs []apperr.FieldError
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &f.Limit}, {"offset", &f.Offset}} {
		if v := q.Get(p.name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil {
				errs = append(errs, apperr.FieldError{Field: p.name, Message: "must be an integer"})
				continue
			}
			*p.dst = n
		}
	}
	if e := apperr.Fields(errs); e != nil {
		return 0, nil, e
	}
	if f.Limit == 0 && q.Get("limit") != "" {
		return 0, nil, apperr.Field("limit", "must be between 1 and %d", svc.MaxLimit)
	}
	f.UploadedBy = uploader(api.Principal(r)) // under rules: its own uploads
	res, err := h.files.List(r.Context(), t, f)
	return http.StatusOK, res, err
}

func (h *Handler) delete(r *http.Request) (int, any, error) {
	t, err := tenant(r, "delete")
	if err != nil {
		return 0, nil, err
	}
	if err := h.reach(r, t, false); err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, h.files.Delete(r.Context(), t, r.PathValue("id"))
}

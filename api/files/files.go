// Package files is the HTTP surface of the file API (spec §4.6):
// upload-url, confirm, metadata, download-url, list and delete, with scopes
// file:*:<op>, plus the public routes serving the local storage driver's
// presigned URLs.
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
	files *svc.Service
	local *storage.Local // nil unless the local driver is configured
}

// New returns the handler. When store is the local driver, its presigned
// URLs are served by this server (public routes under storage.LocalRoute).
func New(files *svc.Service, store storage.Driver) *Handler {
	local, _ := store.(*storage.Local)
	if local != nil {
		local.OnError = api.WriteError
	}
	return &Handler{files: files, local: local}
}

// Routes registers the file API.
func (h *Handler) Routes(r *api.Router) {
	r.HandleFunc("POST /api/v1/files/upload-url", h.uploadURL)
	r.HandleFunc("POST /api/v1/files/{id}/confirm", h.confirm)
	r.HandleFunc("GET /api/v1/files/{id}/download-url", h.downloadURL)
	r.HandleFunc("GET /api/v1/files/{id}", h.get)
	r.HandleFunc("GET /api/v1/files", h.list)
	r.HandleFunc("DELETE /api/v1/files/{id}", h.delete)
	if h.local != nil {
		r.Public("PUT "+storage.LocalRoute+"{token}", http.HandlerFunc(h.local.ServeUpload))
		r.Public("GET "+storage.LocalRoute+"{token}", http.HandlerFunc(h.local.ServeDownload))
	}
}

// tenant checks the scope file:*:op and returns the caller's tenant.
func tenant(w http.ResponseWriter, r *http.Request, op string) (string, bool) {
	p := api.Principal(r)
	if err := p.Require("file", "*", op); err != nil {
		api.WriteError(w, r, err)
		return "", false
	}
	return p.TenantID, true
}

func (h *Handler) uploadURL(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "create")
	if !ok {
		return
	}
	var req svc.UploadRequest
	if err := api.DecodeJSON(r, &req); err != nil {
		api.WriteError(w, r, err)
		return
	}
	res, err := h.files.RequestUpload(r.Context(), t, req)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusCreated, res)
}

func (h *Handler) confirm(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "create")
	if !ok {
		return
	}
	f, err := h.files.Confirm(r.Context(), t, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, f)
}

func (h *Handler) downloadURL(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "read")
	if !ok {
		return
	}
	d, err := h.files.DownloadURL(r.Context(), t, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, d)
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "read")
	if !ok {
		return
	}
	f, err := h.files.Get(r.Context(), t, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, f)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "read")
	if !ok {
		return
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
		api.WriteError(w, r, e)
		return
	}
	if f.Limit == 0 && q.Get("limit") != "" {
		api.WriteError(w, r, apperr.Field("limit", "must be between 1 and %d", svc.MaxLimit))
		return
	}
	res, err := h.files.List(r.Context(), t, f)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, res)
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "delete")
	if !ok {
		return
	}
	if err := h.files.Delete(r.Context(), t, r.PathValue("id")); err != nil {
		api.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

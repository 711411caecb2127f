package rest

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// A file's download URL through the record holding it (docs/files.md,
// "Files under rules"): the record is read as GET /dynamic/{entity}/{id}
// with ?select=<field> reads it, so the read rule (404 for a record the
// principal may not read) and the field lists (403 naming a field it may
// not read) decide, and the file is the one the field holds now.

// FileRoutes registers GET /api/v1/dynamic/{entity}/{id}/files/{field}/download-url.
func (h *Handler) FileRoutes(r *api.Router) {
	r.Handle("GET /api/v1/dynamic/{entity}/{id}/files/{field}/download-url", api.Func(h.fileDownloadURL))
}

func (h *Handler) fileDownloadURL(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	if _, err := api.Authorize(r, "file", "read"); err != nil {
		return 0, nil, err
	}
	if h.files == nil {
		return 0, nil, apperr.New(apperr.NotFound, "no file service")
	}
	e, _ := sc.Entity(entity)
	field := r.PathValue("field")
	if f, ok := e.Field(field); !ok || f.Type != schema.File {
		if !ok || sc.Readable(entity, field) { // a hidden field is refused by the read below, as everywhere
			return 0, nil, apperr.Field(field, "is not a FILE field of %s", entity)
		}
	}
	out, err := h.store.Get(r.Context(), sc, entity, r.PathValue("id"), query.Selection{Fields: []string{field}})
	if ae := apperr.As(err); ae != nil && ae.Code == apperr.Forbidden {
		for i := range ae.Details { // the path names the field; this request has no select
			ae.Details[i].Field = strings.TrimPrefix(ae.Details[i].Field, "select.")
		}
	}
	if err != nil {
		return 0, nil, err
	}
	var rec map[string]any
	if err := json.Unmarshal(out, &rec); err != nil {
		return 0, nil, apperr.Wrap(err, "decode record")
	}
	id, _ := rec[field].(string)
	if id == "" {
		return 0, nil, apperr.New(apperr.NotFound, "%s %s holds no file in %s", entity, r.PathValue("id"), field)
	}
	d, err := h.files.DownloadURL(r.Context(), sc.TenantID, id)
	return http.StatusOK, d, err
}

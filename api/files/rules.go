package files

import (
	"context"
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	svc "github.com/dds-project/dds/files"
	"github.com/dds-project/dds/records"
)

// Records is what the file API needs from the records layer to decide what
// a principal under row rules reaches (docs/files.md, "Files under rules").
type Records interface {
	Scope(ctx context.Context, p *auth.Principal) (*records.Scope, error)
	FileLinked(ctx context.Context, sc *records.Scope, fileID string) (bool, error)
	CheckFileTarget(ctx context.Context, sc *records.Scope, entity, field, id string) error
}

// uploader names a principal under row rules as its files' uploader ("" for
// principals without roles, which reach every file of their tenant).
func uploader(p *auth.Principal) string { return records.Uploader(p) }

// uploadTarget checks, for a principal under rules, the record an upload
// request names as a write of its FILE field would be checked
// (records.Store.CheckFileTarget), and returns the uploader to record.
func (h *Handler) uploadTarget(r *http.Request, req svc.UploadRequest) (string, error) {
	p := api.Principal(r)
	up := uploader(p)
	if up == "" || (req.EntityName == nil && req.EntityID == nil && req.FieldName == nil) {
		return up, nil
	}
	if req.EntityName == nil {
		return "", apperr.Field("entityName", "is required with entityId or fieldName under row rules")
	}
	sc, err := h.records.Scope(r.Context(), p)
	if err != nil {
		return "", err
	}
	return up, h.records.CheckFileTarget(r.Context(), sc, *req.EntityName, deref(req.FieldName), deref(req.EntityID))
}

// reach answers 404, as for another tenant's file, when a principal under
// rules may not reach the path's file: it reaches the files it uploaded,
// and (when viaRecords, for reads) those a record it may read holds in a
// FILE field it may read. Confirm and delete are the uploader's alone.
// Principals without roles reach every file of their tenant.
func (h *Handler) reach(r *http.Request, tenantID string, viaRecords bool) error {
	p := api.Principal(r)
	up := uploader(p)
	if up == "" {
		return nil
	}
	id := r.PathValue("id")
	f, err := h.files.Get(r.Context(), tenantID, id)
	if err != nil {
		return err
	}
	if f.UploadedByIs(up) {
		return nil
	}
	if viaRecords {
		sc, err := h.records.Scope(r.Context(), p)
		if err != nil {
			return err
		}
		ok, err := h.records.FileLinked(r.Context(), sc, f.ID)
		if err != nil || ok {
			return err
		}
	}
	return apperr.New(apperr.NotFound, "file %s not found", id)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

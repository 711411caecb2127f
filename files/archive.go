package files

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// Exported is a confirmed file as a tenant export carries it, beside its
// bytes.
type Exported struct {
	ID         string    `json:"id" db:"id"`
	FileName   string    `json:"fileName" db:"file_name"`
	MimeType   string    `json:"mimeType" db:"mime_type"`
	SizeBytes  int64     `json:"sizeBytes" db:"size_bytes"`
	EntityName *string   `json:"entityName,omitempty" db:"entity_name"`
	EntityID   *string   `json:"entityId,omitempty" db:"entity_id"`
	FieldName  *string   `json:"fieldName,omitempty" db:"field_name"`
	CreatedAt  time.Time `json:"createdAt" db:"created_at"`
	StorageKey string    `json:"-" db:"storage_key"`
}

// Export calls each with every confirmed file of the tenant, by id, read
// in q (the export's snapshot) a page at a time.
func Export(ctx context.Context, q sqlx.QueryerContext, tenantID string, each func(Exported) error) error {
	after := "00000000-0000-0000-0000-000000000000"
	for {
		var page []Exported
		if err := sqlx.SelectContext(ctx, q, &page, `SELECT id, file_name, mime_type, size_bytes, entity_name, entity_id, field_name, created_at, storage_key
			FROM dds.files WHERE tenant_id = $1 AND status = 'confirmed' AND id > $2 ORDER BY id LIMIT 500`, tenantID, after); err != nil {
			return apperr.Wrap(err, "export files")
		}
		for _, f := range page {
			if err := each(f); err != nil {
				return err
			}
		}
		if len(page) < 500 {
			return nil
		}
		after = page[len(page)-1].ID
	}
}

// StorageKey is where the bytes of a tenant's file are stored.
func StorageKey(tenantID, fileID string) string { return tenantID + "/" + fileID }

// Restore records an imported file, confirmed, whose bytes are stored
// under StorageKey(tenantID, f.ID) already. It keeps the file's id, which
// the tenant's records refer to; an id taken in this deployment (the
// exported tenant still lives here) is a conflict.
func Restore(ctx context.Context, d *sqlx.DB, tenantID string, f Exported) error {
	_, err := d.ExecContext(ctx, `INSERT INTO dds.files (id, tenant_id, file_name, mime_type, size_bytes, entity_name, entity_id, field_name,
		status, storage_key, upload_expires_at, requested_at, created_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'confirmed', $9, $10, $10, $10)
		ON CONFLICT (id) DO NOTHING`,
		f.ID, tenantID, f.FileName, f.MimeType, f.SizeBytes, f.EntityName, f.EntityID, f.FieldName, StorageKey(tenantID, f.ID), f.CreatedAt)
	if err != nil {
		return apperr.Wrap(err, "restore file %s", f.ID)
	}
	var owner string
	if err := d.GetContext(ctx, &owner, `SELECT tenant_id FROM dds.files WHERE id = $1`, f.ID); err != nil {
		return apperr.Wrap(err, "restore file %s", f.ID)
	}
	if owner != tenantID {
		return apperr.New(apperr.Conflict, "file %s exists in this deployment already (its tenant was exported from here and still exists): delete it first or import elsewhere", f.ID)
	}
	return nil
}

// CountConfirmed is the number of confirmed files of the tenant, read in q.
func CountConfirmed(ctx context.Context, q sqlx.QueryerContext, tenantID string) (int64, error) {
	var n int64
	if err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM dds.files WHERE tenant_id = $1 AND status = 'confirmed'`, tenantID); err != nil {
		return 0, apperr.Wrap(err, "count files")
	}
	return n, nil
}

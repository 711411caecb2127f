package lifecycle

import (
	"context"
	"encoding/json"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/storage"
)

// ArchiveStore is the file storage the tenant's files and the archives
// live in; exports also need it to be a storage.Putter (both drivers are).
type ArchiveStore = storage.Driver

// archiveURLTTL is how long an archive's download or upload URL is valid.
const archiveURLTTL = time.Hour

// purgeArchives removes the export archives of a tenant (objects, then
// rows); idempotent.
func purgeArchives(ctx context.Context, d *sqlx.DB, store ArchiveStore, tenantID string) (int64, error) {
	var rows []struct {
		ID  string `db:"id"`
		Key string `db:"storage_key"`
	}
	if err := d.SelectContext(ctx, &rows, `SELECT id, storage_key FROM dds.tenant_archives WHERE tenant_id = $1`, tenantID); err != nil {
		return 0, apperr.Wrap(err, "list the tenant's archives")
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		if err := store.Delete(ctx, r.Key); err != nil {
			return 0, apperr.Wrap(err, "delete archive %s", r.ID)
		}
		ids = append(ids, r.ID)
	}
	if _, err := d.ExecContext(ctx, `DELETE FROM dds.tenant_archives WHERE id = ANY($1::uuid[])`, ids); err != nil {
		return 0, apperr.Wrap(err, "delete the tenant's archive rows")
	}
	return int64(len(rows)), nil
}

// withDownload adds a fresh download URL to the result of a succeeded
// export (result.archive.downloadUrl, result.archive.expiresAt).
func (s *Service) withDownload(ctx context.Context, j *Job) (*Job, error) {
	if j.Type != TypeExport || j.Status != StatusSucceeded || s.archive == nil || len(j.Result) == 0 {
		return j, nil
	}
	var res map[string]any
	if err := json.Unmarshal(j.Result, &res); err != nil {
		return nil, apperr.Wrap(err, "decode job result")
	}
	arch, _ := res["archive"].(map[string]any)
	id, _ := arch["id"].(string)
	if id == "" {
		return j, nil
	}
	var key string
	if err := s.db.GetContext(ctx, &key, `SELECT storage_key FROM dds.tenant_archives WHERE id = $1`, id); err != nil {
		return j, nil //nolint:nilerr // the archive is gone (its tenant was deleted): the result says what it was
	}
	exp := time.Now().Add(archiveURLTTL).UTC().Truncate(time.Second)
	url, err := s.archive.PresignGet(ctx, key, "tenant-"+id+".zip", "application/zip", archiveURLTTL)
	if err != nil {
		return nil, apperr.Wrap(err, "sign the archive's URL")
	}
	arch["downloadUrl"], arch["expiresAt"] = url, exp
	b, err := json.Marshal(res)
	if err != nil {
		return nil, apperr.Wrap(err, "encode job result")
	}
	j.Result = b
	return j, nil
}

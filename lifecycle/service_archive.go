package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/storage"
)

// maxArchiveBytes bounds an uploaded archive (1 TiB).
const maxArchiveBytes = 1 << 40

// Export starts an export of a tenant (not one being deleted).
func (s *Service) Export(ctx context.Context, tenantID string) (*Job, error) {
	if s.archive == nil {
		return nil, apperr.New(apperr.Unavailable, "this server has no file storage for archives")
	}
	if _, err := uuid.Parse(tenantID); err != nil {
		return nil, tenantNotFound(tenantID)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, apperr.Wrap(err, "begin")
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	deletedAt, err := lockTenant(ctx, tx, tenantID, "SHARE")
	if err != nil {
		return nil, err
	}
	if deletedAt != nil {
		return nil, apperr.New(apperr.Conflict, "tenant %s is being deleted", tenantID)
	}
	j, err := s.insertJob(ctx, tx, &tenantID, TypeExport, nil, 0)
	if err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, apperr.Wrap(err, "commit")
	}
	return j, s.start(ctx, j)
}

// Upload is where to PUT an archive to import.
type Upload struct {
	FileID    string            `json:"fileId"`
	UploadURL string            `json:"uploadUrl"`
	Headers   map[string]string `json:"headers"`
	ExpiresAt time.Time         `json:"expiresAt"`
}

// NewUpload records an archive to be uploaded (sizeBytes bytes of
// application/zip) and signs its upload URL.
func (s *Service) NewUpload(ctx context.Context, sizeBytes *int64) (*Upload, error) {
	if s.archive == nil {
		return nil, apperr.New(apperr.Unavailable, "this server has no file storage for archives")
	}
	if sizeBytes == nil || *sizeBytes < 1 || *sizeBytes > maxArchiveBytes {
		return nil, apperr.Field("sizeBytes", "is required: the archive's size, from 1 to %d bytes", int64(maxArchiveBytes))
	}
	id := uuid.Must(uuid.NewV7()).String()
	exp := time.Now().Add(archiveURLTTL).UTC().Truncate(time.Second)
	url, err := s.archive.PresignPut(ctx, archiveKey(id), "application/zip", *sizeBytes, archiveURLTTL)
	if err != nil {
		return nil, apperr.Wrap(err, "sign the upload URL")
	}
	if _, err := s.db.ExecContext(ctx, `INSERT INTO dds.tenant_archives (id, source, storage_key, size_bytes) VALUES ($1, 'upload', $2, $3)`,
		id, archiveKey(id), *sizeBytes); err != nil {
		return nil, apperr.Wrap(err, "record the archive")
	}
	return &Upload{FileID: id, UploadURL: url, Headers: storage.PutHeaders("application/zip"), ExpiresAt: exp}, nil
}

// Import starts the import of an archive (an export of this deployment,
// or one uploaded through NewUpload) as a new tenant, named name or as the
// exported one was. The job's tenantId is the new tenant's id.
func (s *Service) Import(ctx context.Context, spec ImportSpec) (*Job, error) {
	if s.archive == nil {
		return nil, apperr.New(apperr.Unavailable, "this server has no file storage for archives")
	}
	if _, err := uuid.Parse(spec.FileID); err != nil {
		return nil, apperr.Field("fileId", "is required: the id of an exported or uploaded archive")
	}
	if len(spec.Name) > 200 {
		return nil, apperr.Field("name", "is at most 200 characters")
	}
	var a struct {
		Key    string `db:"storage_key"`
		Status string `db:"status"`
		Size   *int64 `db:"size_bytes"`
	}
	err := s.db.GetContext(ctx, &a, `SELECT storage_key, status, size_bytes FROM dds.tenant_archives WHERE id = $1`, spec.FileID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "archive %q not found", spec.FileID)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "load archive")
	}
	if a.Status != "ready" {
		info, err := s.archive.Head(ctx, a.Key)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, apperr.New(apperr.Conflict, "nothing was uploaded for archive %s: PUT it to its upload URL first", spec.FileID)
		}
		if err != nil {
			return nil, apperr.Wrap(err, "check the archive")
		}
		if a.Size != nil && info.Size != *a.Size {
			return nil, apperr.New(apperr.Conflict, "archive %s has %d bytes, not the %d announced", spec.FileID, info.Size, *a.Size)
		}
		if _, err := s.db.ExecContext(ctx, `UPDATE dds.tenant_archives SET status = 'ready' WHERE id = $1`, spec.FileID); err != nil {
			return nil, apperr.Wrap(err, "record the archive")
		}
	}
	tenantID := uuid.Must(uuid.NewV7()).String()
	j, err := s.insertJob(ctx, s.db, &tenantID, TypeImport, spec, 0)
	if err != nil {
		return nil, err
	}
	return j, s.start(ctx, j)
}

// revealOnce returns a succeeded import's result with the keys and webhook
// secrets it issued the first time it is read, and stores it without them
// (later reads say they were shown).
func (s *Service) revealOnce(ctx context.Context, j *Job) (*Job, error) {
	if j.Type != TypeImport || j.Status != StatusSucceeded || len(j.Result) == 0 {
		return j, nil
	}
	var res map[string]any
	if err := json.Unmarshal(j.Result, &res); err != nil {
		return nil, apperr.Wrap(err, "decode job result")
	}
	if shown, _ := res["secretsShown"].(bool); shown {
		return j, nil
	}
	redacted := stripSecrets(res)
	redacted["secretsShown"] = true
	b, err := json.Marshal(redacted)
	if err != nil {
		return nil, apperr.Wrap(err, "encode job result")
	}
	// Only the reader whose update finds them unshown sees the secrets.
	r, err := s.db.ExecContext(ctx, `UPDATE dds.tenant_jobs SET result = $2 WHERE id = $1 AND NOT coalesce((result->>'secretsShown')::boolean, true)`, j.ID, b)
	if err != nil {
		return nil, apperr.Wrap(err, "record that the secrets were shown")
	}
	if n, _ := r.RowsAffected(); n == 0 {
		j.Result = b
	}
	return j, nil
}

// stripSecrets is an import result without the keys and secrets it issued.
func stripSecrets(res map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range res {
		out[k] = v
	}
	for _, sec := range []string{"apiKeys", "webhooks"} {
		list, ok := res[sec].([]any)
		if !ok {
			continue
		}
		items := make([]any, 0, len(list))
		for _, it := range list {
			m, _ := it.(map[string]any)
			c := map[string]any{}
			for k, v := range m {
				if k != "key" && k != "signingSecret" {
					c[k] = v
				}
			}
			items = append(items, c)
		}
		out[sec] = items
	}
	return out
}

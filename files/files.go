// Package files owns DDS's files: the control-plane table dds.files and its
// states (every statement on it is here: the service's and the lifecycle
// activities'), presigned upload and download URLs from the storage driver,
// and the upload lifecycle on Temporal: the workflows (workflow.go: a
// FileUpload workflow per file, ID = file id, confirmed through a workflow
// Update; a FileDelete workflow removes objects durably), their activities
// (lifecycle.go) and their registration with a worker (Register). Every
// query is scoped to the calling tenant: another tenant's file id is
// NOT_FOUND. It also exports the check the records layer applies to FILE
// fields (VerifyConfirmed).
package files

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/storage"
)

// MaxSizeBytes is the largest file accepted (100 MB, docs/files.md).
const MaxSizeBytes = 100 << 20

// Storage is what the service needs from a storage driver.
type Storage interface {
	PresignPut(ctx context.Context, key, contentType string, size int64, ttl time.Duration) (string, error)
	PresignGet(ctx context.Context, key, fileName, contentType string, ttl time.Duration) (string, error)
}

// Options configure the service.
type Options struct {
	TaskQueue string        // Temporal task queue of the worker ("dds")
	URLTTL    time.Duration // lifetime of presigned URLs (default 15m)
	Grace     time.Duration // after URL expiry before an unconfirmed upload expires (default 10m)
	Log       *slog.Logger
}

// OptionsFrom maps the process configuration to service options.
func OptionsFrom(c *config.Config, log *slog.Logger) Options {
	return Options{TaskQueue: c.TemporalTaskQueue, URLTTL: c.FileStorageURLTTL, Grace: c.FileUploadGrace, Log: log}
}

// Service implements the file API.
type Service struct {
	db    *sqlx.DB
	store Storage
	tc    client.Client
	opt   Options
	now   func() time.Time
}

// New builds the service.
func New(db *sqlx.DB, store Storage, tc client.Client, opt Options) *Service {
	if opt.TaskQueue == "" {
		opt.TaskQueue = "dds"
	}
	if opt.URLTTL <= 0 {
		opt.URLTTL = 15 * time.Minute
	}
	if opt.Grace <= 0 {
		opt.Grace = 10 * time.Minute
	}
	if opt.Log == nil {
		opt.Log = slog.Default()
	}
	return &Service{db: db, store: store, tc: tc, opt: opt, now: time.Now}
}

// File is the metadata of one file (docs/files.md). CreatedAt is the
// confirmation time and null until then; Status is one of pending,
// confirmed, expired.
type File struct {
	ID          string     `json:"id" db:"id"`
	TenantID    string     `json:"tenantId" db:"tenant_id"`
	FileName    string     `json:"fileName" db:"file_name"`
	MimeType    string     `json:"mimeType" db:"mime_type"`
	SizeBytes   int64      `json:"sizeBytes" db:"size_bytes"`
	EntityName  *string    `json:"entityName,omitempty" db:"entity_name"`
	EntityID    *string    `json:"entityId,omitempty" db:"entity_id"`
	FieldName   *string    `json:"fieldName,omitempty" db:"field_name"`
	Status      string     `json:"status" db:"status"`
	CreatedAt   *time.Time `json:"createdAt" db:"created_at"`
	RequestedAt time.Time  `json:"requestedAt" db:"requested_at"`
	StorageKey  string     `json:"-" db:"storage_key"`
	UploadExp   time.Time  `json:"-" db:"upload_expires_at"`
	// UploadedBy is who requested the upload when it was a principal
	// under row rules (UploadRequest.Uploader), else nil.
	UploadedBy *string `json:"-" db:"uploaded_by"`
}

const fileCols = `id, tenant_id, file_name, mime_type, size_bytes, entity_name, entity_id, field_name,
	status, created_at, requested_at, storage_key, upload_expires_at, uploaded_by`

// UploadRequest is the body of POST /api/v1/files/upload-url.
type UploadRequest struct {
	FileName   string  `json:"fileName"`
	MimeType   string  `json:"mimeType"`
	SizeBytes  *int64  `json:"sizeBytes"`
	EntityName *string `json:"entityName,omitempty"`
	EntityID   *string `json:"entityId,omitempty"`
	FieldName  *string `json:"fieldName,omitempty"`
	// Uploader names a principal under row rules ("user:<id>",
	// "key:<id>"), who alone reaches the file until a record links it
	// (docs/files.md, "Files under rules"); "" for others. Set by the
	// server, never by the client.
	Uploader string `json:"-"`
}

// UploadedByIs reports whether the file was uploaded by uploader (a
// non-empty UploadRequest.Uploader).
func (f *File) UploadedByIs(uploader string) bool {
	return uploader != "" && f.UploadedBy != nil && *f.UploadedBy == uploader
}

// UploadTicket answers an upload request.
type UploadTicket struct {
	FileID    string    `json:"fileId"`
	UploadURL string    `json:"uploadUrl"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Headers the PUT must carry (they are bound by the signature).
	Headers map[string]string `json:"headers"`
}

func (r *UploadRequest) validate() error {
	var errs []apperr.FieldError
	add := func(f, m string) { errs = append(errs, apperr.FieldError{Field: f, Message: m}) }
	switch name := r.FileName; {
	case strings.TrimSpace(name) == "":
		add("fileName", "is required")
	case len(name) > 255:
		add("fileName", "must be at most 255 bytes")
	case !utf8.ValidString(name) || strings.ContainsAny(name, `/\`) || strings.IndexFunc(name, unicode.IsControl) >= 0:
		add("fileName", "must be a file name without path separators or control characters")
	}
	if r.MimeType == "" {
		add("mimeType", "is required")
	} else if mt, _, err := mime.ParseMediaType(r.MimeType); err != nil || !strings.Contains(mt, "/") || len(r.MimeType) > 255 {
		add("mimeType", "must be a media type such as application/pdf")
	}
	switch {
	case r.SizeBytes == nil:
		add("sizeBytes", "is required")
	case *r.SizeBytes < 1:
		add("sizeBytes", "must be at least 1")
	case *r.SizeBytes > MaxSizeBytes:
		add("sizeBytes", "must be at most 100 MB (104857600 bytes)")
	}
	if r.EntityName != nil && !schema.ValidIdent(*r.EntityName) {
		add("entityName", "must be an entity name")
	}
	if r.FieldName != nil && !schema.ValidIdent(*r.FieldName) {
		add("fieldName", "must be a field name")
	}
	if r.EntityID != nil && (*r.EntityID == "" || len(*r.EntityID) > 128) {
		add("entityId", "must be a non-empty id of at most 128 characters")
	}
	if e := apperr.Fields(errs); e != nil {
		return e
	}
	return nil
}

// RequestUpload records a pending file, starts its upload workflow and
// returns the presigned PUT URL.
func (s *Service) RequestUpload(ctx context.Context, tenantID string, req UploadRequest) (*UploadTicket, error) {
	if err := req.validate(); err != nil {
		return nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	key := tenantID + "/" + id
	expires := s.now().Add(s.opt.URLTTL).Truncate(time.Second)
	url, err := s.store.PresignPut(ctx, key, req.MimeType, *req.SizeBytes, time.Until(expires))
	if err != nil {
		return nil, apperr.Wrap(err, "could not sign the upload URL")
	}
	_, err = s.db.ExecContext(ctx, `INSERT INTO dds.files (id, tenant_id, file_name, mime_type, size_bytes,
		entity_name, entity_id, field_name, storage_key, upload_expires_at, uploaded_by)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, NULLIF($11, ''))`,
		id, tenantID, req.FileName, req.MimeType, *req.SizeBytes, req.EntityName, req.EntityID, req.FieldName, key, expires, req.Uploader)
	if err != nil {
		return nil, apperr.Wrap(err, "could not record the file")
	}
	if err := s.startUpload(ctx, UploadInput{TenantID: tenantID, FileID: id, ExpiresAt: expires, Grace: s.opt.Grace}); err != nil {
		// Nothing can have been uploaded yet: drop the row and report.
		if _, derr := s.db.ExecContext(context.WithoutCancel(ctx), `DELETE FROM dds.files WHERE id = $1 AND tenant_id = $2`, id, tenantID); derr != nil {
			s.opt.Log.Error("drop file row after failed upload start; the sweeper will expire it", "file", id, "err", derr)
		}
		s.opt.Log.Error("start upload workflow", "file", id, "err", err)
		return nil, &apperr.Error{Code: apperr.Unavailable, Message: "the file service is unavailable; retry later", Err: err}
	}
	return &UploadTicket{FileID: id, UploadURL: url, ExpiresAt: expires,
		Headers: storage.PutHeaders(req.MimeType)}, nil
}

func notFound(id string) error { return apperr.New(apperr.NotFound, "file %s not found", id) }

// get loads a live (not deleted) file of the tenant.
func (s *Service) get(ctx context.Context, tenantID, id string) (*File, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, notFound(id)
	}
	var f File
	err := s.db.GetContext(ctx, &f, `SELECT `+fileCols+` FROM dds.files
		WHERE id = $1 AND tenant_id = $2 AND status <> 'deleted'`, id, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, notFound(id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "could not load the file")
	}
	return &f, nil
}

// Get returns a file's metadata.
func (s *Service) Get(ctx context.Context, tenantID, id string) (*File, error) {
	return s.get(ctx, tenantID, id)
}

// Confirm verifies the uploaded object (through the upload workflow's
// confirm Update) and returns the confirmed file. CONFLICT when nothing was
// uploaded, the object differs from the request, or the upload expired.
func (s *Service) Confirm(ctx context.Context, tenantID, id string) (*File, error) {
	f, err := s.get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	switch f.Status {
	case "confirmed":
		return f, nil
	case "expired":
		return nil, apperr.New(apperr.Conflict, "the upload of file %s has expired; request a new upload URL", id)
	}
	err = s.confirmUpdate(ctx, id)
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		// The lifecycle workflow is gone (a dev server restarted without
		// persistence): start it again for the same expiry and retry.
		err = s.startUpload(ctx, UploadInput{TenantID: tenantID, FileID: id, ExpiresAt: f.UploadExp, Grace: s.opt.Grace})
		if err == nil {
			err = s.confirmUpdate(ctx, id)
		}
	}
	if err != nil {
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			switch ae.Type() {
			case ErrTypeNotUploaded:
				return nil, apperr.New(apperr.Conflict, "nothing was uploaded for file %s: PUT the bytes to the upload URL first", id)
			case ErrTypeMismatch:
				return nil, apperr.New(apperr.Conflict, "the uploaded object does not match the request: %s", ae.Message())
			case ErrTypeGone, ErrTypeUploadExpired:
				return nil, apperr.New(apperr.Conflict, "the upload of file %s has expired; request a new upload URL", id)
			}
		}
		// The workflow may have completed meanwhile: the row decides.
		if g, gerr := s.get(ctx, tenantID, id); gerr == nil {
			switch g.Status {
			case "confirmed":
				return g, nil
			case "expired":
				return nil, apperr.New(apperr.Conflict, "the upload of file %s has expired; request a new upload URL", id)
			}
		}
		s.opt.Log.Error("confirm upload", "file", id, "err", err)
		return nil, &apperr.Error{Code: apperr.Unavailable, Message: "could not confirm the upload; retry later", Err: err}
	}
	return s.get(ctx, tenantID, id)
}

func (s *Service) confirmUpdate(ctx context.Context, id string) error {
	h, err := s.tc.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID: id, UpdateName: ConfirmUpdate, WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return err
	}
	return h.Get(ctx, nil)
}

// ListFilter selects files. Status defaults to confirmed ("all" lists
// every live file). UploadedBy, when set, keeps only that uploader's
// files (a principal under rules lists its own uploads).
type ListFilter struct {
	EntityName, EntityID, FieldName, MimeType, Status string
	UploadedBy                                        string
	Limit, Offset                                     int
}

// List limits.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// ListResult is the body of GET /api/v1/files.
type ListResult struct {
	Files  []File `json:"files"`
	Total  int    `json:"total"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
}

// List returns the tenant's files, newest first.
func (s *Service) List(ctx context.Context, tenantID string, f ListFilter) (*ListResult, error) {
	if f.Limit == 0 {
		f.Limit = DefaultLimit
	}
	var errs []apperr.FieldError
	if f.Limit < 1 || f.Limit > MaxLimit {
		errs = append(errs, apperr.FieldError{Field: "limit", Message: fmt.Sprintf("must be between 1 and %d", MaxLimit)})
	}
	if f.Offset < 0 {
		errs = append(errs, apperr.FieldError{Field: "offset", Message: "must not be negative"})
	}
	where := []string{"tenant_id = $1"}
	args := []any{tenantID}
	switch f.Status {
	case "", "confirmed":
		where = append(where, "status = 'confirmed'")
	case "pending", "expired":
		args = append(args, f.Status)
		where = append(where, fmt.Sprintf("status = $%d", len(args)))
	case "all":
		where = append(where, "status <> 'deleted'")
	default:
		errs = append(errs, apperr.FieldError{Field: "status", Message: "must be confirmed, pending, expired or all"})
	}
	if e := apperr.Fields(errs); e != nil {
		return nil, e
	}
	for _, c := range []struct{ col, v string }{
		{"entity_name", f.EntityName}, {"entity_id", f.EntityID}, {"field_name", f.FieldName}, {"mime_type", f.MimeType},
		{"uploaded_by", f.UploadedBy},
	} {
		if c.v != "" {
			args = append(args, c.v)
			where = append(where, fmt.Sprintf("%s = $%d", c.col, len(args)))
		}
	}
	args = append(args, f.Limit, f.Offset)
	q := `SELECT ` + fileCols + `, count(*) OVER () AS total FROM dds.files WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY requested_at DESC, id DESC LIMIT $%d OFFSET $%d`, len(args)-1, len(args))
	var rows []struct {
		File
		Total int `db:"total"`
	}
	if err := s.db.SelectContext(ctx, &rows, q, args...); err != nil {
		return nil, apperr.Wrap(err, "could not list files")
	}
	res := &ListResult{Files: make([]File, 0, len(rows)), Limit: f.Limit, Offset: f.Offset}
	for _, r := range rows {
		res.Files = append(res.Files, r.File)
		res.Total = r.Total
	}
	if len(rows) == 0 && f.Offset > 0 {
		// Past the end: count separately so total stays meaningful.
		cq := `SELECT count(*) FROM dds.files WHERE ` + strings.Join(where, " AND ")
		if err := s.db.GetContext(ctx, &res.Total, cq, args[:len(args)-2]...); err != nil {
			return nil, apperr.Wrap(err, "could not count files")
		}
	}
	return res, nil
}

// Download is the body of GET /api/v1/files/{id}/download-url.
type Download struct {
	URL       string    `json:"url"`
	FileName  string    `json:"fileName"`
	MimeType  string    `json:"mimeType"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// DownloadURL presigns a GET of a confirmed file, carrying its original
// name. CONFLICT for a file that is not confirmed.
func (s *Service) DownloadURL(ctx context.Context, tenantID, id string) (*Download, error) {
	f, err := s.get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	if f.Status != "confirmed" {
		return nil, apperr.New(apperr.Conflict, "file %s is %s, not confirmed", id, f.Status)
	}
	expires := s.now().Add(s.opt.URLTTL).Truncate(time.Second)
	url, err := s.store.PresignGet(ctx, f.StorageKey, f.FileName, f.MimeType, time.Until(expires))
	if err != nil {
		return nil, apperr.Wrap(err, "could not sign the download URL")
	}
	return &Download{URL: url, FileName: f.FileName, MimeType: f.MimeType, ExpiresAt: expires}, nil
}

// Delete removes a file: its metadata disappears at once and its object is
// removed by a FileDelete workflow that retries until the store answers.
// The workflow is started before the row changes, so a failure leaves the
// file intact and the caller may retry.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	if _, err := s.get(ctx, tenantID, id); err != nil {
		return err
	}
	if err := s.startDelete(ctx, tenantID, id); err != nil {
		s.opt.Log.Error("start delete workflow", "file", id, "err", err)
		return &apperr.Error{Code: apperr.Unavailable, Message: "the file service is unavailable; retry later", Err: err}
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE dds.files SET status = 'deleted', deleted_at = coalesce(deleted_at, now())
		WHERE id = $1 AND tenant_id = $2`, id, tenantID); err != nil {
		// The workflow marks the row deleted as well.
		return apperr.Wrap(err, "could not delete the file")
	}
	return nil
}

// startUpload starts (or finds running) the lifecycle workflow of an
// upload; its ID is the file id.
func (s *Service) startUpload(ctx context.Context, in UploadInput) error {
	_, err := s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: in.FileID, TaskQueue: s.opt.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, UploadWorkflowName, in)
	return err
}

func (s *Service) startDelete(ctx context.Context, tenantID, id string) error {
	_, err := s.tc.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID: DeleteWorkflowID(id), TaskQueue: s.opt.TaskQueue,
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
	}, DeleteWorkflowName, DeleteInput{TenantID: tenantID, FileID: id})
	return err
}

// MarkDeleted marks files deleted inside the caller's transaction (the
// records layer calls it when it deletes or overwrites an entity whose FILE
// field held them). Their objects are removed after commit by PurgeDeleted
// or, at the latest, by the sweeper (SweepLoop). Unknown ids are ignored.
func MarkDeleted(ctx context.Context, tx sqlx.ExecerContext, tenantID string, ids []string) error {
	valid := validIDs(ids)
	if len(valid) == 0 {
		return nil
	}
	_, err := tx.ExecContext(ctx, `UPDATE dds.files SET status = 'deleted', deleted_at = coalesce(deleted_at, now())
		WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status <> 'deleted'`, tenantID, valid)
	if err != nil {
		return apperr.Wrap(err, "could not delete files")
	}
	return nil
}

// MarkDeleted is the package-level MarkDeleted, as a method so the records
// layer can take the service through one small interface.
func (s *Service) MarkDeleted(ctx context.Context, tx sqlx.ExecerContext, tenantID string, ids []string) error {
	return MarkDeleted(ctx, tx, tenantID, ids)
}

// PurgeDeleted starts the delete workflows of files already marked deleted
// (after MarkDeleted committed). Failures are left to the sweeper.
func (s *Service) PurgeDeleted(ctx context.Context, tenantID string, ids []string) {
	for _, id := range validIDs(ids) {
		if err := s.startDelete(ctx, tenantID, id); err != nil {
			s.opt.Log.Warn("start delete workflow; the sweeper will retry", "file", id, "err", err)
		}
	}
}

// Sweep starts delete workflows for files marked deleted more than a minute
// ago whose objects were not purged, and for pending uploads whose
// lifecycle workflow never started. Returns how many it handed over.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	var rows []struct {
		ID     string    `db:"id"`
		Tenant string    `db:"tenant_id"`
		Status string    `db:"status"`
		Exp    time.Time `db:"upload_expires_at"`
	}
	err := s.db.SelectContext(ctx, &rows, `SELECT id, tenant_id, status, upload_expires_at FROM dds.files
		WHERE (status = 'deleted' AND purged_at IS NULL AND deleted_at < now() - interval '1 minute')
		   OR (status IN ('pending', 'uploaded') AND upload_expires_at < now() - $1::interval)
		ORDER BY requested_at LIMIT 500`, fmt.Sprintf("%d seconds", int((s.opt.Grace+time.Hour).Seconds())))
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range rows {
		if r.Status == "deleted" {
			err = s.startDelete(ctx, r.Tenant, r.ID)
		} else {
			// A pending upload long past its expiry has lost its workflow
			// (or it never started): start one that expires it at once.
			err = s.startUpload(ctx, UploadInput{TenantID: r.Tenant, FileID: r.ID, ExpiresAt: r.Exp})
		}
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// SweepLoop runs Sweep every five minutes until ctx ends (a worker loop).
func (s *Service) SweepLoop(ctx context.Context) error {
	t := time.NewTicker(5 * time.Minute)
	defer t.Stop()
	for {
		if n, err := s.Sweep(ctx); err != nil {
			s.opt.Log.Warn("file sweep", "err", err)
		} else if n > 0 {
			s.opt.Log.Info("file sweep handed over files", "count", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func validIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		if _, err := uuid.Parse(id); err == nil {
			out = append(out, id)
		}
	}
	return out
}

// VerifyConfirmed checks FILE-field values: every id must name a confirmed
// file of the tenant. Otherwise it returns a VALIDATION_ERROR whose message
// names the first bad id and whose Details hold one entry per bad id
// (Field = the file id; the records layer may rename it to the entity
// field). Empty ids are ignored.
func (s *Service) VerifyConfirmed(ctx context.Context, tenantID string, ids []string) error {
	return VerifyConfirmed(ctx, s.db, tenantID, ids)
}

// VerifyConfirmed is the check of Service.VerifyConfirmed on any querier
// (a *sqlx.DB or the records layer's *sqlx.Tx).
func VerifyConfirmed(ctx context.Context, q sqlx.QueryerContext, tenantID string, ids []string) error {
	var check []string
	for _, id := range ids {
		if id != "" {
			check = append(check, id)
		}
	}
	if len(check) == 0 {
		return nil
	}
	valid := validIDs(check)
	ok := map[string]bool{}
	if len(valid) > 0 {
		var found []string
		if err := sqlx.SelectContext(ctx, q, &found, `SELECT id::text FROM dds.files
			WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status = 'confirmed'`, tenantID, valid); err != nil {
			return apperr.Wrap(err, "could not check files")
		}
		for _, id := range found {
			ok[id] = true
		}
	}
	var bad []apperr.FieldError
	for _, id := range check {
		norm := id
		if u, err := uuid.Parse(id); err == nil {
			norm = u.String()
		}
		if !ok[norm] {
			bad = append(bad, apperr.FieldError{Field: id, Message: "file does not exist, is not confirmed, or belongs to another tenant"})
		}
	}
	if len(bad) == 0 {
		return nil
	}
	e := apperr.Fields(bad)
	e.Message = fmt.Sprintf("file %s does not exist, is not confirmed, or belongs to another tenant", bad[0].Field)
	return e
}

// GetMany returns the metadata of the tenant's live files among ids, keyed
// by id (for ?expand=files and GraphQL). Unknown ids are absent.
func (s *Service) GetMany(ctx context.Context, tenantID string, ids []string) (map[string]File, error) {
	out := map[string]File{}
	valid := validIDs(ids)
	if len(valid) == 0 {
		return out, nil
	}
	var rows []File
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+fileCols+` FROM dds.files
		WHERE tenant_id = $1 AND id = ANY($2::uuid[]) AND status <> 'deleted'`, tenantID, valid); err != nil {
		return nil, apperr.Wrap(err, "could not load files")
	}
	for _, f := range rows {
		out[f.ID] = f
	}
	return out, nil
}

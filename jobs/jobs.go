// Package jobs owns batch jobs: work larger than one request (an import of
// a confirmed NDJSON or CSV file, an update or delete by filter) that
// commits atomically. It owns dds.jobs (one row per job: status, progress,
// result) and the job logic the worker's activities run: streaming an
// import file into an UNLOGGED staging table with COPY, validating the
// staged rows in SQL, and applying a job in one short transaction that also
// writes the records' outbox events and marks the job applied, so a retried
// apply never writes twice. The statements on the tenant's tables (the
// count, the update or delete by filter, the checks and the insert of the
// staged rows) are package records' (records/bulk.go): this package hands
// it plans and the apply transaction.
//
// It also owns each job's durable run: the Temporal workflow (workflow.go),
// its steps as activities (activities.go) and Register, which adds them to
// a worker; the Service starts and cancels runs through a Runner.
package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
)

// Job types.
const (
	TypeImport = "import"
	TypeUpdate = "update"
	TypeDelete = "delete"
)

// Job statuses.
const (
	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Import formats.
const (
	FormatNDJSON = "ndjson"
	FormatCSV    = "csv"
)

// MaxFailures is how many failed items a result lists (failureCount counts
// them all).
const MaxFailures = 100

// Spec is what a job was asked to do (the POST body minus type/entity).
type Spec struct {
	FileID     string         `json:"fileId,omitempty"`
	Format     string         `json:"format,omitempty"`
	Where      map[string]any `json:"where,omitempty"`
	Set        map[string]any `json:"set,omitempty"`
	All        bool           `json:"all,omitempty"`
	EmitEvents bool           `json:"emitEvents"`
}

// Progress is processed of total items (total is null until known).
type Progress struct {
	Processed int64  `json:"processed"`
	Total     *int64 `json:"total"`
}

// Result is shaped like a batch result: how many records were written, how
// many items failed, and the first MaxFailures of them.
type Result struct {
	SuccessCount int64                  `json:"successCount"`
	FailureCount int64                  `json:"failureCount"`
	Failed       []records.BatchFailure `json:"failed"`
}

// Job is the API's view of a job.
type Job struct {
	ID         string              `json:"id"`
	Type       string              `json:"type"`
	Entity     string              `json:"entity"`
	Status     string              `json:"status"`
	Progress   Progress            `json:"progress"`
	Result     *Result             `json:"result"`
	Error      *records.BatchError `json:"error"`
	Spec                           // what it was asked to do, its members inline
	CreatedAt  time.Time           `json:"createdAt"`
	StartedAt  *time.Time          `json:"startedAt"`
	FinishedAt *time.Time          `json:"finishedAt"`

	TenantID string `json:"-"`
	SchemaID string `json:"-"`
}

// Runner runs jobs durably: TemporalRunner in production; tests that run
// the workflow themselves start nothing.
type Runner interface {
	Start(ctx context.Context, j *Job) error
	Cancel(ctx context.Context, jobID string) error
}

// Service creates, reads and cancels jobs for the API.
type Service struct {
	db      *sqlx.DB
	records *records.Store
	runner  Runner
}

// NewService returns the service.
func NewService(db *sqlx.DB, rs *records.Store, runner Runner) *Service {
	return &Service{db: db, records: rs, runner: runner}
}

// Request is the body of POST /api/v1/jobs.
type Request struct {
	Type   string
	Entity string
	Spec
}

// DecodeRequest reads a job request from a decoded JSON body (numbers as
// json.Number), refusing unknown members.
func DecodeRequest(body map[string]any) (*Request, error) {
	var r Request
	r.EmitEvents = true
	var errs []apperr.FieldError
	bad := func(f, m string) { errs = append(errs, apperr.FieldError{Field: f, Message: m}) }
	str := func(k string) string {
		v, ok := body[k]
		if !ok || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad(k, "must be a string")
		}
		return s
	}
	obj := func(k string) map[string]any {
		v, ok := body[k]
		if !ok || v == nil {
			return nil
		}
		m, ok := v.(map[string]any)
		if !ok {
			bad(k, "must be an object")
		}
		return m
	}
	boolean := func(k string, def bool) bool {
		v, ok := body[k]
		if !ok || v == nil {
			return def
		}
		b, ok := v.(bool)
		if !ok {
			bad(k, "must be a boolean")
		}
		return b
	}
	r.Type, r.Entity = str("type"), str("entity")
	r.FileID, r.Format = str("fileId"), strings.ToLower(str("format"))
	r.Where, r.Set = obj("where"), obj("set")
	r.All, r.EmitEvents = boolean("all", false), boolean("emitEvents", true)
	allowed := map[string][]string{
		TypeImport: {"fileId", "format"},
		TypeUpdate: {"where", "set", "all"},
		TypeDelete: {"where", "all"},
	}
	switch r.Type {
	case TypeImport, TypeUpdate, TypeDelete:
		ok := map[string]bool{"type": true, "entity": true, "emitEvents": true}
		for _, k := range allowed[r.Type] {
			ok[k] = true
		}
		for k := range body {
			if !ok[k] {
				bad(k, fmt.Sprintf("is not a member of a %s job", r.Type))
			}
		}
	case "":
		bad("type", "is required (import, update or delete)")
	default:
		bad("type", "must be import, update or delete")
	}
	if r.Entity == "" {
		bad("entity", "is required")
	}
	switch r.Type {
	case TypeImport:
		if r.FileID == "" {
			bad("fileId", "is required (a confirmed file)")
		} else if _, err := uuid.Parse(r.FileID); err != nil {
			bad("fileId", "must be a file id")
		}
		if r.Format != FormatNDJSON && r.Format != FormatCSV {
			bad("format", "must be ndjson or csv")
		}
	case TypeUpdate, TypeDelete:
		if len(r.Where) == 0 && !r.All {
			bad("where", `must not be empty: give a filter, or "all": true to change every record`)
		}
		if r.Type == TypeUpdate && len(r.Set) == 0 {
			bad("set", "is required (an object of the fields to change)")
		}
	}
	if e := apperr.Fields(errs); e != nil {
		return nil, e
	}
	return &r, nil
}

// Op is the entity operation a job type needs a scope for.
func Op(jobType string) string {
	if jobType == TypeImport {
		return "create"
	}
	return jobType
}

// Create validates the request against the tenant's active schema, stores
// the job (queued) and starts its run. Whatever can be checked before the
// run is a 4xx here: unknown entity, a bad filter or set, a file that is
// not the tenant's confirmed file. p is who asks (the request's principal).
func (s *Service) Create(ctx context.Context, p *auth.Principal, r *Request) (*Job, error) {
	tenantID := p.TenantID
	sc, err := s.records.Scope(ctx, p)
	if err != nil {
		return nil, err
	}
	e, err := sc.Entity(r.Entity)
	if err != nil {
		return nil, err
	}
	switch r.Type {
	case TypeImport:
		if _, err := loadConfirmedFile(ctx, s.db, tenantID, r.FileID); err != nil {
			return nil, err
		}
		// Under rules, only a file the creator reaches (docs/files.md,
		// "Files under rules"); any other is not found, as another tenant's.
		if ok, err := s.records.FileReachable(ctx, sc, r.FileID); err != nil || !ok {
			if err == nil {
				err = apperr.New(apperr.NotFound, "file %s not found", r.FileID)
			}
			return nil, err
		}
	case TypeUpdate, TypeDelete:
		if _, err := parseWhere(sc, r.Entity, r.Where); err != nil {
			return nil, err
		}
		if r.Type == TypeUpdate {
			row, errs := records.Prepare(e, r.Set, records.Patch)
			for i := range errs {
				errs[i].Field = "set." + errs[i].Field
			}
			if err := apperr.Fields(errs); err != nil {
				return nil, err
			}
			if err := sc.CheckWritable(e.Name, r.Set); err != nil { // fields.write: principal.go
				return nil, err
			}
			if err := s.records.VerifyRowFiles(ctx, sc, row); err != nil {
				return nil, err
			}
		}
	}
	spec, err := encodeSpec(r.Spec, p) // principal.go
	if err != nil {
		return nil, err
	}
	id := uuid.Must(uuid.NewV7()).String()
	var row jobRow
	if err := s.db.GetContext(ctx, &row, `INSERT INTO dds.jobs (id, tenant_id, schema_id, type, entity, spec)
		VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+jobCols, id, tenantID, sc.Schema.ID, r.Type, r.Entity, spec); err != nil {
		return nil, apperr.Wrap(err, "could not store the job")
	}
	j, err := row.job()
	if err != nil {
		return nil, err
	}
	if err := s.runner.Start(ctx, j); err != nil {
		// Nothing ran: the job ends here, and says why.
		msg := records.BatchError{Code: apperr.Unavailable, Message: "the job could not be started: the worker service is unavailable"}
		if ferr := finish(ctx, s.db, id, StatusFailed, &msg, nil); ferr != nil {
			return nil, ferr
		}
		return nil, &apperr.Error{Code: apperr.Unavailable, Message: msg.Message, Err: err}
	}
	return j, nil
}

// jobRow is a dds.jobs row.
type jobRow struct {
	ID         string        `db:"id"`
	TenantID   string        `db:"tenant_id"`
	SchemaID   string        `db:"schema_id"`
	Type       string        `db:"type"`
	Entity     string        `db:"entity"`
	Spec       []byte        `db:"spec"`
	Status     string        `db:"status"`
	Processed  int64         `db:"processed"`
	Total      sql.NullInt64 `db:"total"`
	Result     []byte        `db:"result"`
	Error      []byte        `db:"error"`
	CreatedAt  time.Time     `db:"created_at"`
	StartedAt  *time.Time    `db:"started_at"`
	FinishedAt *time.Time    `db:"finished_at"`
}

const jobCols = `id, tenant_id, schema_id, type, entity, spec, status, processed, total, result, error, created_at, started_at, finished_at`

func (r *jobRow) job() (*Job, error) {
	j := &Job{ID: r.ID, TenantID: r.TenantID, SchemaID: r.SchemaID, Type: r.Type, Entity: r.Entity, Status: r.Status,
		Progress: Progress{Processed: r.Processed}, CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt}
	if r.Total.Valid {
		j.Progress.Total = &r.Total.Int64
	}
	spec, err := r.spec()
	if err != nil {
		return nil, apperr.Wrap(err, "decode job spec")
	}
	j.Spec = spec
	if len(r.Result) > 0 {
		j.Result = &Result{}
		if err := json.Unmarshal(r.Result, j.Result); err != nil {
			return nil, apperr.Wrap(err, "decode job result")
		}
	}
	if len(r.Error) > 0 {
		j.Error = &records.BatchError{}
		if err := json.Unmarshal(r.Error, j.Error); err != nil {
			return nil, apperr.Wrap(err, "decode job error")
		}
	}
	return j, nil
}

func (r *jobRow) spec() (Spec, error) {
	var spec Spec
	d := json.NewDecoder(strings.NewReader(string(r.Spec)))
	d.UseNumber()
	err := d.Decode(&spec)
	return spec, err
}

// Get returns a job of the tenant; another tenant's job is NOT_FOUND.
func (s *Service) Get(ctx context.Context, tenantID, id string) (*Job, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, apperr.New(apperr.NotFound, "job %q not found", id)
	}
	var r jobRow
	err := s.db.GetContext(ctx, &r, `SELECT `+jobCols+` FROM dds.jobs WHERE id = $1 AND tenant_id = $2`, id, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "job %q not found", id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "could not read the job")
	}
	return r.job()
}

// List limits.
const (
	DefaultLimit = 50
	MaxLimit     = 200
)

// ListResult is the body of GET /api/v1/jobs.
type ListResult struct {
	Jobs   []*Job `json:"jobs"`
	Limit  int    `json:"limit"`
	Offset int    `json:"offset"`
}

// List returns the tenant's jobs, newest first, optionally of one status.
func (s *Service) List(ctx context.Context, tenantID, status string, limit, offset int) (*ListResult, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	var errs []apperr.FieldError
	if limit < 1 || limit > MaxLimit {
		errs = append(errs, apperr.FieldError{Field: "limit", Message: fmt.Sprintf("must be between 1 and %d", MaxLimit)})
	}
	if offset < 0 {
		errs = append(errs, apperr.FieldError{Field: "offset", Message: "must not be negative"})
	}
	switch status {
	case "", StatusQueued, StatusRunning, StatusSucceeded, StatusFailed, StatusCancelled:
	default:
		errs = append(errs, apperr.FieldError{Field: "status", Message: "must be queued, running, succeeded, failed or cancelled"})
	}
	if e := apperr.Fields(errs); e != nil {
		return nil, e
	}
	var rows []jobRow
	err := s.db.SelectContext(ctx, &rows, `SELECT `+jobCols+` FROM dds.jobs WHERE tenant_id = $1 AND ($2 = '' OR status = $2)
		ORDER BY created_at DESC, id DESC LIMIT $3 OFFSET $4`, tenantID, status, limit, offset)
	if err != nil {
		return nil, apperr.Wrap(err, "could not list jobs")
	}
	res := &ListResult{Jobs: make([]*Job, 0, len(rows)), Limit: limit, Offset: offset}
	for i := range rows {
		j, err := rows[i].job()
		if err != nil {
			return nil, err
		}
		res.Jobs = append(res.Jobs, j)
	}
	return res, nil
}

// Cancel asks a queued or running job to stop. The flag is set under the
// job row's lock, which the apply transaction also takes: either the apply
// committed first (the job succeeded; CONFLICT here) or the apply sees the
// flag and writes nothing.
func (s *Service) Cancel(ctx context.Context, tenantID, id string) (*Job, error) {
	j, err := s.Get(ctx, tenantID, id)
	if err != nil {
		return nil, err
	}
	res, err := s.db.ExecContext(ctx, `UPDATE dds.jobs SET cancel_requested = true
		WHERE id = $1 AND tenant_id = $2 AND status IN ('queued', 'running')`, id, tenantID)
	if err != nil {
		return nil, apperr.Wrap(err, "could not cancel the job")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return nil, apperr.New(apperr.Conflict, "job %s has already %s", id, j.Status)
	}
	if err := s.runner.Cancel(ctx, id); err != nil {
		// The flag is set: the run stops at its next step at the latest.
		return nil, &apperr.Error{Code: apperr.Unavailable, Message: "the cancellation is recorded; the worker service did not answer", Err: err}
	}
	return s.Get(ctx, tenantID, id)
}

// fileRow is what an import needs of dds.files.
type fileRow struct {
	StorageKey string `db:"storage_key"`
	Status     string `db:"status"`
	Size       int64  `db:"size_bytes"`
}

// loadConfirmedFile reads a file of the tenant that an import may read:
// another tenant's or an unknown file is NOT_FOUND, one not confirmed a
// VALIDATION_ERROR naming fileId.
func loadConfirmedFile(ctx context.Context, q sqlx.QueryerContext, tenantID, id string) (*fileRow, error) {
	var f fileRow
	err := sqlx.GetContext(ctx, q, &f, `SELECT storage_key, status, size_bytes FROM dds.files
		WHERE id = $1 AND tenant_id = $2 AND status <> 'deleted'`, id, tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "file %s not found", id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "could not read the file")
	}
	if f.Status != "confirmed" {
		return nil, apperr.Field("fileId", "file %s is %s; an import needs a confirmed file", id, f.Status)
	}
	return &f, nil
}

// parseWhere parses a job's filter and checks it against entity.
func parseWhere(sc *records.Scope, entity string, where map[string]any) (query.Filter, error) {
	f, err := query.ParseWhere(where)
	if err != nil {
		return nil, err
	}
	if err := sc.CheckWhere(entity, f); err != nil {
		return nil, err
	}
	return f, nil
}

// finish moves a job that is not yet terminal to status, with its error
// and result, and reports whether it did.
func finish(ctx context.Context, q sqlx.ExecerContext, id, status string, jerr *records.BatchError, res *Result) error {
	var errJSON, resJSON []byte
	var err error
	if jerr != nil {
		if errJSON, err = json.Marshal(jerr); err != nil {
			return apperr.Wrap(err, "encode job error")
		}
	}
	if res != nil {
		if resJSON, err = json.Marshal(res); err != nil {
			return apperr.Wrap(err, "encode job result")
		}
	}
	_, err = q.ExecContext(ctx, `UPDATE dds.jobs SET status = $2, error = coalesce($3::jsonb, error),
		result = coalesce($4::jsonb, result), finished_at = now()
		WHERE id = $1 AND status IN ('queued', 'running')`, id, status, nullJSON(errJSON), nullJSON(resJSON))
	if err != nil {
		return apperr.Wrap(err, "could not finish the job")
	}
	return nil
}

func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

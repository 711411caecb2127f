// Package lifecycle owns the lifecycle of whole tenants after their
// creation: the operator's view of them (list, get), their delete (a
// durable job that removes everything a tenant has and marks it deleted,
// revoking its credentials, in the transaction that accepts it), and their
// export to an archive and import from one. It owns dds.tenant_jobs (the
// operator's jobs on tenants), dds.tenant_archives, the deleted_at mark on
// dds.tenants, the TenantDelete, TenantExport and TenantImport workflows
// with their activities, and Register, like webhook, files and jobs.
//
// What a tenant holds is removed, exported and imported through the
// packages that own it: records (its data tables), files (its files and
// their objects), outbox (its events), jobs (its batch jobs' workflows),
// auth (its keys), webhook (its webhooks); the tenant row's delete
// cascades to the control-plane rows that reference it.
package lifecycle

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
)

// Job types and statuses.
const (
	TypeDelete = "delete"
	TypeExport = "export"
	TypeImport = "import"

	StatusQueued    = "queued"
	StatusRunning   = "running"
	StatusSucceeded = "succeeded"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
)

// Tenant is a tenant as the operator sees it.
type Tenant struct {
	ID        string     `json:"id" db:"id"`
	Name      string     `json:"name" db:"name"`
	Status    string     `json:"status" db:"status"` // active | deleting
	CreatedAt time.Time  `json:"createdAt" db:"created_at"`
	DeletedAt *time.Time `json:"deletedAt,omitempty" db:"deleted_at"`
	// Counts of what it holds (GET /api/v1/tenants/{id} only).
	Schemas  *int64 `json:"schemas,omitempty" db:"schemas"`
	Keys     *int64 `json:"apiKeys,omitempty" db:"keys"`
	Webhooks *int64 `json:"webhooks,omitempty" db:"webhooks"`
	Files    *int64 `json:"files,omitempty" db:"files"`
}

// Progress is how far a job is: processed of total units (a delete counts
// steps; an export or import, records and files).
type Progress struct {
	Processed int64  `json:"processed"`
	Total     *int64 `json:"total"`
}

// JobError says why a job failed.
type JobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Job is an operator's job on a tenant.
type Job struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	TenantID   *string         `json:"tenantId"`
	Status     string          `json:"status"`
	Step       *string         `json:"step"`
	Progress   Progress        `json:"progress"`
	Result     json.RawMessage `json:"result"`
	Error      *JobError       `json:"error"`
	CreatedAt  time.Time       `json:"createdAt"`
	StartedAt  *time.Time      `json:"startedAt"`
	FinishedAt *time.Time      `json:"finishedAt"`

	spec json.RawMessage
}

// Runner starts a job's workflow (TemporalRunner in production); starting
// one already started is a no-op.
type Runner interface {
	Start(ctx context.Context, j *Job) error
}

// Service is the operator's API on tenants.
type Service struct {
	db      *sqlx.DB
	keys    *auth.Keys
	revoked func(keyID string)
	runner  Runner
	archive ArchiveStore
}

// NewService returns the service. revoked drops a key from this replica's
// credential cache (auth.Authenticator.Revoked); the others learn of it
// through NOTIFY. archive signs the URLs of archives (nil: no export or
// import).
func NewService(d *sqlx.DB, keys *auth.Keys, revoked func(keyID string), runner Runner, archive ArchiveStore) *Service {
	return &Service{db: d, keys: keys, revoked: revoked, runner: runner, archive: archive}
}

const tenantCols = `id, name, created_at, deleted_at, CASE WHEN deleted_at IS NULL THEN 'active' ELSE 'deleting' END AS status`

// List returns tenants, oldest first, after the id after ("" for the first
// page), at most limit of them.
func (s *Service) List(ctx context.Context, after string, limit int) ([]Tenant, error) {
	if after != "" {
		if _, err := uuid.Parse(after); err != nil {
			return nil, apperr.Field("after", "must be a tenant id")
		}
	} else {
		after = "00000000-0000-0000-0000-000000000000"
	}
	out := []Tenant{}
	err := s.db.SelectContext(ctx, &out, `SELECT `+tenantCols+` FROM dds.tenants WHERE id > $1 ORDER BY id LIMIT $2`, after, limit)
	if err != nil {
		return nil, apperr.Wrap(err, "list tenants")
	}
	return out, nil
}

// lockTenant locks tenant id's row (FOR lock: UPDATE or SHARE) in tx and
// returns when it was deleted (nil: it is not).
func lockTenant(ctx context.Context, tx *sqlx.Tx, id, lock string) (*time.Time, error) {
	var deletedAt *time.Time
	err := tx.GetContext(ctx, &deletedAt, `SELECT deleted_at FROM dds.tenants WHERE id = $1 FOR `+lock, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, tenantNotFound(id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "lock tenant")
	}
	return deletedAt, nil
}

func tenantNotFound(id string) error { return apperr.New(apperr.NotFound, "tenant %q not found", id) }

// Get returns a tenant with the counts of what it holds.
func (s *Service) Get(ctx context.Context, id string) (*Tenant, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, tenantNotFound(id)
	}
	var t Tenant
	err := s.db.GetContext(ctx, &t, `SELECT `+tenantCols+`,
		(SELECT count(*) FROM dds.schemas WHERE tenant_id = t.id) AS schemas,
		(SELECT count(*) FROM dds.api_keys WHERE tenant_id = t.id AND revoked_at IS NULL) AS keys,
		(SELECT count(*) FROM dds.webhooks WHERE tenant_id = t.id) AS webhooks,
		(SELECT count(*) FROM dds.files WHERE tenant_id = t.id AND status = 'confirmed') AS files
		FROM dds.tenants t WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, tenantNotFound(id)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "get tenant")
	}
	return &t, nil
}

// Delete accepts the delete of a tenant: in one transaction it marks the
// tenant deleted, revokes its keys and records the delete job; then it
// drops the keys from this replica's cache and starts the job. From the
// commit on, the tenant's keys and tokens answer 401 on every replica (see
// auth.RevokeTenantIn). A second delete of a tenant being deleted returns
// its job (and starts it again if it was not running).
func (s *Service) Delete(ctx context.Context, id string) (*Job, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, tenantNotFound(id)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, apperr.Wrap(err, "begin")
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// FOR UPDATE (not the FOR NO KEY UPDATE of an UPDATE) waits for
	// in-flight inserts referencing the tenant (a new key) and blocks new
	// ones until commit, so the revocation below sees every key.
	deletedAt, err := lockTenant(ctx, tx, id, "UPDATE")
	if err != nil {
		return nil, err
	}
	var j *Job
	var revoked []string
	if deletedAt != nil {
		if j, err = s.jobWhere(ctx, tx, `tenant_id = $1 AND type = 'delete'`, id); err != nil {
			return nil, err
		}
	} else {
		if _, err := tx.ExecContext(ctx, `UPDATE dds.tenants SET deleted_at = now() WHERE id = $1`, id); err != nil {
			return nil, apperr.Wrap(err, "mark tenant deleted")
		}
		if revoked, err = s.keys.RevokeTenantIn(ctx, tx, id); err != nil {
			return nil, err
		}
		if j, err = s.insertJob(ctx, tx, &id, TypeDelete, nil, int64(len(deleteSteps))); err != nil {
			return nil, err
		}
	}
	if err := tx.Commit(); err != nil {
		return nil, apperr.Wrap(err, "commit")
	}
	for _, k := range revoked {
		s.revoked(k)
	}
	if err := s.start(ctx, j); err != nil {
		return nil, err
	}
	return j, nil
}

func (s *Service) start(ctx context.Context, j *Job) error {
	if j.Status != StatusQueued && j.Status != StatusRunning {
		return nil
	}
	if err := s.runner.Start(ctx, j); err != nil {
		return &apperr.Error{Code: apperr.Unavailable, Err: err,
			Message: "the " + j.Type + " job " + j.ID + " is recorded but its workflow could not start (Temporal unreachable); repeat the request to start it"}
	}
	return nil
}

func (s *Service) insertJob(ctx context.Context, q sqlx.QueryerContext, tenantID *string, typ string, spec any, total int64) (*Job, error) {
	b := []byte("{}")
	if spec != nil {
		var err error
		if b, err = json.Marshal(spec); err != nil {
			return nil, apperr.Wrap(err, "encode job spec")
		}
	}
	id := uuid.Must(uuid.NewV7()).String()
	var r jobRow
	err := sqlx.GetContext(ctx, q, &r, `INSERT INTO dds.tenant_jobs (id, tenant_id, type, spec, total) VALUES ($1, $2, $3, $4, $5)
		RETURNING `+jobCols, id, tenantID, typ, b, total)
	if err != nil {
		return nil, apperr.Wrap(err, "record job")
	}
	return r.job()
}

type jobRow struct {
	ID         string          `db:"id"`
	TenantID   *string         `db:"tenant_id"`
	Type       string          `db:"type"`
	Status     string          `db:"status"`
	Step       *string         `db:"step"`
	Processed  int64           `db:"processed"`
	Total      *int64          `db:"total"`
	Spec       json.RawMessage `db:"spec"`
	Result     []byte          `db:"result"`
	Error      []byte          `db:"error"`
	CreatedAt  time.Time       `db:"created_at"`
	StartedAt  *time.Time      `db:"started_at"`
	FinishedAt *time.Time      `db:"finished_at"`
}

const jobCols = `id, tenant_id, type, status, step, processed, total, spec, result, error, created_at, started_at, finished_at`

func (r *jobRow) job() (*Job, error) {
	j := &Job{ID: r.ID, TenantID: r.TenantID, Type: r.Type, Status: r.Status, Step: r.Step,
		Progress: Progress{Processed: r.Processed, Total: r.Total}, Result: r.Result,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, spec: r.Spec}
	if len(r.Error) > 0 {
		j.Error = &JobError{}
		if err := json.Unmarshal(r.Error, j.Error); err != nil {
			return nil, apperr.Wrap(err, "decode job error")
		}
	}
	return j, nil
}

func (s *Service) jobWhere(ctx context.Context, q sqlx.QueryerContext, where string, args ...any) (*Job, error) {
	var r jobRow
	err := sqlx.GetContext(ctx, q, &r, `SELECT `+jobCols+` FROM dds.tenant_jobs WHERE `+where, args...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "tenant job not found")
	}
	if err != nil {
		return nil, apperr.Wrap(err, "load tenant job")
	}
	return r.job()
}

// Job returns a job; the result of a finished export carries a fresh
// download URL of its archive.
func (s *Service) Job(ctx context.Context, id string) (*Job, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, apperr.New(apperr.NotFound, "tenant job %q not found", id)
	}
	j, err := s.jobWhere(ctx, s.db, `id = $1`, id)
	if err != nil {
		return nil, err
	}
	if j, err = s.revealOnce(ctx, j); err != nil {
		return nil, err
	}
	return s.withDownload(ctx, j)
}

// Jobs lists jobs, newest first, of one tenant when tenantID is not "".
func (s *Service) Jobs(ctx context.Context, tenantID string, limit int) ([]*Job, error) {
	where, args := `true`, []any{limit}
	if tenantID != "" {
		if _, err := uuid.Parse(tenantID); err != nil {
			return nil, apperr.Field("tenantId", "must be a tenant id")
		}
		where, args = `tenant_id = $2`, append(args, tenantID)
	}
	var rows []jobRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+jobCols+` FROM dds.tenant_jobs WHERE `+where+` ORDER BY created_at DESC, id DESC LIMIT $1`, args...); err != nil {
		return nil, apperr.Wrap(err, "list tenant jobs")
	}
	out := make([]*Job, 0, len(rows))
	for i := range rows {
		j, err := rows[i].job()
		if err != nil {
			return nil, err
		}
		if j.Type == TypeImport && len(j.Result) > 0 {
			// Secrets are shown by GET /api/v1/tenant-jobs/{id} only.
			var res map[string]any
			if err := json.Unmarshal(j.Result, &res); err != nil {
				return nil, apperr.Wrap(err, "decode job result")
			}
			if j.Result, err = json.Marshal(stripSecrets(res)); err != nil {
				return nil, apperr.Wrap(err, "encode job result")
			}
		}
		out = append(out, j)
	}
	return out, nil
}

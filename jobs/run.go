package jobs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Objects streams stored files (the storage drivers implement it).
type Objects interface {
	Open(ctx context.Context, key string) (io.ReadCloser, error)
}

// Executor runs the steps of a job (the worker's activities call it). Each
// step is safe to run again after a crash: staging starts over from an
// empty table, and Apply finds the job already applied.
type Executor struct {
	db      *sqlx.DB
	records *records.Store
	objects Objects
	gauges  *obs.JobProgress
	log     *slog.Logger
}

// NewExecutor returns an executor. gauges (nil for none) get the progress of
// every job this executor runs, for the process's /metrics.
func NewExecutor(db *sqlx.DB, rs *records.Store, objects Objects, gauges *obs.JobProgress, log *slog.Logger) *Executor {
	if log == nil {
		log = slog.Default()
	}
	return &Executor{db: db, records: rs, objects: objects, gauges: gauges, log: log}
}

// Outcome is where a step left the job.
type Outcome string

// Outcomes.
const (
	Continue  Outcome = "continue"  // go on with the next step
	Succeeded Outcome = "succeeded" // applied
	Failed    Outcome = "failed"    // the job failed (its row says why); nothing was written
	Cancelled Outcome = "cancelled" // cancelled; nothing was written
)

// ErrCancelled is what a Beat returns when the job's cancellation was asked.
var ErrCancelled = errors.New("the job was cancelled")

// Beat reports progress (items processed so far) to the run; it returns an
// error when the run should stop (cancelled, lost).
type Beat func(processed int64) error

func (x *Executor) load(ctx context.Context, id string) (*jobRow, Spec, error) {
	var r jobRow
	err := x.db.GetContext(ctx, &r, `SELECT `+jobCols+` FROM dds.jobs WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, Spec{}, apperr.New(apperr.NotFound, "job %s not found", id)
	}
	if err != nil {
		return nil, Spec{}, fmt.Errorf("load job: %w", err)
	}
	spec, err := r.spec()
	if err != nil {
		return nil, Spec{}, fmt.Errorf("decode job spec: %w", err)
	}
	return &r, spec, nil
}

// Begin marks the job running. It answers Cancelled for a job whose
// cancellation was asked before it started, and the job's terminal status
// for a job that already ended (a replayed run).
func (x *Executor) Begin(ctx context.Context, id string) (Outcome, error) {
	var st struct {
		Status string `db:"status"`
		Cancel bool   `db:"cancel_requested"`
	}
	err := x.db.GetContext(ctx, &st, `UPDATE dds.jobs SET status = CASE WHEN status = 'queued' THEN 'running' ELSE status END,
		started_at = coalesce(started_at, now()) WHERE id = $1 RETURNING status, cancel_requested`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return Cancelled, nil // the job is gone (its tenant was deleted): nothing to do
	}
	if err != nil {
		return "", fmt.Errorf("start job: %w", err)
	}
	switch {
	case st.Status != StatusRunning:
		return Outcome(st.Status), nil
	case st.Cancel:
		return x.Finish(ctx, id, Cancelled, "")
	}
	return Continue, nil
}

// Progress records processed (and total, when known) on the job row and
// reports whether a cancellation was asked.
func (x *Executor) Progress(ctx context.Context, id string, processed int64, total *int64) (cancelled bool, err error) {
	var row struct {
		Cancel bool   `db:"cancel_requested"`
		Type   string `db:"type"`
		Total  *int64 `db:"total"`
	}
	err = x.db.GetContext(ctx, &row, `UPDATE dds.jobs SET processed = $2, total = coalesce($3, total)
		WHERE id = $1 RETURNING cancel_requested, type, total`, id, processed, total)
	if err == nil {
		var t int64
		if row.Total != nil {
			t = *row.Total
		}
		x.gauges.Set(row.Type, id, processed, t)
	}
	return row.Cancel, err
}

// Prepare runs everything before the commit: an import streams, validates
// and stages its file; an update or delete counts the records it will
// change. Failures the user must fix fail the job (Failed); other errors
// are returned for the run to retry.
func (x *Executor) Prepare(ctx context.Context, id string, beat Beat) (Outcome, error) {
	j, spec, err := x.load(ctx, id)
	if err != nil {
		return "", err
	}
	if j.Status != StatusRunning {
		return Outcome(j.Status), nil
	}
	sc, e, err := x.scope(ctx, j)
	if err != nil {
		return x.failed(ctx, id, err, nil)
	}
	if j.Type == TypeImport {
		res, err := x.stage(ctx, j, spec, sc, e, beat)
		if errors.Is(err, ErrCancelled) {
			return x.Finish(ctx, id, Cancelled, "")
		}
		if err != nil {
			return x.failed(ctx, id, err, nil)
		}
		if res.FailureCount > 0 {
			return x.failed(ctx, id, apperr.New(apperr.Validation, "%d of the file's items are invalid; nothing was written", res.FailureCount), res)
		}
		return Continue, nil
	}
	where, err := parseWhere(sc, j.Entity, spec.Where)
	if err != nil {
		return x.failed(ctx, id, err, nil)
	}
	total, err := x.records.CountWhere(ctx, sc, e.Name, where)
	if err != nil {
		return x.failed(ctx, id, err, nil)
	}
	if _, err := x.Progress(ctx, id, 0, &total); err != nil {
		return "", err
	}
	return Continue, nil
}

// scope resolves the tenant's active schema and the job's entity, for the
// job's creator when its roles put it under rules, else the system
// principal (principal.go); a schema
// activated since the job was created fails the job (its rows were
// validated against another schema).
func (x *Executor) scope(ctx context.Context, j *jobRow) (*records.Scope, *schema.Entity, error) {
	p, err := j.principal() // principal.go
	if err != nil {
		return nil, nil, err
	}
	sc, err := x.records.ScopeAs(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	if sc.Schema.ID != j.SchemaID {
		return nil, nil, apperr.New(apperr.Conflict, "the tenant's active schema changed since the job was created")
	}
	e, err := sc.Entity(j.Entity)
	if err != nil {
		return nil, nil, err
	}
	return sc, e, nil
}

// failed ends the job as failed when err is the job's fault (a user
// error); an internal error is returned so the run retries the step.
func (x *Executor) failed(ctx context.Context, id string, err error, res *Result) (Outcome, error) {
	e := apperr.As(err)
	if e.Code == apperr.Internal || e.Code == apperr.Unavailable {
		return "", err
	}
	return x.finishWith(ctx, id, Failed, jobError(e), res)
}

// refusedResult is the result of an import whose rows a rule refused
// (records.StagedRefused): those rows by index, as a batch lists its
// failed items and as validation failures are listed; nil for any other
// error.
func refusedResult(err error) *Result {
	var sr *records.StagedRefused
	if !errors.As(err, &sr) {
		return nil
	}
	fails := &failures{}
	for _, p := range sr.Problems {
		fails.add(p.Line, p.Item, p.Err)
	}
	fails.count.Store(sr.Count)
	return &Result{FailureCount: sr.Count, Failed: nonNil(fails.list)}
}

func jobError(e *apperr.Error) *records.BatchError {
	be := &records.BatchError{Code: e.Code, Message: e.Message, Details: e.Details}
	if len(e.Details) > 0 {
		be.Field = e.Details[0].Field
	}
	return be
}

// Finish ends a job that is not yet terminal (failed with message, or
// cancelled) and drops its staging table. Idempotent.
func (x *Executor) Finish(ctx context.Context, id string, o Outcome, message string) (Outcome, error) {
	var be *records.BatchError
	if o == Failed {
		be = &records.BatchError{Code: apperr.Internal, Message: message}
	}
	return x.finishWith(ctx, id, o, be, nil)
}

// finishWith ends the job as o unless it already ended, and returns the
// status it ended with.
func (x *Executor) finishWith(ctx context.Context, id string, o Outcome, be *records.BatchError, res *Result) (Outcome, error) {
	if err := finish(ctx, x.db, id, string(o), be, res); err != nil {
		return "", err
	}
	if err := dropStage(ctx, x.db, id); err != nil {
		return "", err
	}
	var row struct {
		Status string `db:"status"`
		Type   string `db:"type"`
	}
	err := x.db.GetContext(ctx, &row, `SELECT status, type FROM dds.jobs WHERE id = $1`, id)
	if errors.Is(err, sql.ErrNoRows) {
		return o, nil // the job is gone with its tenant
	}
	if err != nil {
		return "", fmt.Errorf("read job status: %w", err)
	}
	x.gauges.Done(row.Type, id)
	return Outcome(row.Status), nil
}

// dropStage drops job id's staging table, if any, through ex (the pool, or
// the transaction that applies the job).
func dropStage(ctx context.Context, ex sqlx.ExecerContext, id string) error {
	if _, err := ex.ExecContext(ctx, `DROP TABLE IF EXISTS `+stageTable(id)); err != nil {
		return fmt.Errorf("drop staging table: %w", err)
	}
	return nil
}

// Apply commits the job in one transaction: it locks the job row, refuses a
// job whose cancellation was asked, does nothing for a job already applied,
// writes the records (and their events) and marks the job applied and
// succeeded. A failure rolls everything back.
func (x *Executor) Apply(ctx context.Context, id string) (Outcome, error) {
	j, spec, err := x.load(ctx, id)
	if err != nil {
		return "", err
	}
	sc, e, err := x.scope(ctx, j)
	if err != nil {
		return x.failed(ctx, id, err, nil)
	}
	tx, err := x.db.BeginTxx(ctx, nil)
	if err != nil {
		return "", fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	var st struct {
		Status  string `db:"status"`
		Applied bool   `db:"applied"`
		Cancel  bool   `db:"cancel_requested"`
	}
	if err := tx.GetContext(ctx, &st, `SELECT status, applied_at IS NOT NULL AS applied, cancel_requested
		FROM dds.jobs WHERE id = $1 FOR UPDATE`, id); err != nil {
		return "", fmt.Errorf("lock job: %w", err)
	}
	switch {
	case st.Applied:
		return Succeeded, nil
	case st.Status != StatusRunning:
		return Outcome(st.Status), nil
	case st.Cancel:
		_ = tx.Rollback()
		return x.Finish(ctx, id, Cancelled, "")
	}
	var w records.Written
	switch j.Type {
	case TypeImport:
		w, err = x.records.InsertStaged(ctx, tx, sc, e.Name, stageTable(id), spec.EmitEvents)
	default:
		w, err = x.applyFilter(ctx, tx, sc, e, j.Type, spec)
	}
	if err != nil {
		_ = tx.Rollback()
		return x.failed(ctx, id, err, refusedResult(err))
	}
	// The staging table goes with the commit that applies it: a worker
	// that dies after the commit leaves nothing behind for a retry to miss.
	if err := dropStage(ctx, tx, id); err != nil {
		return "", err
	}
	res, _ := json.Marshal(Result{SuccessCount: w.N, Failed: []records.BatchFailure{}})
	if _, err := tx.ExecContext(ctx, `UPDATE dds.jobs SET status = 'succeeded', applied_at = now(), finished_at = now(),
		processed = $2, total = $2, result = $3 WHERE id = $1`, id, w.N, string(res)); err != nil {
		return "", fmt.Errorf("mark job applied: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return "", records.MapError(sc, e.Name, err)
	}
	x.gauges.Done(j.Type, id)
	if w.First.Valid {
		// Every event of the job is announced, a few hundred ids per
		// notification, so live subscribers see all of them; the relay
		// claims them from the table however many wake-ups it gets.
		if err := outbox.AnnounceRange(ctx, x.db, j.TenantID, w.First.Int64, w.Last.Int64, w.At.Time); err != nil {
			x.log.Warn("announce job events; the relay's poll finds them", "job", id, "err", err)
		}
	}
	return Succeeded, nil
}

// applyFilter updates or deletes every record matching the job's filter in
// one statement (records.UpdateWhere, records.DeleteWhere).
func (x *Executor) applyFilter(ctx context.Context, tx *sqlx.Tx, sc *records.Scope, e *schema.Entity, typ string, spec Spec) (records.Written, error) {
	where, err := parseWhere(sc, e.Name, spec.Where)
	if err != nil {
		return records.Written{}, err
	}
	if typ == TypeDelete {
		return x.records.DeleteWhere(ctx, tx, sc, e.Name, where, spec.EmitEvents)
	}
	return x.records.UpdateWhere(ctx, tx, sc, e.Name, where, spec.Set, spec.EmitEvents)
}

package lifecycle

// The activities of tenant jobs. Each is registered under its method's
// name (TenantJobBegin, TenantDeleteStep, TenantJobFinish, ...); histories
// of running jobs carry those names, so they must not change. Each is safe
// to run again after a worker crash.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/heartbeat"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/searchattr"
	"github.com/dds-project/dds/tenant"
)

// Deps are what the activities work with.
type Deps struct {
	DB       *sqlx.DB
	Records  *records.Store
	Storage  ArchiveStore // file storage: the tenant's files and the archives
	Schemas  *schema.Service
	Tenants  *tenant.Service
	Temporal client.Client
	Log      *slog.Logger
	// Sections are what an archive carries beside schemas, data and files
	// (DefaultSections: keys and webhooks).
	Sections []Section
	// HeartbeatEvery is how often a busy step heartbeats (default 2s).
	HeartbeatEvery time.Duration
}

// Activities are the steps of tenant jobs.
type Activities struct{ deps *Deps }

// NewActivities returns the activities working with d (Register adds them
// to a worker; tests run them one by one).
func NewActivities(d *Deps) *Activities { return &Activities{deps: d} }

// StepInput names one step of a job.
type StepInput struct {
	JobID    string
	TenantID string
	Step     string
}

// FinishInput ends a job.
type FinishInput struct {
	JobID   string
	Status  string
	Code    string
	Message string
}

// TenantJobBegin marks the job running.
func (a *Activities) TenantJobBegin(ctx context.Context, jobID string) error {
	_, err := a.deps.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET status = 'running', started_at = coalesce(started_at, now())
		WHERE id = $1 AND status = 'queued'`, jobID)
	return err
}

// TenantJobFinish ends a job that is not yet terminal.
func (a *Activities) TenantJobFinish(ctx context.Context, in FinishInput) error {
	var jerr any
	if in.Status != StatusSucceeded {
		b, _ := json.Marshal(JobError{Code: in.Code, Message: in.Message})
		jerr = b
	}
	_, err := a.deps.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET status = $2, error = $3, finished_at = now(), step = NULL
		WHERE id = $1 AND status IN ('queued', 'running')`, in.JobID, in.Status, jerr)
	return err
}

// TenantDeleteStep runs one step of a tenant delete and records in the job
// how many things it removed (result.removed.<step>) and that it is done
// (progress.processed counts steps).
func (a *Activities) TenantDeleteStep(ctx context.Context, in StepInput) error {
	d := a.deps
	if _, err := d.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET step = $2 WHERE id = $1`, in.JobID, in.Step); err != nil {
		return err
	}
	var n int64
	err := a.heartbeating(ctx, func(ctx context.Context) error {
		beat := func(done int64) { activity.RecordHeartbeat(ctx, done) }
		var err error
		switch in.Step {
		case StepWorkflows:
			n, err = a.cancelWorkflows(ctx, in)
		case StepSchemas:
			var c int
			c, err = d.Records.DropTenantSchemas(ctx, in.TenantID, func(string) { activity.RecordHeartbeat(ctx) })
			n = int64(c)
		case StepFiles:
			n, err = files.PurgeTenant(ctx, d.DB, d.Storage, in.TenantID, beat)
		case StepEvents:
			n, err = outbox.NewStore(d.DB).DeleteTenant(ctx, in.TenantID, 10_000, beat)
		case StepArchives:
			n, err = purgeArchives(ctx, d.DB, d.Storage, in.TenantID)
		case StepTenant:
			var res interface{ RowsAffected() (int64, error) }
			// Webhooks (with their deliveries) first, in their own
			// statement: the relay may be updating them, and a smaller
			// cascade meets it less often (a deadlock is retried anyway).
			if _, err = d.DB.ExecContext(ctx, `DELETE FROM dds.webhooks WHERE tenant_id = $1`, in.TenantID); err != nil {
				return err
			}
			res, err = d.DB.ExecContext(ctx, `DELETE FROM dds.tenants WHERE id = $1`, in.TenantID)
			if err == nil {
				n, _ = res.RowsAffected()
			}
		default:
			err = fmt.Errorf("unknown delete step %q", in.Step)
		}
		return err
	})
	if err != nil {
		return err
	}
	// One step's count, and progress by steps; a step run again after a
	// crash overwrites its count rather than adding to it.
	idx := 0
	for i, s := range deleteSteps {
		if s == in.Step {
			idx = i + 1
		}
	}
	_, err = d.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET
		result = jsonb_set(coalesce(result, '{"removed": {}}'), ARRAY['removed', $2::text], to_jsonb($3::bigint)),
		processed = greatest(processed, $4)
		WHERE id = $1`, in.JobID, in.Step, n, idx)
	return err
}

// cancelWorkflows cancels the tenant's running workflows but the delete's
// own: those the DdsTenant search attribute finds, and its batch jobs'
// (found from their rows, so a namespace without the attribute still
// stops them). A workflow already gone is not an error.
func (a *Activities) cancelWorkflows(ctx context.Context, in StepInput) (int64, error) {
	d := a.deps
	ids := map[string]bool{}
	q := fmt.Sprintf(`%s = %q AND ExecutionStatus = "Running"`, searchattr.Tenant.GetName(), in.TenantID)
	var token []byte
	for {
		resp, err := d.Temporal.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Query: q, NextPageToken: token, PageSize: 500})
		if err != nil {
			if d.Log != nil {
				d.Log.Warn("tenant delete: cannot list the tenant's workflows by search attribute; cancelling its jobs only", "tenant", in.TenantID, "err", err)
			}
			break
		}
		for _, e := range resp.Executions {
			ids[e.GetExecution().GetWorkflowId()] = true
		}
		if token = resp.NextPageToken; len(token) == 0 {
			break
		}
		activity.RecordHeartbeat(ctx)
	}
	jobIDs, err := jobs.RunningWorkflowIDs(ctx, d.DB, in.TenantID)
	if err != nil {
		return 0, err
	}
	for _, id := range jobIDs {
		ids[id] = true
	}
	delete(ids, WorkflowID(in.JobID))
	var n int64
	for id := range ids {
		err := d.Temporal.CancelWorkflow(ctx, id, "")
		var nf *serviceerror.NotFound
		if err != nil && !errors.As(err, &nf) {
			return n, apperr.Wrap(err, "cancel workflow %s", id)
		}
		if err == nil {
			n++
		}
		activity.RecordHeartbeat(ctx)
	}
	return n, nil
}

// heartbeating runs fn while heartbeating in the background, so a step
// busy in one long statement still proves it is alive.
func (a *Activities) heartbeating(ctx context.Context, fn func(context.Context) error) error {
	return heartbeat.While(ctx, a.deps.HeartbeatEvery, fn)
}

package jobs

// A job's durable run: the Temporal workflow that runs its steps (the
// activities in activities.go), its registration with a worker, and the
// Runner that starts and cancels it for the service.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/searchattr"
)

// WorkflowName is the name the job workflow is registered and started
// under. Histories of running jobs carry it: it must not change.
const WorkflowName = "Job"

// WorkflowInput names the job a workflow runs; everything else is in its
// dds.jobs row.
type WorkflowInput struct {
	JobID    string
	TenantID string
	Type     string
	Entity   string
}

// WorkflowID is the ID of a job's workflow.
func WorkflowID(jobID string) string { return "job/" + jobID }

// jobStep are the options of a job's steps: a step heartbeats every few
// seconds, so a worker killed mid-step is noticed after HeartbeatTimeout
// and the step runs again on another worker (each step is idempotent).
var jobStep = workflow.ActivityOptions{
	StartToCloseTimeout: 2 * time.Hour,
	HeartbeatTimeout:    15 * time.Second,
	WaitForCancellation: true,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute, MaximumAttempts: 8,
	},
}

// Workflow runs one batch job: begin, prepare (stage and validate an import, or
// count an update/delete), apply in one transaction. A cancellation stops
// it at the step it is in, and the job ends cancelled with nothing
// written; a step that keeps failing on errors the job did not cause ends
// it failed, also with nothing written.
func Workflow(ctx workflow.Context, in WorkflowInput) (Outcome, error) {
	var a *Activities
	steps := workflow.WithActivityOptions(ctx, jobStep)
	out, err := func() (Outcome, error) {
		for _, step := range []any{a.JobBegin, a.JobPrepare, a.JobApply} {
			var o Outcome
			if err := workflow.ExecuteActivity(steps, step, in.JobID).Get(steps, &o); err != nil {
				return "", err
			}
			if o != Continue {
				return o, nil
			}
		}
		return "", temporal.NewNonRetryableApplicationError("apply returned continue", "JOB_STEP", nil)
	}()
	if err == nil {
		return out, nil
	}
	end := jobEnding(in.JobID, err, ctx.Err() != nil)
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, finishStep)
	if ferr := workflow.ExecuteActivity(dctx, a.JobFinish, end).Get(dctx, &out); ferr != nil {
		return "", ferr
	}
	return out, nil
}

// jobEnding is how a job whose steps returned err ends: cancelled
// when the workflow was cancelled, failed otherwise.
func jobEnding(jobID string, err error, cancelled bool) FinishInput {
	if cancelled || temporal.IsCanceledError(err) {
		return FinishInput{JobID: jobID, Outcome: Cancelled}
	}
	msg := "the job failed on repeated internal errors; nothing was written"
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		msg = fmt.Sprintf("%s (last error: %s)", msg, ae.Message())
	}
	return FinishInput{JobID: jobID, Outcome: Failed, Message: msg}
}

// finishStep are the options of the step ending a job that did not
// succeed: it retries without limit, backing off to every 10 minutes.
var finishStep = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute,
	},
}

// TemporalRunner runs jobs as Temporal workflows (the Runner of
// production).
type TemporalRunner struct {
	Client    client.Client
	TaskQueue string
}

// StartOptions are the options a job's workflow starts with: its ID, the
// tenant and type search attributes, and a summary the Temporal UI shows.
func StartOptions(taskQueue string, j *Job) client.StartWorkflowOptions {
	summary := fmt.Sprintf("%s %s", j.Type, j.Entity)
	switch j.Type {
	case TypeImport:
		summary += fmt.Sprintf(" from file %s (%s)", j.FileID, j.Format)
	default:
		if j.All && len(j.Where) == 0 {
			summary += " (all records)"
		} else {
			summary += " by filter"
		}
	}
	if !j.EmitEvents {
		summary += ", no events"
	}
	return client.StartWorkflowOptions{
		ID:                       WorkflowID(j.ID),
		TaskQueue:                taskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(searchattr.Tenant.ValueSet(j.TenantID), searchattr.JobType.ValueSet(j.Type)),
		StaticSummary:            summary,
		StaticDetails:            fmt.Sprintf("DDS job %s of tenant %s: %s. Status and result: GET /api/v1/jobs/%s", j.ID, j.TenantID, summary, j.ID),
		Memo:                     map[string]any{"tenant": j.TenantID, "type": j.Type, "entity": j.Entity},
	}
}

// Start starts the job's workflow; starting it again is a no-op.
func (r *TemporalRunner) Start(ctx context.Context, j *Job) error {
	in := WorkflowInput{JobID: j.ID, TenantID: j.TenantID, Type: j.Type, Entity: j.Entity}
	return searchattr.Start(ctx, r.Client, StartOptions(r.TaskQueue, j), WorkflowName, in)
}

// Cancel asks the job's workflow to stop. A workflow that is gone already
// is not an error (the job row says how it ended).
func (r *TemporalRunner) Cancel(ctx context.Context, jobID string) error {
	err := r.Client.CancelWorkflow(ctx, WorkflowID(jobID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

// Registry is where Register adds workflows and activities: a Temporal
// worker (go.temporal.io/sdk/worker.Worker) or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivity(a any)
}

// Register adds the job workflow and its steps, which run jobs with x, to
// a worker.
func Register(r Registry, x *Executor) {
	r.RegisterWorkflowWithOptions(Workflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterActivity(&Activities{Exec: x})
}

package workflows

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

	"github.com/dds-project/dds/activities"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/searchattr"
)

// JobInput names the job a workflow runs; everything else is in its
// dds.jobs row.
type JobInput struct {
	JobID    string
	TenantID string
	Type     string
	Entity   string
}

// JobWorkflowID is the ID of a job's workflow.
func JobWorkflowID(jobID string) string { return "job/" + jobID }

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

// Job runs one batch job: begin, prepare (stage and validate an import, or
// count an update/delete), apply in one transaction. A cancellation stops
// it at the step it is in, and the job ends cancelled with nothing
// written; a step that keeps failing on errors the job did not cause ends
// it failed, also with nothing written.
func Job(ctx workflow.Context, in JobInput) (jobs.Outcome, error) {
	var a *activities.Jobs
	steps := workflow.WithActivityOptions(ctx, jobStep)
	out, err := func() (jobs.Outcome, error) {
		for _, step := range []any{a.JobBegin, a.JobPrepare, a.JobApply} {
			var o jobs.Outcome
			if err := workflow.ExecuteActivity(steps, step, in.JobID).Get(steps, &o); err != nil {
				return "", err
			}
			if o != jobs.Continue {
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
	dctx = workflow.WithActivityOptions(dctx, durableActivity)
	if ferr := workflow.ExecuteActivity(dctx, a.JobFinish, end).Get(dctx, &out); ferr != nil {
		return "", ferr
	}
	return out, nil
}

// jobEnding is how a job whose steps returned err ends: cancelled
// when the workflow was cancelled, failed otherwise.
func jobEnding(jobID string, err error, cancelled bool) activities.JobFinishInput {
	if cancelled || temporal.IsCanceledError(err) {
		return activities.JobFinishInput{JobID: jobID, Outcome: jobs.Cancelled}
	}
	msg := "the job failed on repeated internal errors; nothing was written"
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		msg = fmt.Sprintf("%s (last error: %s)", msg, ae.Message())
	}
	return activities.JobFinishInput{JobID: jobID, Outcome: jobs.Failed, Message: msg}
}

// durableActivity retries without limit, backing off to every 10 minutes.
var durableActivity = workflow.ActivityOptions{
	StartToCloseTimeout: time.Minute,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute,
	},
}

// JobRunner runs jobs as Temporal workflows (jobs.Runner).
type JobRunner struct {
	Client    client.Client
	TaskQueue string
}

// JobStartOptions are the options a job's workflow starts with: its ID, the
// tenant and type search attributes, and a summary the Temporal UI shows.
func JobStartOptions(taskQueue string, j *jobs.Job) client.StartWorkflowOptions {
	summary := fmt.Sprintf("%s %s", j.Type, j.Entity)
	switch j.Type {
	case jobs.TypeImport:
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
		ID:                       JobWorkflowID(j.ID),
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
func (r *JobRunner) Start(ctx context.Context, j *jobs.Job) error {
	in := JobInput{JobID: j.ID, TenantID: j.TenantID, Type: j.Type, Entity: j.Entity}
	return searchattr.Start(ctx, r.Client, JobStartOptions(r.TaskQueue, j), Job, in)
}

// Cancel asks the job's workflow to stop. A workflow that is gone already
// is not an error (the job row says how it ended).
func (r *JobRunner) Cancel(ctx context.Context, jobID string) error {
	err := r.Client.CancelWorkflow(ctx, JobWorkflowID(jobID), "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil
	}
	return err
}

package jobs

// The steps of a job's workflow, as Temporal activities. Each is
// registered under its method's name (JobBegin, JobPrepare, JobApply,
// JobFinish); histories of running jobs carry those names, so they must
// not change.

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"

	"github.com/dds-project/dds/internal/heartbeat"
)

// Activities holds the dependencies of the batch-job activities: the job
// executor (database, records layer, file storage). Each activity is one
// step of a job's workflow and is safe to run again after a worker crash.
type Activities struct {
	Exec *Executor
	// HeartbeatEvery is how often a running step heartbeats (default 2s);
	// the workflow's heartbeat timeout must be larger.
	HeartbeatEvery time.Duration
}

// FinishInput ends a job (failed with a message, or cancelled).
type FinishInput struct {
	JobID   string
	Outcome Outcome
	Message string
}

// JobBegin marks the job running.
func (a *Activities) JobBegin(ctx context.Context, jobID string) (Outcome, error) {
	return a.Exec.Begin(ctx, jobID)
}

// JobPrepare validates and stages an import, or counts the records an
// update/delete will change, recording progress as it goes.
func (a *Activities) JobPrepare(ctx context.Context, jobID string) (Outcome, error) {
	var out Outcome
	err := a.heartbeating(ctx, func(ctx context.Context) error {
		var err error
		out, err = a.Exec.Prepare(ctx, jobID, func(processed int64) error {
			activity.RecordHeartbeat(ctx, processed)
			cancelled, err := a.Exec.Progress(ctx, jobID, processed, nil)
			if err != nil {
				return err
			}
			if cancelled {
				return ErrCancelled
			}
			return ctx.Err()
		})
		return err
	})
	return out, err
}

// JobApply commits the job in one transaction (a no-op for a job already
// applied).
func (a *Activities) JobApply(ctx context.Context, jobID string) (Outcome, error) {
	var out Outcome
	err := a.heartbeating(ctx, func(ctx context.Context) error {
		var err error
		out, err = a.Exec.Apply(ctx, jobID)
		return err
	})
	return out, err
}

// JobFinish ends a job that is not yet terminal and drops its staging
// table; it returns the status the job ended with.
func (a *Activities) JobFinish(ctx context.Context, in FinishInput) (Outcome, error) {
	return a.Exec.Finish(ctx, in.JobID, in.Outcome, in.Message)
}

// heartbeating runs fn while heartbeating in the background, so a step
// busy in one long statement still proves it is alive, and a cancellation
// of the workflow reaches fn's context.
func (a *Activities) heartbeating(ctx context.Context, fn func(context.Context) error) error {
	return heartbeat.While(ctx, a.HeartbeatEvery, fn)
}

package webhook

// Replay of a webhook's deliveries since a time, as a durable job: one
// Temporal workflow per replay lists the deliveries once (a snapshot, so
// deliveries made after the start are not replayed) and hands each to
// its delivery workflow with an immediate attempt, in batches, recording
// its progress in a query the API answers. A worker crash resumes at the
// last finished batch; a delivery handed over twice only gets its retry
// cut short again (ReplayDelivery is idempotent per delivery workflow).

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/searchattr"
)

// ReplayWorkflowName is the name the replay workflow is registered and
// started under. Histories of running workflows carry it: it must not change.
const ReplayWorkflowName = "WebhookReplay"

// QueryReplayProgress is the query answering a replay's ReplayProgress.
const QueryReplayProgress = "progress"

// replayBatch is how many deliveries one activity hands over.
const replayBatch = 200

// ReplayInput is one replay: the deliveries of WebhookID created at or
// after Since and, when Until is set, before Until (all of them, or only
// those that finally failed).
type ReplayInput struct {
	TenantID   string
	WebhookID  string
	Since      time.Time
	OnlyFailed bool
	// Until is absent from replays started before it existed: nil, no end.
	Until *time.Time `json:",omitempty"`
}

// ReplayProgress is what a replay reports while it runs and when done.
type ReplayProgress struct {
	Total int `json:"total"`
	Sent  int `json:"sent"`
}

// ReplayRef is one delivery a replay re-sends.
type ReplayRef struct {
	DeliveryID string `db:"id"`
	EventID    string `db:"event_id"`
	EventType  string `db:"event_type"`
}

// ReplayWorkflowID names a replay; the webhook is part of it so that the
// API can refuse another webhook's (or tenant's) replay id.
func ReplayWorkflowID(webhookID, replayID string) string {
	return "webhook-replay/" + webhookID + "/" + replayID
}

// ReplayWorkflow lists the deliveries to replay, then hands them to their
// delivery workflows batch by batch.
func ReplayWorkflow(ctx workflow.Context, in ReplayInput) (ReplayProgress, error) {
	var p ReplayProgress
	if err := workflow.SetQueryHandler(ctx, QueryReplayProgress, func() (ReplayProgress, error) { return p, nil }); err != nil {
		return p, err
	}
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		StartToCloseTimeout: 2 * time.Minute,
		RetryPolicy:         &temporal.RetryPolicy{InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: time.Minute},
	})
	var acts *ReplayActivities
	var refs []ReplayRef
	if err := workflow.ExecuteActivity(ctx, acts.ListReplay, in).Get(ctx, &refs); err != nil {
		return p, err
	}
	p.Total = len(refs)
	for len(refs) > 0 {
		n := min(replayBatch, len(refs))
		if err := workflow.ExecuteActivity(ctx, acts.ReplayBatch, in, refs[:n]).Get(ctx, nil); err != nil {
			return p, err
		}
		p.Sent += n
		refs = refs[n:]
	}
	return p, nil
}

// ReplayActivities holds the replay workflow's activities and their dependencies.
type ReplayActivities struct {
	Store     *Store
	Temporal  client.Client
	TaskQueue string
}

// ListReplay returns the deliveries a replay re-sends, oldest first. A
// delivery being attempted right now (pending) is left to that attempt.
// Registered as activity "ListReplay": it must not change.
func (a *ReplayActivities) ListReplay(ctx context.Context, in ReplayInput) ([]ReplayRef, error) {
	statuses := []string{StatusSucceeded, StatusFailed, StatusCancelled, StatusRetrying}
	if in.OnlyFailed {
		statuses = []string{StatusFailed}
	}
	refs := []ReplayRef{}
	err := a.Store.db.SelectContext(ctx, &refs, `SELECT id, event_id, event_type FROM dds.webhook_deliveries
		WHERE webhook_id = $1 AND tenant_id = $2 AND created_at >= $3 AND status = ANY($4::text[])
			AND ($5::timestamptz IS NULL OR created_at < $5)
		ORDER BY created_at, id`, in.WebhookID, in.TenantID, in.Since, statuses, in.Until)
	return refs, err
}

// ReplayBatch reopens each delivery and starts (or cuts short) its
// delivery workflow with an immediate attempt. Registered as activity
// "ReplayBatch": it must not change.
func (a *ReplayActivities) ReplayBatch(ctx context.Context, in ReplayInput, refs []ReplayRef) error {
	for _, r := range refs {
		if _, err := a.Store.Reopen(ctx, r.DeliveryID); err != nil {
			return err
		}
		if err := ReplayDelivery(ctx, a.Temporal, a.TaskQueue, DeliveryInput{DeliveryID: r.DeliveryID, WebhookID: in.WebhookID,
			EventID: r.EventID, TenantID: in.TenantID, EventType: r.EventType}); err != nil {
			return err
		}
	}
	return nil
}

// RegisterReplay adds the replay workflow and its activities; they start
// delivery workflows through c on taskQueue.
func RegisterReplay(r Registry, s *Store, c client.Client, taskQueue string) {
	r.RegisterWorkflowWithOptions(ReplayWorkflow, workflow.RegisterOptions{Name: ReplayWorkflowName})
	r.RegisterActivity(&ReplayActivities{Store: s, Temporal: c, TaskQueue: taskQueue})
}

// StartReplay starts a replay and returns its id.
func StartReplay(ctx context.Context, c client.Client, taskQueue string, in ReplayInput) (string, error) {
	id := uuid.New().String()
	opts := client.StartWorkflowOptions{
		ID:                       ReplayWorkflowID(in.WebhookID, id),
		TaskQueue:                taskQueue,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.Tenant.ValueSet(in.TenantID),
			searchattr.Webhook.ValueSet(in.WebhookID),
		),
		StaticSummary: "replay webhook " + in.WebhookID + " since " + in.Since.Format(time.RFC3339),
	}
	return id, searchattr.Start(ctx, c, opts, ReplayWorkflowName, in)
}

// ReplayStatus is a replay as the API shows it.
type ReplayStatus struct {
	ID         string     `json:"id"`
	WebhookID  string     `json:"webhookId"`
	Status     string     `json:"status"` // running, completed, failed
	Total      int        `json:"total"`
	Sent       int        `json:"sent"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// GetReplay returns a replay of the webhook (the caller has checked the
// webhook belongs to the tenant; the id names the webhook).
func GetReplay(ctx context.Context, c client.Client, webhookID, replayID string) (*ReplayStatus, error) {
	if _, err := uuid.Parse(replayID); err != nil {
		return nil, apperr.New(apperr.NotFound, "replay %s not found", replayID)
	}
	wid := ReplayWorkflowID(webhookID, replayID)
	desc, err := c.DescribeWorkflowExecution(ctx, wid, "")
	var nf *serviceerror.NotFound
	if errors.As(err, &nf) {
		return nil, apperr.New(apperr.NotFound, "replay %s not found", replayID)
	}
	if err != nil {
		return nil, apperr.Wrap(err, "describe replay")
	}
	info := desc.GetWorkflowExecutionInfo()
	st := &ReplayStatus{ID: replayID, WebhookID: webhookID, StartedAt: info.GetStartTime().AsTime()}
	var p ReplayProgress
	switch info.GetStatus() {
	case enums.WORKFLOW_EXECUTION_STATUS_RUNNING:
		st.Status = "running"
		if v, err := c.QueryWorkflow(ctx, wid, "", QueryReplayProgress); err == nil {
			_ = v.Get(&p)
		}
	case enums.WORKFLOW_EXECUTION_STATUS_COMPLETED:
		st.Status = "completed"
		if err := c.GetWorkflow(ctx, wid, "").Get(ctx, &p); err != nil {
			return nil, apperr.Wrap(err, "replay result")
		}
	default:
		st.Status = "failed" // failed, terminated, cancelled, timed out
	}
	if info.GetCloseTime() != nil {
		t := info.GetCloseTime().AsTime()
		st.FinishedAt = &t
	}
	st.Total, st.Sent = p.Total, p.Sent
	return st, nil
}

package webhook

// The retry workflow of a failed delivery, its one activity (an attempt
// by the Deliverer) and the starts the relay (hand-over) and the API
// (manual replay) make. They live here, beside the delivery rows they
// change, rather than in package relay: the relay is only one of the two
// callers that start the workflow, and the workflow never reads the
// outbox.

import (
	"context"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/searchattr"
)

// DeliveryWorkflowName is the name the retry workflow is registered and
// started under. Histories of running workflows carry it: it must not
// change.
const DeliveryWorkflowName = "Delivery"

// SignalRetryNow cuts the current wait of a delivery short (manual replay).
const SignalRetryNow = "retry-now"

// DeliveryInput identifies one (webhook, event) delivery whose first
// attempt failed, or which a user asked to replay (Immediate).
type DeliveryInput struct {
	DeliveryID string
	WebhookID  string
	EventID    string
	TenantID   string
	EventType  string
	// Immediate makes an attempt at once before the schedule (manual replay).
	Immediate bool
	// Schedule, when set, replaces Schedule (DDS_WEBHOOK_RETRY_SCHEDULE,
	// tests). It is part of the workflow's input, so a replay of its
	// history takes the same waits whatever the replaying worker's settings.
	Schedule []time.Duration `json:",omitempty"`
}

// DeliveryWorkflowID is deterministic in (webhook, event): the relay
// starting the same delivery twice (crash, re-relay) reaches the same
// workflow, never a second one.
func DeliveryWorkflowID(webhookID, eventID string) string {
	return "webhook-delivery/" + webhookID + "/" + eventID
}

// DeliveryWorkflow retries a failed webhook delivery on the documented schedule (docs/webhooks.md, "How delivery works"):
// durable timers of 1m, 5m, 30m, 2h and 8h after each failure, one
// activity per attempt. It ends when an attempt succeeds, when the webhook
// was deactivated or deleted (the activity marks the delivery cancelled),
// or after the fifth retry failed (the activity marks it failed).
func DeliveryWorkflow(ctx workflow.Context, in DeliveryInput) (Outcome, error) {
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
		// 5 s HTTP limit plus the Postgres writes.
		StartToCloseTimeout: 30 * time.Second,
		RetryPolicy: &temporal.RetryPolicy{
			InitialInterval:    time.Second,
			BackoffCoefficient: 2,
			MaximumInterval:    time.Minute,
		},
	})
	retryNow := workflow.GetSignalChannel(ctx, SignalRetryNow)
	var acts *Activities
	attempt := func(next time.Duration) (Outcome, error) {
		var out Outcome
		err := workflow.ExecuteActivity(ctx, acts.Deliver, DeliverInput{DeliveryID: in.DeliveryID, Next: next}).Get(ctx, &out)
		return out, err
	}
	schedule := Schedule
	if len(in.Schedule) > 0 {
		schedule = in.Schedule
	}
	if in.Immediate {
		drain(retryNow)
		out, err := attempt(schedule[0])
		if err != nil || out != OutcomeRetrying {
			return out, err
		}
	}
	for i, wait := range schedule {
		if err := sleepOrSignal(ctx, wait, retryNow); err != nil {
			return "", err
		}
		var next time.Duration
		if i+1 < len(schedule) {
			next = schedule[i+1]
		}
		out, err := attempt(next)
		if err != nil || out != OutcomeRetrying {
			return out, err
		}
	}
	return OutcomeFailed, nil
}

// sleepOrSignal waits d on a durable timer, or until a retry-now signal.
func sleepOrSignal(ctx workflow.Context, d time.Duration, sig workflow.ReceiveChannel) error {
	tctx, cancel := workflow.WithCancel(ctx)
	defer cancel()
	timer := workflow.NewTimer(tctx, d)
	var err error
	sel := workflow.NewSelector(ctx)
	sel.AddFuture(timer, func(f workflow.Future) { err = f.Get(ctx, nil) })
	sel.AddReceive(sig, func(c workflow.ReceiveChannel, more bool) { c.Receive(ctx, nil) })
	sel.Select(ctx)
	drain(sig)
	return err
}

func drain(c workflow.ReceiveChannel) {
	for c.ReceiveAsync(nil) {
	}
}

// Activities holds the retry workflow's activity and its dependencies.
type Activities struct {
	Deliverer *Deliverer
}

// DeliverInput names the delivery to attempt. Next is the wait before the
// following retry (recorded as the attempt's next_attempt_at); zero marks
// the last retry, whose failure fails the delivery.
type DeliverInput struct {
	DeliveryID string
	Next       time.Duration
}

// Deliver makes one attempt of a stored delivery: the stored body, fresh
// signatures, the 5 s limit, the attempt recorded in Postgres. A non-2xx or
// time-out is a normal result (OutcomeRetrying / OutcomeFailed), not an
// activity error; errors are infrastructure failures Temporal retries.
// Registered as activity "Deliver" (the method's name): it must not change.
func (a *Activities) Deliver(ctx context.Context, in DeliverInput) (Outcome, error) {
	return a.Deliverer.Attempt(ctx, in.DeliveryID, in.Next)
}

// Registry is where Register adds workflows and activities: a Temporal
// worker (go.temporal.io/sdk/worker.Worker) or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivity(a any)
}

// Register adds webhook delivery's retry workflow and its activity, which
// attempts deliveries with d, to a worker.
func Register(r Registry, d *Deliverer) {
	r.RegisterWorkflowWithOptions(DeliveryWorkflow, workflow.RegisterOptions{Name: DeliveryWorkflowName})
	r.RegisterActivity(&Activities{Deliverer: d})
}

// DeliveryStartOptions are the options every delivery workflow starts with.
func DeliveryStartOptions(taskQueue string, in DeliveryInput) client.StartWorkflowOptions {
	return client.StartWorkflowOptions{
		ID:        DeliveryWorkflowID(in.WebhookID, in.EventID),
		TaskQueue: taskQueue,
		// A running workflow for this delivery is reused; a finished one is
		// restarted only if it ended abnormally (failed, terminated).
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		TypedSearchAttributes: temporal.NewSearchAttributes(
			searchattr.Tenant.ValueSet(in.TenantID),
			searchattr.Webhook.ValueSet(in.WebhookID),
			searchattr.EventType.ValueSet(in.EventType),
		),
		StaticSummary: "webhook " + in.WebhookID + " · " + in.EventType + " · event " + in.EventID,
	}
}

// StartDelivery starts (or finds running) the retry workflow of a failed
// delivery. Starting it again is a no-op.
func StartDelivery(ctx context.Context, c client.Client, taskQueue string, in DeliveryInput) error {
	return searchattr.Start(ctx, c, DeliveryStartOptions(taskQueue, in), DeliveryWorkflowName, in)
}

// ReplayDelivery asks for an immediate new attempt of a delivery (manual
// replay): a running retry workflow skips its current wait; otherwise a new
// run starts with an immediate attempt followed by the full schedule.
func ReplayDelivery(ctx context.Context, c client.Client, taskQueue string, in DeliveryInput) error {
	in.Immediate = true
	opts := DeliveryStartOptions(taskQueue, in)
	opts.WorkflowIDReusePolicy = enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	_, err := c.SignalWithStartWorkflow(ctx, opts.ID, SignalRetryNow, nil, opts, DeliveryWorkflowName, in)
	return err
}

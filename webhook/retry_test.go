package webhook_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// fixture is one tenant with one webhook pointing at a local receiver and
// one delivery whose first attempt (made by the relay) already failed.
type fixture struct {
	store    *webhook.Store
	tenant   string
	hook     *webhook.Webhook
	receiver *webhooktest.Receiver
	in       webhook.DeliveryInput
	dl       *webhook.Deliverer
}

func newFixture(t *testing.T, status func(webhooktest.Request) int) *fixture {
	t.Helper()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "wf")
	rc := webhooktest.NewReceiver(t, status)
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL + "/hook", EventTypes: outbox.Types}, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityUpdated, "Product", nil)
	refs, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{{WebhookID: w.ID, TenantID: tn, EventID: ev,
		EventType: outbox.EntityUpdated, EntityName: "Product", Body: []byte(`{"id":"` + ev + `"}`)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	next := time.Now().Add(time.Minute)
	if err := st.RecordAttempts(ctx, []webhook.AttemptRecord{{DeliveryID: refs[0].ID, WebhookID: w.ID, Attempt: 1,
		Result: webhook.Result{StatusCode: 500, Err: "HTTP 500"}, At: time.Now(), Next: &next, Status: webhook.StatusRetrying}}, nil); err != nil {
		t.Fatal(err)
	}
	return &fixture{store: st, tenant: tn, hook: w, receiver: rc,
		in: webhook.DeliveryInput{DeliveryID: refs[0].ID, WebhookID: w.ID, EventID: ev, TenantID: tn, EventType: outbox.EntityUpdated},
		dl: &webhook.Deliverer{Store: st, Client: rc.Client(t)}}
}

func (f *fixture) delivery(t *testing.T) *webhook.Delivery {
	t.Helper()
	d, err := f.store.GetDelivery(context.Background(), f.tenant, f.hook.ID, f.in.DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// run executes the workflow in the time-skipping test environment and
// returns the durations of the timers it scheduled and the offsets (from
// the workflow start, in workflow time) at which attempts started.
func run(t *testing.T, f *fixture, setup func(env *testsuite.TestWorkflowEnvironment)) (webhook.Outcome, []time.Duration, []time.Duration) {
	t.Helper()
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestWorkflowEnvironment()
	webhook.Register(env, f.dl)
	var mu sync.Mutex
	var timers, attempts []time.Duration
	start := env.Now()
	env.SetOnTimerScheduledListener(func(_ string, d time.Duration) {
		mu.Lock()
		timers = append(timers, d)
		mu.Unlock()
	})
	env.SetOnActivityStartedListener(func(*activity.Info, context.Context, converter.EncodedValues) {
		mu.Lock()
		attempts = append(attempts, env.Now().Sub(start))
		mu.Unlock()
	})
	if setup != nil {
		setup(env)
	}
	env.ExecuteWorkflow(webhook.DeliveryWorkflowName, f.in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var out webhook.Outcome
	if err := env.GetWorkflowResult(&out); err != nil {
		t.Fatal(err)
	}
	return out, timers, attempts
}

func TestDeliveryRetryScheduleThenFailed(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(webhooktest.Request) int { return 503 })
	out, timers, attempts := run(t, f, nil)
	if out != webhook.OutcomeFailed {
		t.Fatalf("outcome %s, want failed", out)
	}
	if want := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour}; !slices.Equal(timers, want) {
		t.Fatalf("timers %v, want %v", timers, want)
	}
	// Each retry waits its delay after the previous failure.
	want := []time.Duration{time.Minute, 6 * time.Minute, 36 * time.Minute, 2*time.Hour + 36*time.Minute, 10*time.Hour + 36*time.Minute}
	if len(attempts) != len(want) {
		t.Fatalf("attempt times %v, want %v", attempts, want)
	}
	for i := range want {
		// Activity start is observed within the same workflow task as the
		// timer firing; allow the test clock's bookkeeping a second.
		if d := attempts[i] - want[i]; d < 0 || d > time.Second {
			t.Fatalf("attempt %d at %v, want %v", i+2, attempts[i], want[i])
		}
	}
	d := f.delivery(t)
	if d.Status != webhook.StatusFailed || d.Attempts != 6 || d.NextAttemptAt != nil {
		t.Fatalf("delivery %+v, want failed after 6 attempts", d)
	}
	if n := len(f.receiver.Requests()); n != 5 {
		t.Fatalf("receiver saw %d retries, want 5", n)
	}
	// Every retry sends the same body with the same webhook-id and a valid signature.
	for _, r := range f.receiver.Requests() {
		if r.Header.Get("webhook-id") != f.in.EventID || !webhook.VerifyBody(f.hook.SigningSecret, r.Body, r.Header.Get("X-Webhook-Signature")) ||
			string(r.Body) != `{"id":"`+f.in.EventID+`"}` {
			t.Fatalf("retry request %v %s", r.Header, r.Body)
		}
	}
}

func TestDeliverySucceedsOnThirdRetry(t *testing.T) {
	t.Parallel()
	n := 0
	var mu sync.Mutex
	f := newFixture(t, func(webhooktest.Request) int {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n < 3 {
			return 500
		}
		return 204
	})
	out, timers, _ := run(t, f, nil)
	if out != webhook.OutcomeSucceeded || len(timers) != 3 {
		t.Fatalf("outcome %s timers %v, want succeeded after 3 timers", out, timers)
	}
	if d := f.delivery(t); d.Status != webhook.StatusSucceeded || d.Attempts != 4 {
		t.Fatalf("delivery %+v", d)
	}
}

func TestDeliveryStopsWhenWebhookDeactivated(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(webhooktest.Request) int { return 500 })
	out, timers, _ := run(t, f, func(env *testsuite.TestWorkflowEnvironment) {
		// After the retries at 1m and 6m, before the one at 36m.
		env.RegisterDelayedCallback(func() {
			off := false
			if _, err := f.store.Update(context.Background(), f.tenant, f.hook.ID, webhook.Patch{IsActive: &off}, true); err != nil {
				t.Error(err)
			}
		}, 10*time.Minute)
	})
	if out != webhook.OutcomeCancelled {
		t.Fatalf("outcome %s, want cancelled", out)
	}
	if want := []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}; !slices.Equal(timers, want) {
		t.Fatalf("timers %v, want %v", timers, want)
	}
	if n := len(f.receiver.Requests()); n != 2 {
		t.Fatalf("receiver got %d requests, want 2 (none after deactivation)", n)
	}
	if d := f.delivery(t); d.Status != webhook.StatusCancelled {
		t.Fatalf("delivery status %s, want cancelled", d.Status)
	}
}

func TestDeliveryStopsWhenWebhookDeleted(t *testing.T) {
	t.Parallel()
	f := newFixture(t, func(webhooktest.Request) int { return 500 })
	out, timers, _ := run(t, f, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() {
			if err := f.store.Delete(context.Background(), f.tenant, f.hook.ID); err != nil {
				t.Error(err)
			}
		}, 3*time.Minute)
	})
	if out != webhook.OutcomeCancelled || len(timers) != 2 || len(f.receiver.Requests()) != 1 {
		t.Fatalf("outcome %s timers %v requests %d; want cancelled after 2 timers and 1 request", out, timers, len(f.receiver.Requests()))
	}
}

func TestDeliveryRetryNowSignalSkipsWait(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil) // the receiver now answers 200
	out, timers, attempts := run(t, f, func(env *testsuite.TestWorkflowEnvironment) {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(webhook.SignalRetryNow, nil) }, 10*time.Second)
	})
	if out != webhook.OutcomeSucceeded || len(timers) != 1 || len(attempts) != 1 || attempts[0] > time.Minute-time.Second {
		t.Fatalf("outcome %s timers %v attempts %v; want success at ~10s", out, timers, attempts)
	}
}

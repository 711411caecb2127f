package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// TestRecordFirstAttempts: the relay creates each delivery row with its
// first attempt in one transaction. What a receiver and the delivery log
// rely on: the row carries the outcome and the exact body sent, the
// attempt is logged once, the webhook's counters move, a rate-limited
// delivery starts queued, a deleted
// webhook's delivery is dropped without failing the others, and a row
// recorded already (another relay took the event over) keeps its success
// while a row left pending takes the attempt.
func TestRecordFirstAttempts(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "first attempts")
	hook := func() *webhook.Webhook {
		w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: outbox.Types}, false)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	ok, failing, limited, deleted := hook(), hook(), hook(), hook()
	ev1 := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	ev2 := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	nd := func(w *webhook.Webhook, ev string, body string) webhook.NewDelivery {
		return webhook.NewDelivery{ID: uuid.NewString(), WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: outbox.EntityCreated,
			EntityName: "Product", Body: []byte(body)}
	}
	now := time.Now()
	next := now.Add(time.Minute)
	rec := func(n webhook.NewDelivery, res webhook.Result, status string) webhook.AttemptRecord {
		r := webhook.AttemptRecord{DeliveryID: n.ID, WebhookID: n.WebhookID, Attempt: 1, Result: res, At: now, Status: status}
		if status == webhook.StatusRetrying {
			r.Next = &next
		}
		return r
	}
	a, b, c := nd(ok, ev1, `{"a":1}`), nd(failing, ev1, `{"a":1}`), nd(deleted, ev1, `{"a":1}`)
	q := nd(limited, ev1, `{"a":1}`)
	q.Queued = true
	if err := st.Delete(ctx, tn, deleted.ID); err != nil {
		t.Fatal(err)
	}
	err := st.RecordFirstAttempts(ctx, []webhook.NewDelivery{a, b, c, q},
		[]webhook.AttemptRecord{rec(a, webhook.Result{StatusCode: 204, Latency: 7 * time.Millisecond}, webhook.StatusSucceeded),
			rec(b, webhook.Result{StatusCode: 500, Err: "HTTP 500"}, webhook.StatusRetrying),
			rec(c, webhook.Result{StatusCode: 200}, webhook.StatusSucceeded)})
	if err != nil {
		t.Fatalf("RecordFirstAttempts: %v", err)
	}
	one := func(w *webhook.Webhook) webhook.DeliveryLog {
		t.Helper()
		logs, err := st.Deliveries(ctx, tn, w.ID, 10, "")
		if err != nil || len(logs) != 1 {
			t.Fatalf("deliveries of %s: %+v %v", w.ID, logs, err)
		}
		return logs[0]
	}
	if l := one(ok); l.ID != a.ID || l.Status != webhook.StatusSucceeded || l.Attempts != 1 || len(l.AttemptLog) != 1 ||
		*l.AttemptLog[0].StatusCode != 204 || string(l.Body) != `{"a":1}` {
		t.Fatalf("succeeded delivery: %+v", l)
	}
	// A first attempt that succeeded is kept on its delivery row, not in
	// the attempt log, and the delivery log shows it as attempt 1 all the same.
	var logged int
	if err := d.Get(&logged, `SELECT count(*) FROM dds.webhook_attempts WHERE delivery_id = $1`, a.ID); err != nil || logged != 0 {
		t.Fatalf("a succeeded first attempt has %d attempt-log rows (%v), want none", logged, err)
	}
	if at := one(ok).AttemptLog[0]; at.Attempt != 1 || at.LatencyMs != 7 || at.AttemptedAt.Sub(now).Abs() > time.Microsecond /* stored to the µs */ ||
		at.Error != nil || at.NextAttemptAt != nil {
		t.Fatalf("attempt 1 of the succeeded delivery: %+v", at)
	}
	if l := one(failing); l.Status != webhook.StatusRetrying || l.NextAttemptAt == nil || len(l.AttemptLog) != 1 ||
		l.AttemptLog[0].Error == nil || *l.AttemptLog[0].StatusCode != 500 {
		t.Fatalf("retrying delivery: %+v", l)
	}
	if l := one(limited); l.Status != webhook.StatusQueued || l.Attempts != 0 || len(l.AttemptLog) != 0 {
		t.Fatalf("queued delivery: %+v", l)
	}
	var n int
	if err := d.Get(&n, `SELECT count(*) FROM dds.webhook_deliveries WHERE webhook_id = $1`, deleted.ID); err != nil || n != 0 {
		t.Fatalf("a deleted webhook's delivery was created: %d %v", n, err)
	}
	got, err := st.Get(ctx, tn, ok.ID)
	if err != nil || got.AttemptCount != 1 || got.SuccessCount != 1 || got.LastTriggered == nil {
		t.Fatalf("counters: %+v %v", got, err)
	}

	// A second relay recording the same deliveries (it took the event
	// over): the success stays, the attempt is logged under the row's id.
	a2 := nd(ok, ev1, `{"a":1}`)
	if err := st.RecordFirstAttempts(ctx, []webhook.NewDelivery{a2},
		[]webhook.AttemptRecord{rec(a2, webhook.Result{StatusCode: 500, Err: "HTTP 500"}, webhook.StatusRetrying)}); err != nil {
		t.Fatal(err)
	}
	if l := one(ok); l.ID != a.ID || l.Status != webhook.StatusSucceeded || l.NextAttemptAt != nil || len(l.AttemptLog) != 2 {
		t.Fatalf("a success must stay one: %+v", l)
	}
	// A row left pending (committed before its POST by an earlier
	// version) takes the attempt and the body sent.
	pend, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{nd(ok, ev2, `{"old":1}`)}, nil)
	if err != nil || len(pend) != 1 || pend[0].Status != webhook.StatusPending {
		t.Fatalf("pending row: %+v %v", pend, err)
	}
	p := nd(ok, ev2, `{"new":1}`)
	if err := st.RecordFirstAttempts(ctx, []webhook.NewDelivery{p},
		[]webhook.AttemptRecord{rec(p, webhook.Result{StatusCode: 200}, webhook.StatusSucceeded)}); err != nil {
		t.Fatal(err)
	}
	dl, err := st.GetDelivery(ctx, tn, ok.ID, pend[0].ID)
	if err != nil || dl.Status != webhook.StatusSucceeded || dl.Attempts != 1 || string(dl.Body) != `{"new":1}` {
		t.Fatalf("pending row after its attempt: %+v %v", dl, err)
	}
	// That recording was all successes (one statement): the counters are
	// there too, and the success ended the failure run.
	got, err = st.Get(ctx, tn, ok.ID)
	if err != nil || got.AttemptCount != 3 || got.SuccessCount != 2 || got.FailingSince != nil || !got.IsActive {
		t.Fatalf("counters after a failure and a success: %+v %v", got, err)
	}
}

// TestActiveWithDeliveries: the relay's one statement before its POSTs
// returns the tenant's active webhooks and which of the claimed events
// each has a delivery row for.
func TestActiveWithDeliveries(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "active with deliveries")
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: outbox.Types}, false)
	if err != nil {
		t.Fatal(err)
	}
	off, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/off", EventTypes: outbox.Types}, false)
	if err != nil {
		t.Fatal(err)
	}
	inactive := false
	if _, err := st.Update(ctx, tn, off.ID, webhook.Patch{IsActive: &inactive}, false); err != nil {
		t.Fatal(err)
	}
	ev1 := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	ev2 := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	n := webhook.NewDelivery{ID: uuid.NewString(), WebhookID: w.ID, TenantID: tn, EventID: ev1, EventType: outbox.EntityCreated, EntityName: "Product", Body: []byte("{}")}
	if err := st.RecordFirstAttempts(ctx, []webhook.NewDelivery{n}, []webhook.AttemptRecord{{DeliveryID: n.ID, WebhookID: w.ID,
		Attempt: 1, Result: webhook.Result{StatusCode: 200}, At: time.Now(), Status: webhook.StatusSucceeded}}); err != nil {
		t.Fatal(err)
	}
	hooks, existing, err := st.ActiveWithDeliveries(ctx, []string{tn}, []string{ev1, ev2})
	if err != nil || len(hooks) != 1 || hooks[0].ID != w.ID {
		t.Fatalf("active webhooks: %+v %v", hooks, err)
	}
	if len(existing) != 1 || existing[webhook.DeliveryKey(w.ID, ev1)] != webhook.StatusSucceeded {
		t.Fatalf("existing deliveries: %v", existing)
	}
}

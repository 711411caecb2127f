package relay_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

const wait = 30 * time.Second

func verify(t *testing.T, secret string, r webhooktest.Request) webhook.Payload {
	t.Helper()
	if !webhook.VerifyBody(secret, r.Body, r.Header.Get("X-Webhook-Signature")) {
		t.Fatalf("X-Webhook-Signature %q does not verify", r.Header.Get("X-Webhook-Signature"))
	}
	if !webhook.VerifyStandard(secret, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Body, r.Header.Get("webhook-signature")) {
		t.Fatalf("webhook-signature %q does not verify", r.Header.Get("webhook-signature"))
	}
	ts, _ := strconv.ParseInt(r.Header.Get("webhook-timestamp"), 10, 64)
	if d := time.Since(time.Unix(ts, 0)); d < -time.Minute || d > time.Minute {
		t.Fatalf("webhook-timestamp %d is not now", ts)
	}
	if r.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("Content-Type %q", r.Header.Get("Content-Type"))
	}
	var p webhook.Payload
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatal(err)
	}
	if p.ID != r.Header.Get("webhook-id") {
		t.Fatalf("webhook-id %s != payload id %s", r.Header.Get("webhook-id"), p.ID)
	}
	return p
}

func TestEachEventTypeIsDeliveredSigned(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "Acme Corp")
	rc := webhooktest.NewReceiver(t, nil)
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL + "/hooks/dds", EventTypes: outbox.Types}, true)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // event id -> type
	for _, typ := range []string{outbox.EntityCreated, outbox.EntityUpdated, outbox.EntityDeleted} {
		want[webhooktest.Event(t, d, tn, "shop", typ, "Product", map[string]any{"name": "Lamp", "price": 12.5})] = typ
	}
	webhooktest.Eventually(t, wait, "three deliveries", func() bool { return len(rc.Requests()) >= 3 })
	for _, r := range rc.Requests() {
		p := verify(t, w.SigningSecret, r)
		if want[p.ID] != p.Type {
			t.Fatalf("unexpected delivery %s", r.Body)
		}
		delete(want, p.ID)
		var rec map[string]any
		if err := json.Unmarshal(p.Data.Record, &rec); err != nil {
			t.Fatal(err)
		}
		if p.Data.EntityName != "Product" || rec["id"] != p.Data.EntityID || rec["name"] != "Lamp" || rec["price"] != 12.5 ||
			p.Tenant.ID != tn || p.Tenant.Name != "Acme Corp" {
			t.Fatalf("payload %s", r.Body)
		}
		if _, err := time.Parse(time.RFC3339Nano, p.Timestamp); err != nil {
			t.Fatalf("timestamp %q: %v", p.Timestamp, err)
		}
	}
	if len(want) != 0 {
		t.Fatalf("not delivered: %v", want)
	}
	webhooktest.Eventually(t, wait, "events relayed and deliveries succeeded", func() bool {
		var n int
		_ = d.Get(&n, `SELECT count(*) FROM dds.webhook_deliveries WHERE webhook_id = $1 AND status = 'succeeded' AND attempts = 1`, w.ID)
		var pending int
		_ = d.Get(&pending, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND relayed_at IS NULL`, tn)
		return n == 3 && pending == 0
	})
	got, _ := st.Get(ctx, tn, w.ID)
	if got.LastTriggered == nil || got.SuccessRate() != 1 || got.AttemptCount != 3 {
		t.Fatalf("webhook stats %+v", got)
	}
}

func TestFiltersAndIsActive(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "filters")
	var hits [4]atomic.Int32
	mk := func(i int, in webhook.CreateInput) *webhook.Webhook {
		rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int { hits[i].Add(1); return 200 })
		in.TargetURL = rc.URL
		w, err := st.Create(ctx, tn, in, true)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	mk(0, webhook.CreateInput{EventTypes: []string{outbox.EntityCreated}, EntityNames: []string{"Product"}})
	inactive := mk(1, webhook.CreateInput{EventTypes: outbox.Types})
	off := false
	if _, err := st.Update(ctx, tn, inactive.ID, webhook.Patch{IsActive: &off}, true); err != nil {
		t.Fatal(err)
	}
	mk(2, webhook.CreateInput{EventTypes: outbox.Types}) // every event
	// A webhook bound to another schema; the schema must exist to be named.
	if _, err := d.Exec(`INSERT INTO dds.schemas (tenant_id, name, definition, pg_schema) VALUES ($1, 'blog', '{}', 's_'||replace(gen_random_uuid()::text,'-',''))`, tn); err != nil {
		t.Fatal(err)
	}
	mk(3, webhook.CreateInput{EventTypes: outbox.Types, SchemaName: "blog"})

	webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil) // 0, 2
	webhooktest.Event(t, d, tn, "shop", outbox.EntityUpdated, "Product", nil) // 2
	webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Order", nil)   // 2
	webhooktest.Event(t, d, tn, "blog", outbox.EntityDeleted, "Post", nil)    // 2, 3
	webhooktest.Eventually(t, wait, "all events relayed", func() bool {
		var pending int
		_ = d.Get(&pending, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND relayed_at IS NULL`, tn)
		return pending == 0 && hits[2].Load() == 4
	})
	if got := [4]int32{hits[0].Load(), hits[1].Load(), hits[2].Load(), hits[3].Load()}; got != [4]int32{1, 0, 4, 1} {
		t.Fatalf("deliveries per webhook %v, want [1 0 4 1]", got)
	}
}

func TestFailedFirstAttemptGoesToRetryWorkflow(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "retry")
	rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int { return 500 })
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL, EventTypes: outbox.Types}, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	wfID := webhook.DeliveryWorkflowID(w.ID, ev)
	webhooktest.Eventually(t, wait, "event relayed and retry workflow started", func() bool {
		var ok bool
		_ = d.Get(&ok, `SELECT e.relayed_at IS NOT NULL AND d.workflow_started_at IS NOT NULL
			FROM dds.events e JOIN dds.webhook_deliveries d ON d.event_id = e.id WHERE e.id = $1`, ev)
		return ok
	})
	desc, err := temporalClient.DescribeWorkflowExecution(ctx, wfID, "")
	if err != nil {
		t.Fatalf("retry workflow %s: %v", wfID, err)
	}
	sa := desc.WorkflowExecutionInfo.SearchAttributes.GetIndexedFields()
	for k, v := range map[string]string{"DdsTenant": tn, "DdsWebhook": w.ID, "DdsEventType": outbox.EntityCreated} {
		if sa[k] == nil || string(sa[k].Data) != `"`+v+`"` {
			t.Fatalf("search attribute %s = %v, want %s", k, sa[k], v)
		}
	}
	logs, _ := st.Deliveries(ctx, tn, w.ID, 10, "")
	if len(logs) != 1 || logs[0].Status != webhook.StatusRetrying || logs[0].NextAttemptAt == nil ||
		logs[0].NextAttemptAt.Sub(logs[0].AttemptLog[0].AttemptedAt).Round(time.Second) != time.Minute {
		t.Fatalf("delivery after failed first attempt: %+v", logs)
	}
	// The receiver recovers; a manual replay cuts the 1m wait short.
	rc.SetStatus(nil)
	if err := webhook.ReplayDelivery(ctx, temporalClient, taskQueue, webhook.DeliveryInput{DeliveryID: logs[0].ID,
		WebhookID: w.ID, EventID: ev, TenantID: tn, EventType: outbox.EntityCreated}); err != nil {
		t.Fatal(err)
	}
	var out webhook.Outcome
	if err := temporalClient.GetWorkflow(ctx, wfID, "").Get(ctx, &out); err != nil || out != webhook.OutcomeSucceeded {
		t.Fatalf("workflow result %s %v", out, err)
	}
	reqs := rc.Requests()
	if len(reqs) != 2 || string(reqs[0].Body) != string(reqs[1].Body) || reqs[0].Header.Get("webhook-id") != reqs[1].Header.Get("webhook-id") {
		t.Fatalf("retry must resend the same body with the same webhook-id: %d requests", len(reqs))
	}
	verify(t, w.SigningSecret, reqs[1])
	// A re-relay of the event (claim lost after the fact) sends nothing more.
	if _, err := d.Exec(`UPDATE dds.events SET relayed_at = NULL, claimed_until = NULL WHERE id = $1`, ev); err != nil {
		t.Fatal(err)
	}
	webhooktest.Eventually(t, wait, "event relayed again", func() bool {
		var relayed bool
		_ = d.Get(&relayed, `SELECT relayed_at IS NOT NULL FROM dds.events WHERE id = $1`, ev)
		return relayed
	})
	if n := len(rc.Requests()); n != 2 {
		t.Fatalf("re-relay re-sent a succeeded delivery: %d requests", n)
	}
}

func TestSeveralRelaysShareTheOutbox(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	// Stop the extra relays (finishing what they claimed, which may be
	// other tests' events) before the database handle closes.
	t.Cleanup(func() { cancel(); running.Wait() })
	tn := webhooktest.Tenant(t, d, "two relays")
	var mu sync.Mutex
	seen := map[string]int{}
	rc := webhooktest.NewReceiver(t, func(r webhooktest.Request) int {
		mu.Lock()
		seen[r.Header.Get("webhook-id")]++
		mu.Unlock()
		return 200
	})
	if _, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	// Two more relays next to the package's one, with small batches so
	// that all three take part. They have no NOTIFY wake-up: polling alone
	// must find every event.
	for range 2 {
		r := relay.New(d, rc.Client(t), temporalClient, relay.Config{BatchSize: 5, TaskQueue: taskQueue},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		running.Add(1)
		go func() { defer running.Done(); _ = r.Run(ctx) }()
	}
	// One event of a dead relay: claimed, the claim expired, never relayed.
	var dead string
	if err := d.Get(&dead, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record, claimed_until)
		VALUES ($1, gen_random_uuid(), 'shop', 'entity.created', 'Product', gen_random_uuid(), '{}', now() - interval '1 second') RETURNING id`, tn); err != nil {
		t.Fatal(err)
	}
	const n = 300
	for i := 1; i < n; i++ {
		webhooktest.Event(t, d, tn, "shop", outbox.EntityUpdated, "Product", map[string]any{"i": i})
	}
	webhooktest.Eventually(t, wait, "every event delivered and relayed", func() bool {
		var pending int
		_ = d.Get(&pending, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND relayed_at IS NULL`, tn)
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == n && pending == 0
	})
	mu.Lock()
	defer mu.Unlock()
	if seen[dead] == 0 {
		t.Fatal("the event with an expired claim was not delivered")
	}
	for id, c := range seen {
		if c != 1 {
			var attempts []struct {
				Attempt int       `db:"attempt"`
				At      time.Time `db:"attempted_at"`
				Code    *int      `db:"status_code"`
			}
			_ = d.Select(&attempts, `SELECT a.attempt, a.attempted_at, a.status_code FROM dds.webhook_attempts a JOIN dds.webhook_deliveries d ON d.id = a.delivery_id WHERE d.event_id = $1`, id)
			t.Fatalf("event %s delivered %d times without any crash; attempts recorded: %+v", id, c, attempts)
		}
	}
}

// TestWebhookDeletedDuringDelivery: a webhook deleted while its first
// attempt is in flight (its delivery row goes with it) must not fail the
// recording of the other deliveries of the batch. Before, the relay logged
// `violates foreign key constraint "webhook_attempts_delivery_id_fkey"`,
// left the event claimed until the lease ran out and then re-sent it.
func TestWebhookDeletedDuringDelivery(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "deleted mid-flight")
	var doomed *webhook.Webhook
	deleted := make(chan error, 1)
	rcDoomed := webhooktest.NewReceiver(t, func(webhooktest.Request) int {
		deleted <- st.Delete(ctx, tn, doomed.ID) // the user deletes it while we deliver
		return 200
	})
	rcKept := webhooktest.NewReceiver(t, nil)
	var err error
	if doomed, err = st.Create(ctx, tn, webhook.CreateInput{TargetURL: rcDoomed.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	kept, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rcKept.URL, EventTypes: outbox.Types}, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	webhooktest.Eventually(t, wait, "the event relayed and the kept webhook's delivery recorded", func() bool {
		var ok bool
		_ = d.Get(&ok, `SELECT e.relayed_at IS NOT NULL AND d.status = 'succeeded'
			FROM dds.events e JOIN dds.webhook_deliveries d ON d.event_id = e.id AND d.webhook_id = $2 WHERE e.id = $1`, ev, kept.ID)
		return ok
	})
	if n := len(rcKept.Requests()); n != 1 {
		t.Fatalf("kept webhook received %d deliveries, want 1", n)
	}
}

// A batch that outlives its lease (here a receiver that takes three
// leases to answer) is renewed by the relay working on it, so no other
// relay takes it over and repeats its deliveries; claims can therefore be
// short, and a dead relay's events are taken over within one lease.
//
// Not parallel: its relays' one-second lease would also claim the other
// tests' events (one database), and a loaded machine's pause of two thirds
// of a lease lets another relay take such a batch over and repeat its
// deliveries in flight (the documented duplicate bound), which the no-crash
// tests count as repeats. Run alone, its relays are stopped before the
// parallel tests start.
func TestASlowBatchKeepsItsClaim(t *testing.T) {
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	t.Cleanup(func() { cancel(); running.Wait() })
	tn := webhooktest.Tenant(t, d, "slow batch")
	var calls atomic.Int32
	rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int {
		if calls.Add(1) == 1 {
			time.Sleep(3500 * time.Millisecond) // a slow receiver, not a wait for a condition
		}
		return 200
	})
	if _, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	// Two more relays with the package relay's one-second lease, polling
	// every 100 ms: without renewal one of them would take the batch over.
	for range 2 {
		r := relay.New(d, rc.Client(t), temporalClient, relay.Config{Lease: time.Second, PollInterval: 100 * time.Millisecond, TaskQueue: taskQueue},
			slog.New(slog.NewTextHandler(io.Discard, nil)))
		running.Add(1)
		go func() { defer running.Done(); _ = r.Run(ctx) }()
	}
	ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	webhooktest.Eventually(t, wait, "the slow event relayed", func() bool {
		var ok bool
		_ = d.Get(&ok, `SELECT relayed_at IS NOT NULL FROM dds.events WHERE id = $1`, ev)
		return ok
	})
	if n := len(rc.Requests()); n != 1 {
		t.Fatalf("the slow event was delivered %d times, want once", n)
	}
}

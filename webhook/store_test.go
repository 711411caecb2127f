package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

func TestStoreCreateValidatesAndScopesToTenant(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	t1 := webhooktest.Tenant(t, d, "one")
	t2 := webhooktest.Tenant(t, d, "two")

	bad := []struct {
		in    webhook.CreateInput
		field string
	}{
		{webhook.CreateInput{TargetURL: "http://example.com/h", EventTypes: []string{"entity.created"}}, "targetUrl"},
		{webhook.CreateInput{TargetURL: "https://example.com/h"}, "eventTypes"},
		{webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.exploded"}}, "eventTypes"},
		{webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.created"}, EntityNames: []string{"bad name"}}, "entityNames"},
		{webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.created"}, SchemaName: "nope"}, "schemaName"},
		{webhook.CreateInput{TargetURL: "https://127.0.0.1/h", EventTypes: []string{"entity.created"}}, "targetUrl"},
	}
	for _, b := range bad {
		_, err := st.Create(ctx, t1, b.in, false)
		if !apperr.Is(err, apperr.Validation) || apperr.As(err).Details[0].Field != b.field {
			t.Errorf("Create(%+v) = %v, want VALIDATION_ERROR on %s", b.in, err, b.field)
		}
	}
	w, err := st.Create(ctx, t1, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.updated", "entity.created", "entity.created"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if !w.IsActive || len(w.EventTypes) != 2 || w.EntityNames != nil || w.SuccessRate() != 1 || len(w.SigningSecret) < 20 {
		t.Fatalf("created %+v", w)
	}
	if _, err := st.Get(ctx, t2, w.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("other tenant Get: %v, want NOT_FOUND", err)
	}
	off := false
	if _, err := st.Update(ctx, t2, w.ID, webhook.Patch{IsActive: &off}, false); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("other tenant Update: %v, want NOT_FOUND", err)
	}
	if err := st.Delete(ctx, t2, w.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("other tenant Delete: %v, want NOT_FOUND", err)
	}
	nope := "nope"
	if _, err := st.Update(ctx, t1, w.ID, webhook.Patch{SchemaName: &nope}, false); !apperr.Is(err, apperr.Validation) ||
		apperr.As(err).Details[0].Field != "schemaName" {
		t.Fatalf("Update to an unknown schema: %v, want VALIDATION_ERROR on schemaName", err)
	}
	names := []string{"Product"}
	w2, err := st.Update(ctx, t1, w.ID, webhook.Patch{IsActive: &off, EntityNames: &names}, false)
	if err != nil || w2.IsActive || len(w2.EntityNames) != 1 {
		t.Fatalf("Update: %+v %v", w2, err)
	}
	if err := st.Delete(ctx, t1, w.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Get(ctx, t1, w.ID); !apperr.Is(err, apperr.NotFound) {
		t.Fatalf("deleted webhook still there: %v", err)
	}
}

func TestMatches(t *testing.T) {
	ev := &outbox.Event{Type: outbox.EntityCreated, Name: "Product", SchemaName: "shop"}
	edge := &outbox.Event{Type: outbox.RelationshipCreated, Name: "placedBy", SchemaName: "shop",
		Record: []byte(`{"relationshipName":"placedBy","sourceEntity":"Order","targetEntity":"Customer"}`)}
	tests := []struct {
		name string
		w    webhook.Webhook
		want bool
		ev   *outbox.Event
	}{
		{"edge type subscribed", webhook.Webhook{IsActive: true, EventTypes: []string{"relationship.created"}}, true, edge},
		{"edge type not subscribed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}}, false, edge},
		{"edge source listed", webhook.Webhook{IsActive: true, EventTypes: []string{"relationship.created"}, EntityNames: []string{"Order"}}, true, edge},
		{"edge target listed", webhook.Webhook{IsActive: true, EventTypes: []string{"relationship.created"}, EntityNames: []string{"Customer"}}, true, edge},
		{"edge ends not listed", webhook.Webhook{IsActive: true, EventTypes: []string{"relationship.created"}, EntityNames: []string{"placedBy"}}, false, edge},
		{"type subscribed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}}, true, nil},
		{"type not subscribed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.deleted"}}, false, nil},
		{"inactive", webhook.Webhook{IsActive: false, EventTypes: []string{"entity.created"}}, false, nil},
		{"entity listed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, EntityNames: []string{"Order", "Product"}}, true, nil},
		{"entity not listed (case-sensitive)", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, EntityNames: []string{"product"}}, false, nil},
		{"schema matches", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, SchemaName: "shop"}, true, nil},
		{"other schema", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, SchemaName: "blog"}, false, nil},
	}
	for _, tt := range tests {
		e := ev
		if tt.ev != nil {
			e = tt.ev
		}
		if got := tt.w.Matches(e); got != tt.want {
			t.Errorf("%s: got %v", tt.name, got)
		}
	}
}

func TestDelivererAttempt(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "acme")
	rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int { return 500 })
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL + "/hook", EventTypes: outbox.Types}, true)
	if err != nil {
		t.Fatal(err)
	}
	dl := &webhook.Deliverer{Store: st, Client: rc.Client(t)}
	newDelivery := func() string {
		ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
		refs, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: outbox.EntityCreated, EntityName: "Product", Body: []byte(`{"id":"` + ev + `"}`)}}, nil)
		if err != nil || len(refs) != 1 || refs[0].Status != webhook.StatusPending {
			t.Fatalf("InsertDeliveries: %+v %v", refs, err)
		}
		return refs[0].ID
	}
	id := newDelivery()
	if out, err := dl.Attempt(ctx, id, 5*time.Minute); err != nil || out != webhook.OutcomeRetrying {
		t.Fatalf("failed attempt with retries left: %s %v", out, err)
	}
	if out, _ := dl.Attempt(ctx, id, 0); out != webhook.OutcomeFailed {
		t.Fatalf("failed last attempt: %s, want failed", out)
	}
	if out, _ := dl.Attempt(ctx, id, 0); out != webhook.OutcomeFailed {
		t.Fatalf("attempt on a failed delivery: %s, want failed without sending", out)
	}
	if n := len(rc.Requests()); n != 2 {
		t.Fatalf("receiver got %d requests, want 2", n)
	}
	logs, err := st.Deliveries(ctx, tn, w.ID, 10, "")
	if err != nil || len(logs) != 1 || len(logs[0].AttemptLog) != 2 || *logs[0].AttemptLog[0].StatusCode != 500 || logs[0].AttemptLog[0].NextAttemptAt == nil || logs[0].AttemptLog[1].NextAttemptAt != nil {
		t.Fatalf("attempt log %+v %v", logs, err)
	}

	rc.SetStatus(nil)
	id2 := newDelivery()
	if out, _ := dl.Attempt(ctx, id2, time.Minute); out != webhook.OutcomeSucceeded {
		t.Fatalf("2xx attempt: %s", out)
	}
	got, _ := st.Get(ctx, tn, w.ID)
	if got.AttemptCount != 3 || got.SuccessCount != 1 || got.LastTriggered == nil {
		t.Fatalf("counters %+v", got)
	}

	off := false
	id3 := newDelivery()
	if _, err := st.Update(ctx, tn, w.ID, webhook.Patch{IsActive: &off}, true); err != nil {
		t.Fatal(err)
	}
	if out, _ := dl.Attempt(ctx, id3, time.Minute); out != webhook.OutcomeCancelled {
		t.Fatalf("inactive webhook: %s, want cancelled", out)
	}
	if err := st.Delete(ctx, tn, w.ID); err != nil {
		t.Fatal(err)
	}
	if out, _ := dl.Attempt(ctx, id3, time.Minute); out != webhook.OutcomeCancelled {
		t.Fatalf("deleted webhook: %s, want cancelled", out)
	}
	if n := len(rc.Requests()); n != 3 {
		t.Fatalf("receiver got %d requests, want 3", n)
	}
}

func TestInsertDeliveriesIsIdempotentAndSkipsDeletedWebhooks(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "idem")
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: outbox.Types}, false)
	if err != nil {
		t.Fatal(err)
	}
	ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	nd := webhook.NewDelivery{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: outbox.EntityCreated, EntityName: "Product", Body: []byte("{}")}
	gone := nd
	gone.WebhookID = "0190a5c4-0000-7000-8000-000000000001" // no such webhook
	first, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{nd, gone}, nil)
	if err != nil || len(first) != 1 {
		t.Fatalf("first insert: %+v %v", first, err)
	}
	if err := st.SetStatus(ctx, first[0].ID, webhook.StatusSucceeded); err != nil {
		t.Fatal(err)
	}
	changed := nd
	changed.Body = []byte(`{"tenant":"renamed"}`) // a re-relay computing other bytes
	again, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{changed}, []string{ev})
	if err != nil || len(again) != 1 || again[0].ID != first[0].ID || again[0].Status != webhook.StatusSucceeded || string(again[0].Body) != "{}" {
		t.Fatalf("re-insert must return the existing row and its state: %+v %v", again, err)
	}
	var relayed bool
	if err := d.Get(&relayed, `SELECT relayed_at IS NOT NULL FROM dds.events WHERE id = $1`, ev); err != nil || !relayed {
		t.Fatalf("event not marked relayed: %v", err)
	}
}

// TestRecordAttemptsSkipsDeletedDeliveries: a webhook deleted while its
// delivery was being attempted takes the delivery with it; recording that
// attempt must not fail the group it is recorded with (it did, with a
// foreign key violation on webhook_attempts, leaving the group's events to
// be re-relayed and re-sent).
func TestRecordAttemptsSkipsDeletedDeliveries(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "deleted meanwhile")
	var refs []webhook.DeliveryRef
	var hooks []*webhook.Webhook
	for range 2 {
		w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: outbox.Types}, false)
		if err != nil {
			t.Fatal(err)
		}
		ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
		r, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: outbox.EntityCreated, EntityName: "Product", Body: []byte("{}")}}, nil)
		if err != nil || len(r) != 1 {
			t.Fatalf("InsertDeliveries: %+v %v", r, err)
		}
		refs, hooks = append(refs, r[0]), append(hooks, w)
	}
	if err := st.Delete(ctx, tn, hooks[0].ID); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	var recs []webhook.AttemptRecord
	for _, r := range refs {
		recs = append(recs, webhook.AttemptRecord{DeliveryID: r.ID, WebhookID: r.WebhookID, Attempt: 1,
			Result: webhook.Result{StatusCode: 200}, At: now, Status: webhook.StatusSucceeded})
	}
	if err := st.RecordAttempts(ctx, recs, []string{refs[0].EventID, refs[1].EventID}); err != nil {
		t.Fatalf("RecordAttempts with a deleted delivery: %v", err)
	}
	logs, err := st.Deliveries(ctx, tn, hooks[1].ID, 10, "")
	if err != nil || len(logs) != 1 || logs[0].Status != webhook.StatusSucceeded || len(logs[0].AttemptLog) != 1 {
		t.Fatalf("the surviving delivery: %+v %v", logs, err)
	}
	var relayed int
	if err := d.Get(&relayed, `SELECT count(*) FROM dds.events WHERE id = ANY($1::uuid[]) AND relayed_at IS NOT NULL`,
		pq.StringArray{refs[0].EventID, refs[1].EventID}); err != nil || relayed != 2 {
		t.Fatalf("%d of 2 events relayed: %v", relayed, err)
	}
}

// TestFailingForFiveDaysDisables: a failure that extends an unbroken run of
// failures past five days disables the webhook (reason "failing"); a
// success ends the run; a 410 disables at once (reason "gone").
func TestFailingForFiveDaysDisables(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "failing")
	attempt := func(w *webhook.Webhook, code int) *webhook.Webhook {
		t.Helper()
		ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
		r, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: outbox.EntityCreated, EntityName: "Product", Body: []byte("{}")}}, nil)
		if err != nil || len(r) != 1 {
			t.Fatalf("InsertDeliveries: %+v %v", r, err)
		}
		res := webhook.Result{StatusCode: code}
		status := webhook.StatusSucceeded
		if !res.OK() {
			res.Err = "HTTP error"
			status = webhook.StatusRetrying
		}
		if err := st.RecordAttempts(ctx, []webhook.AttemptRecord{{DeliveryID: r[0].ID, WebhookID: w.ID, Attempt: 1, Result: res, At: time.Now(), Status: status}}, nil); err != nil {
			t.Fatal(err)
		}
		got, err := st.Get(ctx, tn, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: outbox.Types}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := attempt(w, 500); !got.IsActive || got.FailingSince == nil {
		t.Fatalf("after one failure: %+v", got)
	}
	if got := attempt(w, 204); !got.IsActive || got.FailingSince != nil {
		t.Fatalf("a success must end the failure run: %+v", got)
	}
	attempt(w, 503)
	if _, err := d.Exec(`UPDATE dds.webhooks SET failing_since = now() - interval '4 days 23 hours' WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	if got := attempt(w, 500); !got.IsActive {
		t.Fatalf("disabled before five days: %+v", got)
	}
	if _, err := d.Exec(`UPDATE dds.webhooks SET failing_since = now() - interval '5 days 1 minute' WHERE id = $1`, w.ID); err != nil {
		t.Fatal(err)
	}
	got := attempt(w, 500)
	if got.IsActive || got.DisabledReason == nil || *got.DisabledReason != webhook.DisabledFailing || got.DisabledAt == nil {
		t.Fatalf("after five days of failures: %+v", got)
	}

	w2, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h2", EventTypes: outbox.Types}, false)
	if err != nil {
		t.Fatal(err)
	}
	got = attempt(w2, 410)
	if got.IsActive || got.DisabledReason == nil || *got.DisabledReason != webhook.DisabledGone {
		t.Fatalf("after 410 Gone: %+v", got)
	}
}

// TestDelivererGoneFailsAndDisables: a retry answered 410 fails the
// delivery at once (no further retries) and disables the webhook.
func TestDelivererGoneFailsAndDisables(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	tn := webhooktest.Tenant(t, d, "gone on retry")
	rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int { return 410 })
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL, EventTypes: outbox.Types}, true)
	if err != nil {
		t.Fatal(err)
	}
	ev := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	refs, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: outbox.EntityCreated, EntityName: "Product", Body: []byte("{}")}}, nil)
	if err != nil || len(refs) != 1 {
		t.Fatalf("InsertDeliveries: %+v %v", refs, err)
	}
	dl := &webhook.Deliverer{Store: st, Client: rc.Client(t)}
	if out, err := dl.Attempt(ctx, refs[0].ID, 5*time.Minute); err != nil || out != webhook.OutcomeFailed {
		t.Fatalf("410 with retries left: %s %v, want failed", out, err)
	}
	got, err := st.Get(ctx, tn, w.ID)
	if err != nil || got.IsActive || got.DisabledReason == nil || *got.DisabledReason != webhook.DisabledGone {
		t.Fatalf("webhook after 410: %+v %v", got, err)
	}
}

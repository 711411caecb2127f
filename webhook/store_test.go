package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/dds-project/dds/apperr"
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
	ev := &webhook.Event{Type: webhook.EventCreated, EntityName: "Product", SchemaName: "shop"}
	tests := []struct {
		name string
		w    webhook.Webhook
		want bool
	}{
		{"type subscribed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}}, true},
		{"type not subscribed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.deleted"}}, false},
		{"inactive", webhook.Webhook{IsActive: false, EventTypes: []string{"entity.created"}}, false},
		{"entity listed", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, EntityNames: []string{"Order", "Product"}}, true},
		{"entity not listed (case-sensitive)", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, EntityNames: []string{"product"}}, false},
		{"schema matches", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, SchemaName: "shop"}, true},
		{"other schema", webhook.Webhook{IsActive: true, EventTypes: []string{"entity.created"}, SchemaName: "blog"}, false},
	}
	for _, tt := range tests {
		if got := tt.w.Matches(ev); got != tt.want {
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
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL + "/hook", EventTypes: webhook.EventTypes}, true)
	if err != nil {
		t.Fatal(err)
	}
	dl := &webhook.Deliverer{Store: st, Client: rc.Client(t)}
	newDelivery := func() string {
		ev := webhooktest.Event(t, d, tn, "shop", webhook.EventCreated, "Product", nil)
		refs, err := st.InsertDeliveries(ctx, []webhook.NewDelivery{{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: webhook.EventCreated, EntityName: "Product", Body: []byte(`{"id":"` + ev + `"}`)}}, nil)
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
	w, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: webhook.EventTypes}, false)
	if err != nil {
		t.Fatal(err)
	}
	ev := webhooktest.Event(t, d, tn, "shop", webhook.EventCreated, "Product", nil)
	nd := webhook.NewDelivery{WebhookID: w.ID, TenantID: tn, EventID: ev, EventType: webhook.EventCreated, EntityName: "Product", Body: []byte("{}")}
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

package webhooks_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// server starts a DDS server on this package's database, talking to the
// package's Temporal dev server (for manual replay).
func server(t *testing.T, allowPrivate bool) *testenv.App {
	t.Helper()
	cfg := testenv.Config(t)
	cfg.WebhookAllowPrivate = allowPrivate
	cfg.DatabaseURL = stack.DBURL
	cfg.TemporalAddress = stack.HostPort
	return testenv.NewServer(t, cfg)
}

type hookView struct {
	ID            string     `json:"id"`
	TargetURL     string     `json:"targetUrl"`
	EventTypes    []string   `json:"eventTypes"`
	EntityNames   []string   `json:"entityNames"`
	SchemaName    *string    `json:"schemaName"`
	SigningSecret *string    `json:"signingSecret"`
	IsActive      bool       `json:"isActive"`
	CreatedAt     time.Time  `json:"createdAt"`
	LastTriggered *time.Time `json:"lastTriggered"`
	SuccessRate   *float64   `json:"successRate"`
	// set while inactive
	DisabledReason *string    `json:"disabledReason"`
	DisabledAt     *time.Time `json:"disabledAt"`
}

type errBody struct {
	Error struct {
		Code    string `json:"code"`
		Details []struct {
			Field string `json:"field"`
		} `json:"details"`
	} `json:"error"`
}

func TestWebhookCRUD(t *testing.T) {
	t.Parallel()
	app := server(t, false)
	_, key := app.Tenant(t)
	_, otherKey := app.Tenant(t)

	bad := []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"targetUrl": "http://example.com/hook", "eventTypes": []string{"entity.created"}}, "targetUrl"},
		{map[string]any{"eventTypes": []string{"entity.created"}}, "targetUrl"},
		{map[string]any{"targetUrl": "https://example.com/hook", "eventTypes": []string{"entity.renamed"}}, "eventTypes"},
		{map[string]any{"targetUrl": "https://example.com/hook"}, "eventTypes"},
		{map[string]any{"targetUrl": "https://example.com/hook", "eventTypes": "entity.created"}, "eventTypes"},
		{map[string]any{"targetUrl": "https://10.0.0.1/hook", "eventTypes": []string{"entity.created"}}, "targetUrl"},
	}
	for _, b := range bad {
		r := app.Must(t, http.StatusBadRequest, "POST", "/api/v1/webhooks", key, b.body)
		var e errBody
		r.Decode(t, &e)
		if len(e.Error.Details) == 0 || e.Error.Details[0].Field != b.field {
			t.Errorf("POST %v: %s; want the field %s named", b.body, r.Body, b.field)
		}
	}

	r := app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": "https://example.com/hook", "eventTypes": []string{"entity.created", "entity.deleted"}, "entityNames": []string{"Product"}})
	var created hookView
	r.Decode(t, &created)
	if created.ID == "" || created.SigningSecret == nil || len(*created.SigningSecret) < 40 || !created.IsActive ||
		len(created.EventTypes) != 2 || len(created.EntityNames) != 1 || created.CreatedAt.IsZero() {
		t.Fatalf("create response %s", r.Body)
	}

	var list struct {
		Webhooks []json.RawMessage `json:"webhooks"`
	}
	app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks", key, nil).Decode(t, &list)
	if len(list.Webhooks) != 1 {
		t.Fatalf("list %d webhooks", len(list.Webhooks))
	}
	var item map[string]any
	_ = json.Unmarshal(list.Webhooks[0], &item)
	if _, ok := item["signingSecret"]; ok {
		t.Fatalf("list leaks the signing secret: %s", list.Webhooks[0])
	}
	for _, k := range []string{"id", "targetUrl", "eventTypes", "entityNames", "isActive", "lastTriggered", "successRate"} {
		if _, ok := item[k]; !ok {
			t.Fatalf("list item lacks %s: %s", k, list.Webhooks[0])
		}
	}
	if item["successRate"] != 1.0 || item["lastTriggered"] != nil {
		t.Fatalf("fresh webhook stats: %s", list.Webhooks[0])
	}
	path := "/api/v1/webhooks/" + created.ID
	if s := app.Do(t, "GET", path, key, nil); s.Status != 200 || json.Valid(s.Body) && string(s.Body) == "" {
		t.Fatalf("GET one: %d %s", s.Status, s.Body)
	}

	// Another tenant sees nothing of it.
	for _, m := range []string{"GET", "PATCH", "DELETE"} {
		var body any
		if m == "PATCH" {
			body = map[string]any{"isActive": false}
		}
		app.Must(t, http.StatusNotFound, m, path, otherKey, body)
	}
	app.Must(t, http.StatusNotFound, "GET", path+"/deliveries", otherKey, nil)
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/webhooks/not-a-uuid", key, nil)

	var patched hookView
	app.Must(t, http.StatusOK, "PATCH", path, key, map[string]any{"isActive": false, "entityNames": nil}).Decode(t, &patched)
	if patched.IsActive || patched.EntityNames != nil || patched.SigningSecret != nil {
		t.Fatalf("patched %+v", patched)
	}
	app.Must(t, http.StatusBadRequest, "PATCH", path, key, map[string]any{"isActive": "no"})
	app.Must(t, http.StatusBadRequest, "PATCH", path, key, map[string]any{"targetUrl": "http://example.com"})
	app.Must(t, http.StatusOK, "PATCH", path, key, map[string]any{"isActive": true})

	// Scopes: webhook:*:read may list but not create or delete.
	var k struct {
		Key string `json:"key"`
	}
	app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "ro", "scopes": []string{"webhook:*:read"}}).Decode(t, &k)
	app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks", k.Key, nil)
	app.Must(t, http.StatusForbidden, "POST", "/api/v1/webhooks", k.Key, map[string]any{"targetUrl": "https://example.com/h", "eventTypes": []string{"entity.created"}})
	app.Must(t, http.StatusForbidden, "DELETE", path, k.Key, nil)

	var dl struct {
		Deliveries []any `json:"deliveries"`
	}
	app.Must(t, http.StatusOK, "GET", path+"/deliveries", key, nil).Decode(t, &dl)
	if dl.Deliveries == nil || len(dl.Deliveries) != 0 {
		t.Fatalf("deliveries of a new webhook: %v", dl.Deliveries)
	}
	app.Must(t, http.StatusNotFound, "POST", path+"/deliveries/0190a5c4-0000-7000-8000-000000000000/retry", key, nil)

	app.Must(t, http.StatusNoContent, "DELETE", path, key, nil)
	app.Must(t, http.StatusNotFound, "GET", path, key, nil)
	app.Must(t, http.StatusNotFound, "DELETE", path, key, nil)
}

var shop = map[string]any{"name": "shop", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER"}}},
	map[string]any{"name": "Order", "fields": []any{
		map[string]any{"name": "total", "type": "NUMBER"}}},
}}

// TestWritesAreDelivered drives real entity writes through the REST API and
// checks what a receiver gets: every event type, the documented payload, both
// signatures, the entity filter, isActive, the delivery log and replay.
func TestWritesAreDelivered(t *testing.T) {
	t.Parallel()
	app := server(t, true)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, shop)
	rc := webhooktest.NewReceiver(t, nil)
	var all, products hookView
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": rc.URL + "/all", "eventTypes": outbox.Types, "schemaName": "shop"}).Decode(t, &all)
	prc := webhooktest.NewReceiver(t, nil)
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": prc.URL + "/products", "eventTypes": []string{"entity.updated"}, "entityNames": []string{"Product"}}).Decode(t, &products)

	var p map[string]any
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "Lamp", "price": 12.5}).Decode(t, &p)
	id := p["id"].(string)
	app.Must(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Product/"+id, key, map[string]any{"price": 15})
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Order", key, map[string]any{"total": 3})
	if r := app.Do(t, "DELETE", "/api/v1/dynamic/Product/"+id, key, nil); r.Status >= 300 {
		t.Fatalf("delete: %d %s", r.Status, r.Body)
	}

	webhooktest.Eventually(t, 30*time.Second, "4 deliveries to the all-events webhook", func() bool { return len(rc.Requests()) >= 4 })
	seen := map[string]int{}
	for _, r := range rc.Requests() {
		if !webhook.VerifyBody(*all.SigningSecret, r.Body, r.Header.Get("X-Webhook-Signature")) ||
			!webhook.VerifyStandard(*all.SigningSecret, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Body, r.Header.Get("webhook-signature")) {
			t.Fatalf("signature does not verify: %v", r.Header)
		}
		var pl webhook.Payload
		if err := json.Unmarshal(r.Body, &pl); err != nil {
			t.Fatal(err)
		}
		var rec map[string]any
		_ = json.Unmarshal(pl.Data.Record, &rec)
		if pl.Tenant.ID != tenantID || pl.Tenant.Name == "" || pl.ID != r.Header.Get("webhook-id") || rec["id"] != pl.Data.EntityID {
			t.Fatalf("payload %s", r.Body)
		}
		seen[pl.Type+" "+pl.Data.EntityName]++
		if pl.Type == "entity.updated" && rec["price"] != 15.0 {
			t.Fatalf("updated record %s", r.Body)
		}
	}
	want := map[string]int{"entity.created Product": 1, "entity.updated Product": 1, "entity.created Order": 1, "entity.deleted Product": 1}
	for k, n := range want {
		if seen[k] != n {
			t.Fatalf("deliveries %v, want %v", seen, want)
		}
	}
	webhooktest.Eventually(t, 30*time.Second, "the filtered webhook's delivery", func() bool { return len(prc.Requests()) >= 1 })

	// Deactivated: a new write is not delivered to it.
	app.Must(t, http.StatusOK, "PATCH", "/api/v1/webhooks/"+products.ID, key, map[string]any{"isActive": false})
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "Chair"}).Decode(t, &p)
	app.Must(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Product/"+p["id"].(string), key, map[string]any{"price": 1})
	webhooktest.Eventually(t, 30*time.Second, "the two new events at the all-events webhook", func() bool { return len(rc.Requests()) >= 6 })
	if n := len(prc.Requests()); n != 1 {
		t.Fatalf("inactive webhook received %d deliveries, want 1", n)
	}

	// The delivery log and stats.
	var dl struct {
		Deliveries []struct {
			ID         string `json:"id"`
			EventID    string `json:"eventId"`
			Status     string `json:"status"`
			Attempts   int    `json:"attempts"`
			AttemptLog []struct {
				StatusCode *int `json:"statusCode"`
				LatencyMs  *int `json:"latencyMs"`
			} `json:"attemptLog"`
		} `json:"deliveries"`
	}
	webhooktest.Eventually(t, 30*time.Second, "6 succeeded deliveries in the log", func() bool {
		app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+all.ID+"/deliveries?status=succeeded", key, nil).Decode(t, &dl)
		return len(dl.Deliveries) == 6
	})
	d0 := dl.Deliveries[0]
	if d0.Attempts != 1 || len(d0.AttemptLog) != 1 || *d0.AttemptLog[0].StatusCode != 200 || d0.AttemptLog[0].LatencyMs == nil {
		t.Fatalf("delivery log entry %+v", d0)
	}
	var list struct {
		Webhooks []hookView `json:"webhooks"`
	}
	app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks", key, nil).Decode(t, &list)
	for _, w := range list.Webhooks {
		if w.ID == all.ID && (w.LastTriggered == nil || *w.SuccessRate != 1) {
			t.Fatalf("stats %+v", w)
		}
	}

	// Manual replay of a succeeded delivery sends the same event again.
	before := len(rc.Requests())
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+all.ID+"/deliveries/"+d0.ID+"/retry", key, nil)
	webhooktest.Eventually(t, 30*time.Second, "the replayed delivery", func() bool { return len(rc.Requests()) > before })
	last := rc.Requests()[len(rc.Requests())-1]
	if last.Header.Get("webhook-id") != d0.EventID {
		t.Fatalf("replay webhook-id %s, want %s", last.Header.Get("webhook-id"), d0.EventID)
	}
}

// TestRelationshipWritesAreDelivered: creating, updating and deleting an
// edge through the REST API each reach a receiver subscribed to the
// relationship event types (and only those), with both ends and the
// properties, signed like every delivery.
func TestRelationshipWritesAreDelivered(t *testing.T) {
	t.Parallel()
	app := server(t, true)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "shop", "entities": shop["entities"], "relationships": []any{
		map[string]any{"name": "CONTAINS", "from": "Order", "to": "Product", "properties": []any{
			map[string]any{"name": "qty", "type": "INTEGER"}}}}})
	rc := webhooktest.NewReceiver(t, nil)
	var hook hookView
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": rc.URL, "eventTypes": []string{outbox.RelationshipCreated, outbox.RelationshipUpdated, outbox.RelationshipDeleted},
		"entityNames": []string{"Product"}}).Decode(t, &hook)

	var p, o, edge map[string]any
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "Lamp"}).Decode(t, &p)
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Order", key, map[string]any{"total": 3}).Decode(t, &o)
	base := "/api/v1/dynamic/Order/" + o["id"].(string) + "/relationships/CONTAINS"
	app.Must(t, http.StatusCreated, "POST", base, key, map[string]any{"targetId": p["id"], "properties": map[string]any{"qty": 2}}).Decode(t, &edge)
	app.Must(t, http.StatusOK, "PATCH", base+"/by-id/"+edge["id"].(string), key, map[string]any{"properties": map[string]any{"qty": 5}})
	if r := app.Do(t, "DELETE", base+"/"+p["id"].(string), key, nil); r.Status >= 300 {
		t.Fatalf("delete edge: %d %s", r.Status, r.Body)
	}

	webhooktest.Eventually(t, 30*time.Second, "three relationship deliveries", func() bool { return len(rc.Requests()) >= 3 })
	var types []string
	for _, r := range rc.Requests() {
		if !webhook.VerifyStandard(*hook.SigningSecret, r.Header.Get("webhook-id"), r.Header.Get("webhook-timestamp"), r.Body, r.Header.Get("webhook-signature")) {
			t.Fatalf("signature does not verify: %s", r.Body)
		}
		var pl webhook.Payload
		if err := json.Unmarshal(r.Body, &pl); err != nil {
			t.Fatal(err)
		}
		d := pl.Data
		var props map[string]any
		_ = json.Unmarshal(d.Properties, &props)
		want := map[string]float64{outbox.RelationshipCreated: 2, outbox.RelationshipUpdated: 5, outbox.RelationshipDeleted: 5}[pl.Type]
		if pl.Tenant.ID != tenantID || d.RelationshipName != "CONTAINS" || d.EdgeID != edge["id"] || d.SourceEntity != "Order" ||
			d.SourceID != o["id"] || d.TargetEntity != "Product" || d.TargetID != p["id"] || props["qty"] != want || d.Record != nil {
			t.Fatalf("payload %s", r.Body)
		}
		types = append(types, pl.Type)
	}
	slices.Sort(types)
	if !slices.Equal(types, []string{outbox.RelationshipCreated, outbox.RelationshipDeleted, outbox.RelationshipUpdated}) {
		t.Fatalf("event types %v (entity events must not reach a relationship-only webhook)", types)
	}
}

// TestGoneDisablesTheWebhook: a receiver answering 410 Gone disables its
// webhook (Standard Webhooks); the listing says why and since when, and
// re-activating clears the reason.
func TestGoneDisablesTheWebhook(t *testing.T) {
	t.Parallel()
	app := server(t, true)
	_, key := app.Tenant(t)
	app.Schema(t, key, shop)
	rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int { return http.StatusGone })
	var hook hookView
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": rc.URL, "eventTypes": outbox.Types}).Decode(t, &hook)
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Order", key, map[string]any{"total": 1})
	var got hookView
	webhooktest.Eventually(t, 30*time.Second, "the webhook disabled", func() bool {
		app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID, key, nil).Decode(t, &got)
		return !got.IsActive
	})
	if got.DisabledReason == nil || *got.DisabledReason != "gone" || got.DisabledAt == nil {
		t.Fatalf("disabled webhook %+v, want reason gone with a time", got)
	}
	var dl struct {
		Deliveries []struct {
			Status string `json:"status"`
		} `json:"deliveries"`
	}
	app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries", key, nil).Decode(t, &dl)
	if len(dl.Deliveries) != 1 || dl.Deliveries[0].Status != webhook.StatusFailed {
		t.Fatalf("deliveries %+v, want one failed (410 is not retried)", dl.Deliveries)
	}
	app.Must(t, http.StatusOK, "PATCH", "/api/v1/webhooks/"+hook.ID, key, map[string]any{"isActive": true}).Decode(t, &got)
	if !got.IsActive || got.DisabledReason != nil || got.DisabledAt != nil {
		t.Fatalf("re-activated webhook %+v", got)
	}
	app.Must(t, http.StatusOK, "PATCH", "/api/v1/webhooks/"+hook.ID, key, map[string]any{"isActive": false}).Decode(t, &got)
	if got.DisabledReason == nil || *got.DisabledReason != "user" {
		t.Fatalf("deactivated webhook %+v, want reason user", got)
	}
}

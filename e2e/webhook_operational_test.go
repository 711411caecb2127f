package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
)

// A webhook subscribed to the operational events receives webhook.disabled
// when another webhook's receiver answers 410, and delivery.exhausted when a
// delivery's retries run out (the deployment's worker retries after 1 s and
// 1 s: DDS_WEBHOOK_RETRY_SCHEDULE), signed like any delivery and matching
// the payload schemas GET /api/v1/event-types lists; the change feed does
// not show them.
func TestWebhookOperationalEvents(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)

	type got struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var ops []got
	var failingIDs []string
	opsRecv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		ops = append(ops, got{r.Header.Clone(), b})
		mu.Unlock()
	}))
	defer opsRecv.Close()
	gone := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusGone)
	}))
	defer gone.Close()
	failing := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		failingIDs = append(failingIDs, r.Header.Get("webhook-id"))
		mu.Unlock()
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
	}))
	defer failing.Close()

	var oh, gh, fh struct{ ID, SigningSecret string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": opsRecv.URL, "eventTypes": []string{"webhook.disabled", "delivery.exhausted"}}).decode(t, &oh)
	// Entity filters do not apply to operational events.
	d.do(t, http.StatusOK, "PATCH", "/api/v1/webhooks/"+oh.ID, key, map[string]any{"entityNames": []string{"Nothing"}})
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": gone.URL, "eventTypes": []string{"entity.created"}}).decode(t, &gh)
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": failing.URL, "eventTypes": []string{"entity.created"}}).decode(t, &fh)
	d.do(t, http.StatusBadRequest, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": opsRecv.URL, "eventTypes": []string{"webhook.exploded"}})

	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "doomed"})

	byType := map[string]got{}
	deadline := time.Now().Add(90 * time.Second)
	for len(byType) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("operational events received: %v", keys(byType))
		}
		time.Sleep(50 * time.Millisecond)
		mu.Lock()
		seen := append([]got(nil), ops...)
		mu.Unlock()
		if len(seen) > 2 {
			t.Fatalf("%d operational deliveries, want 2", len(seen))
		}
		for _, g := range seen {
			var p struct{ Type string }
			if err := json.Unmarshal(g.body, &p); err != nil {
				t.Fatalf("operational delivery is not JSON: %s", g.body)
			}
			byType[p.Type] = g
		}
	}

	// Signed like every delivery.
	for typ, g := range byType {
		mac := hmac.New(sha256.New, []byte(oh.SigningSecret))
		mac.Write(g.body)
		if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); g.header.Get("X-Webhook-Signature") != want {
			t.Errorf("%s: X-Webhook-Signature %q, want %q", typ, g.header.Get("X-Webhook-Signature"), want)
		}
		if g.header.Get("webhook-signature") == "" || g.header.Get("webhook-id") == "" {
			t.Errorf("%s: Standard Webhooks headers missing: %v", typ, g.header)
		}
	}

	// As GET /api/v1/event-types documents them.
	var et struct {
		EventTypes []struct {
			Type   string          `json:"type"`
			Schema json.RawMessage `json:"schema"`
		} `json:"eventTypes"`
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/event-types", key, nil).decode(t, &et)
	schemas := map[string]*openapi3.Schema{}
	for _, x := range et.EventTypes {
		var s openapi3.Schema
		if err := json.Unmarshal(x.Schema, &s); err != nil {
			t.Fatal(err)
		}
		schemas[x.Type] = &s
	}
	for typ, g := range byType {
		var v any
		_ = json.Unmarshal(g.body, &v)
		if schemas[typ] == nil {
			t.Fatalf("GET /api/v1/event-types does not list %s", typ)
		}
		if err := schemas[typ].VisitJSON(v, openapi3.MultiErrors()); err != nil {
			t.Errorf("%s body does not match its schema: %v\n%s", typ, err, g.body)
		}
	}

	var dis struct {
		ID   string
		Data struct {
			WebhookID, TargetURL, Reason string
			LastError                    struct {
				StatusCode *int
				DeliveryID string
			}
		}
	}
	_ = json.Unmarshal(byType["webhook.disabled"].body, &dis)
	if dis.Data.WebhookID != gh.ID || dis.Data.Reason != "gone" || dis.Data.TargetURL != gone.URL ||
		dis.Data.LastError.StatusCode == nil || *dis.Data.LastError.StatusCode != 410 || dis.Data.LastError.DeliveryID == "" {
		t.Errorf("webhook.disabled: %s", byType["webhook.disabled"].body)
	}
	var ex struct {
		Data struct {
			WebhookID, DeliveryID, EventID, EventType string
			Attempts                                  int
			LastStatusCode                            *int
			LastError                                 *string
		}
	}
	_ = json.Unmarshal(byType["delivery.exhausted"].body, &ex)
	mu.Lock()
	sent := append([]string(nil), failingIDs...)
	mu.Unlock()
	if ex.Data.WebhookID != fh.ID || ex.Data.EventType != "entity.created" || ex.Data.Attempts != 3 || len(sent) != 3 ||
		ex.Data.EventID != sent[0] || ex.Data.LastStatusCode == nil || *ex.Data.LastStatusCode != 503 ||
		ex.Data.LastError == nil || ex.Data.DeliveryID == "" {
		t.Errorf("delivery.exhausted: %s (the failing receiver saw %v)", byType["delivery.exhausted"].body, sent)
	}
	// The disabled webhook says so; the exhausted delivery is failed.
	var g struct {
		IsActive       bool
		DisabledReason *string
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/webhooks/"+gh.ID, key, nil).decode(t, &g)
	if g.IsActive || g.DisabledReason == nil || *g.DisabledReason != "gone" {
		t.Errorf("410 webhook: active %v reason %v", g.IsActive, g.DisabledReason)
	}
	var dl struct{ Deliveries []struct{ ID, Status string } }
	d.do(t, http.StatusOK, "GET", "/api/v1/webhooks/"+fh.ID+"/deliveries", key, nil).decode(t, &dl)
	if len(dl.Deliveries) != 1 || dl.Deliveries[0].Status != "failed" || dl.Deliveries[0].ID != ex.Data.DeliveryID {
		t.Errorf("failing webhook's deliveries: %+v", dl.Deliveries)
	}

	// The change feed follows records: the operational events are not in it.
	feed := d.do(t, http.StatusOK, "GET", "/api/v1/events?limit=100", key, nil)
	if strings.Contains(string(feed.Body), "webhook.disabled") || strings.Contains(string(feed.Body), "delivery.exhausted") ||
		!strings.Contains(string(feed.Body), "entity.created") {
		t.Errorf("change feed: %s", feed.Body)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

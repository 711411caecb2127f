package server_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/dds-project/dds/internal/testenv"
)

// Subscriptions are capped per socket and per tenant on a server
// (DDS_SUBSCRIPTIONS_PER_SOCKET, DDS_SUBSCRIPTIONS_PER_TENANT): past a cap,
// subscribe answers an error naming it, the socket stays open, and another
// tenant is not affected by the first one's use of its cap.
func TestSubscriptionCaps(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.SubscriptionsPerSocket = 2
	cfg.SubscriptionsPerTenant = 3
	app := testenv.NewServer(t, cfg)
	tenant := func() string {
		_, admin := app.Tenant(t)
		app.Schema(t, admin, map[string]any{"name": "caps", "entities": []any{
			map[string]any{"name": "Note", "fields": []any{map[string]any{"name": "text", "type": "STRING"}}}}})
		return admin
	}
	subscribe := func(c *websocket.Conn, id string) map[string]any {
		t.Helper()
		if err := c.WriteJSON(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": `subscription { noteCreated { id } }`}}); err != nil {
			t.Fatal(err)
		}
		if err := c.WriteJSON(map[string]any{"type": "ping"}); err != nil {
			t.Fatal(err)
		}
		if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := c.ReadJSON(&m); err != nil {
			t.Fatal(err)
		}
		if m["type"] == "pong" {
			return nil // accepted
		}
		return m
	}
	refused := func(m map[string]any, cap string) {
		t.Helper()
		s := fmt.Sprint(m)
		if m == nil || m["type"] != "error" || !strings.Contains(s, "RATE_LIMITED") || !strings.Contains(s, cap) {
			t.Fatalf("want an error naming %s, got %v", cap, m)
		}
	}
	a := tenant()
	c1 := openSocket(t, app, a)
	for _, id := range []string{"1", "2"} {
		if m := subscribe(c1, id); m != nil {
			t.Fatalf("subscription %s refused: %v", id, m)
		}
	}
	refused(subscribe(c1, "3"), "DDS_SUBSCRIPTIONS_PER_SOCKET")
	c2 := openSocket(t, app, a)
	if m := subscribe(c2, "1"); m != nil { // the tenant's third
		t.Fatalf("the tenant's third subscription refused: %v", m)
	}
	refused(subscribe(c2, "2"), "DDS_SUBSCRIPTIONS_PER_TENANT")
	// Another tenant still subscribes.
	b := tenant()
	if m := subscribe(openSocket(t, app, b), "1"); m != nil {
		t.Fatalf("another tenant refused: %v", m)
	}
}

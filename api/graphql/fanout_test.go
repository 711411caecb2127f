package graphql

import (
	"fmt"
	"testing"
)

// TestKeyedSubscriptionsAreOfferedOnlyTheirEvents: a subscription whose
// filter requires an equality (name = "p3", or status = live and …) is
// indexed by it, so an event is tested only against the subscriptions its
// record can match, and fan-out costs per matching subscriber rather than
// per subscriber. Each still receives exactly its events, in order.
//
// Not parallel: it counts the shared feed's filter evaluations, which no
// other test may move meanwhile (parallel tests start once the sequential
// ones are done).
func TestKeyedSubscriptionsAreOfferedOnlyTheirEvents(t *testing.T) {
	e := testEnv(t)
	s := newShop(t)
	sub := func(where map[string]any) *wsClient {
		w := connectWS(t, e, s.key)
		w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
			"query":     `subscription($w: ProductWhere) { productCreated(where: $w) { name } }`,
			"variables": map[string]any{"w": where}}})
		w.send(map[string]any{"type": "ping"})
		if m := w.read(); m["type"] != "pong" {
			t.Fatalf("%v", m)
		}
		return w
	}
	const n = 40
	byName := make([]*wsClient, n)
	for i := range byName {
		byName[i] = sub(map[string]any{"name": map[string]any{"equals": fmt.Sprintf("p%d", i)}})
	}
	liveAndDear := sub(map[string]any{"AND": []any{
		map[string]any{"status": map[string]any{"equals": "live"}}, map[string]any{"price": map[string]any{"gt": 10}}}})
	dear := sub(map[string]any{"price": map[string]any{"gt": 10}}) // no equality: offered every event
	local0, sql0 := e.Feed.Matches()
	writes := []struct {
		name   string
		price  float64
		status string
	}{{"p3", 20, "live"}, {"p7", 5, "draft"}, {"p3", 1, "live"}, {"zz", 50, "live"}, {"p39", 11, "draft"}}
	for _, w := range writes {
		e.create(t, s.tenant, "Product", map[string]any{"name": w.name, "price": w.price, "status": w.status})
	}
	expect := func(w *wsClient, names ...string) {
		t.Helper()
		for _, want := range names {
			m := cursorless(t, w.read())
			p, _ := m["payload"].(map[string]any)
			d, _ := p["data"].(map[string]any)
			c, _ := d["productCreated"].(map[string]any)
			if c["name"] != want {
				t.Fatalf("got %v, want %s", m, want)
			}
		}
	}
	expect(byName[3], "p3", "p3")
	expect(byName[7], "p7")
	expect(liveAndDear, "p3", "zz")
	expect(dear, "p3", "zz", "p39")
	expect(byName[39], "p39") // the last event: every evaluation is done
	local, sql := e.Feed.Matches()
	// dear tests all 5 events; the name-keyed ones p3 twice, p7, p39 (zz
	// has no subscriber); the status-keyed one the 3 live events. Without
	// the index: 5 events × 42 subscriptions = 210.
	if got := local - local0; got != 5+4+3 || sql != sql0 {
		t.Fatalf("%d filter evaluations in Go and %d in SQL, want 12 and 0", got, sql-sql0)
	}
	// The others saw nothing: their next frame is the answer to a ping.
	for i, w := range byName {
		if i == 3 || i == 7 || i == 39 {
			continue
		}
		w.send(map[string]any{"type": "ping"})
		if m := w.read(); m["type"] != "pong" {
			t.Fatalf("p%d: %v", i, m)
		}
	}
}

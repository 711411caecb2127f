package graphql

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/dds-project/dds/records"
)

type wsClient struct {
	t *testing.T
	c *websocket.Conn
}

func dialWS(t *testing.T, e *env) *wsClient {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(e.URL, "http")+"/api/v1/dynamic-gql/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &wsClient{t: t, c: c}
}

func (w *wsClient) send(m map[string]any) {
	w.t.Helper()
	if err := w.c.WriteJSON(m); err != nil {
		w.t.Fatal(err)
	}
}

// read returns the next message, failing after a deadline.
func (w *wsClient) read() map[string]any {
	w.t.Helper()
	if err := w.c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		w.t.Fatalf("set read deadline: %v", err)
	}
	var m map[string]any
	if err := w.c.ReadJSON(&m); err != nil {
		w.t.Fatalf("read: %v", err)
	}
	return m
}

func (w *wsClient) closeCode() int {
	w.t.Helper()
	if err := w.c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		w.t.Fatalf("set read deadline: %v", err)
	}
	for {
		if _, _, err := w.c.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code
			}
			return -1
		}
	}
}

// connectWS opens a socket authenticated with a token minted for key and
// waits for its connection_ack.
func connectWS(t *testing.T, e *env, key string) *wsClient {
	t.Helper()
	p, err := e.Authn.Authenticate(t.Context(), "Bearer "+key)
	if err != nil {
		t.Fatal(err)
	}
	jwt, _, err := e.Authn.Mint(p, p.Scopes, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	w := dialWS(t, e)
	w.send(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + jwt}})
	if m := w.read(); m["type"] != "connection_ack" {
		t.Fatalf("%v", m)
	}
	return w
}

// subscribed connects, subscribes (id "1") to query and returns once the
// server has set the subscription up (a ping sent after it is answered).
func subscribed(t *testing.T, e *env, key, query string) *wsClient {
	t.Helper()
	w := connectWS(t, e, key)
	w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": query}})
	w.send(map[string]any{"type": "ping"})
	if m := w.read(); m["type"] != "pong" {
		t.Fatalf("%v", m)
	}
	return w
}

// cursorless checks that a next frame carries its event's cursor in
// payload.extensions (so any subscription can resume) and removes it, for
// comparing the rest.
func cursorless(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	p, _ := m["payload"].(map[string]any)
	ext, _ := p["extensions"].(map[string]any)
	if c, _ := ext["cursor"].(string); len(c) != 36 {
		t.Fatalf("frame without a cursor: %v", m)
	}
	delete(p, "extensions")
	return m
}

func TestSubscriptions(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := connectWS(t, e, s.key)
	w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query":     `subscription($w: ProductWhere) { productCreated(where: $w) { __typename name price } }`,
		"variables": map[string]any{"w": map[string]any{"price": map[string]any{"gt": 10}}}}})
	w.send(map[string]any{"id": "2", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { gone: productDeleted(where: {name: {startsWith: "Exp"}}) { name } }`}})
	w.send(map[string]any{"type": "ping"})
	if m := w.read(); m["type"] != "pong" {
		t.Fatalf("%v", m)
	}
	// Subscriptions are registered once the ping is answered (in order).
	e.create(t, s.tenant, "Product", map[string]any{"name": "Cheap", "price": 1})
	id := e.create(t, s.tenant, "Product", map[string]any{"name": "Expensive", "price": 100})
	m := cursorless(t, w.read())
	if m["id"] != "1" || m["type"] != "next" {
		t.Fatalf("%v", m)
	}
	b, _ := json.Marshal(m["payload"])
	if string(b) != `{"data":{"productCreated":{"__typename":"Product","name":"Expensive","price":100}}}` {
		t.Errorf("payload %s", b)
	}
	// A query over the socket: one result, then complete.
	w.send(map[string]any{"id": "q", "type": "subscribe", "payload": map[string]any{"query": "{ productsCount }"}})
	if m := w.read(); m["type"] != "next" || m["id"] != "q" {
		t.Fatalf("%v", m)
	}
	if m := w.read(); m["type"] != "complete" || m["id"] != "q" {
		t.Fatalf("%v", m)
	}
	if err := e.Store.Delete(t.Context(), e.scope(t, s.tenant), "Product", id); err != nil {
		t.Fatal(err)
	}
	m = cursorless(t, w.read())
	b, _ = json.Marshal(m)
	if string(b) != `{"id":"2","payload":{"data":{"gone":{"name":"Expensive"}}},"type":"next"}` {
		t.Errorf("deleted: %s", b)
	}
	// Complete stops the feed: events are dispatched in order, so had
	// subscription 1 survived, Pricey's creation would arrive before the
	// deletion subscription 2 reports.
	w.send(map[string]any{"id": "1", "type": "complete"})
	w.send(map[string]any{"type": "ping"})
	w.read()
	e.create(t, s.tenant, "Product", map[string]any{"name": "Pricey", "price": 50})
	id = e.create(t, s.tenant, "Product", map[string]any{"name": "Expired", "price": 60})
	if err := e.Store.Delete(t.Context(), e.scope(t, s.tenant), "Product", id); err != nil {
		t.Fatal(err)
	}
	m = cursorless(t, w.read())
	b, _ = json.Marshal(m)
	if string(b) != `{"id":"2","payload":{"data":{"gone":{"name":"Expired"}}},"type":"next"}` {
		t.Errorf("after complete: %s", b)
	}
	// Invalid filters fail the subscribe with an error message.
	w.send(map[string]any{"id": "3", "type": "subscribe", "payload": map[string]any{"query": `subscription { productCreated(where: {nope: {equals: 1}}) { name } }`}})
	if m := w.read(); m["type"] != "error" || m["id"] != "3" {
		t.Errorf("%v", m)
	}
}

func TestSubscriptionProtocolErrors(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := dialWS(t, e)
	w.send(map[string]any{"type": "connection_init", "payload": map[string]any{"token": "not-a-token"}})
	if c := w.closeCode(); c != 4403 {
		t.Errorf("bad token: close %d", c)
	}
	w = dialWS(t, e)
	w.send(map[string]any{"type": "connection_init", "payload": "Bearer " + s.key})
	if c := w.closeCode(); c != 4400 {
		t.Errorf("init payload not an object: close %d", c)
	}
	w = dialWS(t, e)
	w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": "{ __typename }"}})
	if c := w.closeCode(); c != 4401 {
		t.Errorf("subscribe before init: close %d", c)
	}
	w = dialWS(t, e)
	if c := w.closeCode(); c != 4408 {
		t.Errorf("no init: close %d", c)
	}
	w = dialWS(t, e)
	w.send(map[string]any{"type": "connection_init", "payload": map[string]any{"token": s.key}})
	w.read()
	w.send(map[string]any{"type": "connection_init"})
	if c := w.closeCode(); c != 4429 {
		t.Errorf("second init: close %d", c)
	}
	// Without the subprotocol.
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(e.URL, "http")+"/api/v1/dynamic-gql/ws", http.Header{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if code := (&wsClient{t: t, c: c}).closeCode(); code != 4406 {
		t.Errorf("no subprotocol: close %d", code)
	}
}

// TestSubscriptionRelationshipsAndFiles: a subscription may select the
// record's relationship fields and file metadata; each event then carries
// them as they are when it is dispatched.
func TestSubscriptionRelationshipsAndFiles(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := dialWS(t, e)
	w.send(map[string]any{"type": "connection_init", "payload": map[string]any{"token": s.key}})
	if m := w.read(); m["type"] != "connection_ack" {
		t.Fatalf("%v", m)
	}
	w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { productUpdated { name categories(orderBy: [{field: "name"}]) { name } manualFile { fileName } } }`}})
	w.send(map[string]any{"id": "2", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { productDeleted { name categories { name } } }`}})
	if m := w.read(); m["type"] != "error" || m["id"] != "2" {
		t.Errorf("relationship fields of a deleted record: %v", m)
	}
	w.send(map[string]any{"type": "ping"})
	if m := w.read(); m["type"] != "pong" {
		t.Fatalf("%v", m)
	}
	if _, err := e.Store.Update(t.Context(), e.scope(t, s.tenant), "Product", s.p[0], map[string]any{"name": "Green apple"}, records.Patch); err != nil {
		t.Fatal(err)
	}
	m := cursorless(t, w.read())
	if m["id"] != "1" || m["type"] != "next" {
		t.Fatalf("%v", m)
	}
	jsonEq(t, m["payload"], `{"data":{"productUpdated":{"name":"Green apple","categories":[{"name":"Fruit"}],"manualFile":null}}}`)
}

// TestRelationshipSubscriptions: edge writes reach subscriptions as
// relationship events carrying the edge.
func TestRelationshipSubscriptions(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := dialWS(t, e)
	w.send(map[string]any{"type": "connection_init", "payload": map[string]any{"token": s.key}})
	if m := w.read(); m["type"] != "connection_ack" {
		t.Fatalf("%v", m)
	}
	for id, f := range map[string]string{"c": "Created", "u": "Updated", "d": "Deleted"} {
		w.send(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{
			"query": `subscription { edge: productCategoriesInCategoryRelationship` + f + ` { __typename id from to properties { position } } }`}})
	}
	w.send(map[string]any{"type": "ping"})
	if m := w.read(); m["type"] != "pong" {
		t.Fatalf("%v", m)
	}
	sc := e.scope(t, s.tenant)
	raw, err := e.Store.CreateEdge(t.Context(), sc, "Product", s.p[2], "IN_CATEGORY", s.c[0], map[string]any{"position": json.Number("7")})
	if err != nil {
		t.Fatal(err)
	}
	var edge struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(raw, &edge); err != nil || edge.ID == "" {
		t.Fatalf("created edge %s: %v", raw, err)
	}
	want := `{"data":{"edge":{"__typename":"InCategoryRelationship","id":"` + edge.ID + `","from":"` + s.p[2] + `","to":"` + s.c[0] + `","properties":{"position":%s}}}}`
	m := cursorless(t, w.read())
	if m["id"] != "c" || m["type"] != "next" {
		t.Fatalf("created: %v", m)
	}
	jsonEq(t, m["payload"], strings.Replace(want, "%s", "7", 1))
	if _, err := e.Store.UpdateEdgeByID(t.Context(), sc, "Product", s.p[2], "IN_CATEGORY", edge.ID, map[string]any{"position": json.Number("8")}); err != nil {
		t.Fatal(err)
	}
	if m = cursorless(t, w.read()); m["id"] != "u" {
		t.Fatalf("updated: %v", m)
	}
	jsonEq(t, m["payload"], strings.Replace(want, "%s", "8", 1))
	if _, err := e.Store.DeleteEdgeByID(t.Context(), sc, "Product", s.p[2], "IN_CATEGORY", edge.ID); err != nil {
		t.Fatal(err)
	}
	if m = cursorless(t, w.read()); m["id"] != "d" {
		t.Fatalf("deleted: %v", m)
	}
	jsonEq(t, m["payload"], strings.Replace(want, "%s", "8", 1))
}

// TestSubscriptionBurst: a subscriber sees every event of a burst, once:
// creates one after another arrive in creation order, and creates from
// many writers at once all arrive, although each notification announces
// many events.
func TestSubscriptionBurst(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := subscribed(t, e, s.key, `subscription { productCreated { id name } }`)
	const n = 120
	next := func() (id, name string) {
		t.Helper()
		m := w.read()
		var x struct {
			Type    string
			Payload struct {
				Data struct{ ProductCreated struct{ ID, Name string } }
			}
		}
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &x); err != nil || x.Type != "next" {
			t.Fatalf("got %s", b)
		}
		return x.Payload.Data.ProductCreated.ID, x.Payload.Data.ProductCreated.Name
	}

	// One writer: creation order.
	var want []string
	for i := range n {
		want = append(want, e.create(t, s.tenant, "Product", map[string]any{"name": fmt.Sprint("seq", i), "price": i}))
	}
	for i, id := range want {
		if got, name := next(); got != id || name != fmt.Sprint("seq", i) {
			t.Fatalf("event %d is %s (%s), want %s (seq%d)", i, got, name, id, i)
		}
	}

	// Eight writers at once: every event, each once.
	var wg sync.WaitGroup
	ids := make(chan string, n)
	sc := e.scope(t, s.tenant)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 8 {
				raw, err := e.Store.Create(t.Context(), sc, "Product", normAll(t, map[string]any{"name": fmt.Sprint("par", g, "-", i), "price": i}))
				var rec struct{ ID string }
				if err == nil {
					err = json.Unmarshal(raw, &rec)
				}
				if err != nil {
					t.Error(err)
					return
				}
				ids <- rec.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	if t.Failed() {
		return
	}
	pending := map[string]bool{}
	for id := range ids {
		pending[id] = true
	}
	for range n {
		id, _ := next()
		if !pending[id] {
			t.Fatalf("event for %s: not created in the burst, or seen twice", id)
		}
		delete(pending, id)
	}
}

// TestSubscriptionSkipsEventsWrittenBefore: announcements follow commits in
// batches, so one may arrive after a subscription was set up for an event
// written before it. The subscription follows only what is written after
// it starts.
func TestSubscriptionSkipsEventsWrittenBefore(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	var early string
	if err := e.DB.Get(&early, `SELECT id FROM dds.events WHERE tenant_id = $1 AND type = 'entity.created' ORDER BY seq LIMIT 1`, s.tenant); err != nil {
		t.Fatal(err)
	}
	w := subscribed(t, e, s.key, `subscription { productCreated { id name } }`)
	e.Feed.Notify(s.tenant + ":" + early) // a late announcement of Apple's creation
	late := e.create(t, s.tenant, "Product", map[string]any{"name": "Late", "price": 1})
	m := w.read()
	b, _ := json.Marshal(m)
	if m["type"] != "next" || !strings.Contains(string(b), late) || strings.Contains(string(b), "Apple") {
		t.Fatalf("first message = %s, want the event of %s written after subscribing", b, late)
	}
}

// TestSubscriptionsGetEventsWhileEveryConnectionIsBusy: the live feed
// polls the outbox on a connection of its own (records.EventsReader), so
// a subscriber gets its events while every other connection of the
// server's pool is taken — by slow requests, or while a burst grows the
// pool (bench/events measured a poll waiting 0.8 s for a new connection
// when writes started on an idle server). Here a server with a pool of 3
// has every free connection taken, and a write made elsewhere (another
// server on the same database) still reaches its subscriber.
func TestSubscriptionsGetEventsWhileEveryConnectionIsBusy(t *testing.T) {
	t.Parallel()
	writer := testEnv(t)
	s := newShop(t)
	const pool = 3
	e, err := startEnv(os.Getenv("DATABASE_URL"), pool)
	if err != nil {
		t.Fatal(err)
	}
	w := subscribed(t, e, s.key, `subscription { productCreated { id name } }`)
	// A first event shows the feed polling (so holding its connection).
	first := writer.create(t, s.tenant, "Product", map[string]any{"name": "first", "price": 1})
	if got := frameID(t, w.read()); got != first {
		t.Fatalf("first event is for %s, want %s", got, first)
	}
	// Take every connection of the pool that is free.
	taken := 0
	for {
		ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
		c, err := e.DB.Conn(ctx)
		cancel()
		if err != nil {
			break
		}
		defer c.Close()
		taken++
	}
	if taken == pool {
		t.Log("the feed holds no connection of its own: its polls wait for one of these")
	}
	second := writer.create(t, s.tenant, "Product", map[string]any{"name": "second", "price": 2})
	if got := frameID(t, w.read()); got != second {
		t.Fatalf("second event is for %s, want %s", got, second)
	}
}

// frameID is the record id of a productCreated next frame.
func frameID(t *testing.T, m map[string]any) string {
	t.Helper()
	p, _ := m["payload"].(map[string]any)
	d, _ := p["data"].(map[string]any)
	r, _ := d["productCreated"].(map[string]any)
	id, _ := r["id"].(string)
	if m["type"] != "next" || id == "" {
		t.Fatalf("not a productCreated frame: %v", m)
	}
	return id
}

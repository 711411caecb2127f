package graphql

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/records"
)

// replicaEnv is a second server over the same database: its own feed,
// poller, LISTEN connection and socket server, as another replica is.
var replicaEnv teststack.Once[*env]

func testReplica(t testing.TB) *env {
	t.Helper()
	teststack.Need(t, "DATABASE_URL")
	return replicaEnv.Get(t, func(testing.TB) (*env, error) { return startEnv(os.Getenv("DATABASE_URL"), 30) })
}

// change is one <singular>Changed frame.
type change struct {
	ID     string
	Type   string
	Cursor string
	Name   string
	RecID  string
}

func readChange(t *testing.T, w *wsClient) change {
	t.Helper()
	m := w.read()
	var x struct {
		ID      string
		Type    string
		Payload struct {
			Data struct {
				C struct {
					Type   string
					Cursor string
					Record struct{ ID, Name string }
				}
			}
			Errors []struct {
				Message    string
				Extensions map[string]any
			}
		}
	}
	b, _ := json.Marshal(m)
	if err := json.Unmarshal(b, &x); err != nil || x.Type != "next" {
		t.Fatalf("got %s", b)
	}
	c := x.Payload.Data.C
	return change{ID: x.ID, Type: c.Type, Cursor: c.Cursor, Name: c.Record.Name, RecID: c.Record.ID}
}

const changedQuery = `subscription($after: String) { c: productChanged(after: $after) { type cursor record { id name } } }`

func subscribeChanged(t *testing.T, e *env, key string, after string) *wsClient {
	t.Helper()
	w := connectWS(t, e, key)
	vars := map[string]any{}
	if after != "" {
		vars["after"] = after
	}
	w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": changedQuery, "variables": vars}})
	w.send(map[string]any{"type": "ping"})
	if m := w.read(); m["type"] != "pong" {
		t.Fatalf("%v", m)
	}
	return w
}

// TestChangedWaitsForSlowCommitters: seq is taken at insert, so a
// transaction that inserted its event first may commit last. Slow
// transactions hold their events open while fast writers commit later
// ones and the feed polls past them; the subscriber still gets every
// event exactly once, in outbox order. Not parallel: the slow
// transactions hold the horizon of every feed on the database while they
// are open (that is the property under test), which would delay the
// other tests' subscriptions.
func TestChangedWaitsForSlowCommitters(t *testing.T) {
	e := testEnv(t)
	s := newShop(t)
	w := subscribeChanged(t, e, s.key, "")
	origin := e.scope(t, s.tenant).Origin()
	var before int64
	if err := e.DB.Get(&before, `SELECT max(seq) FROM dds.events WHERE tenant_id = $1`, s.tenant); err != nil {
		t.Fatal(err)
	}

	var (
		mu     sync.Mutex
		events []string // event ids, as written
		fast   atomic.Int64
	)
	fastDone := make(chan struct{})
	var wg sync.WaitGroup
	// Fast writers: plain creates, each its own transaction.
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				e.create(t, s.tenant, "Product", map[string]any{"name": fmt.Sprint("fast", g, "-", i), "price": i})
				fast.Add(1)
			}
		}()
	}
	go func() { wg.Wait(); close(fastDone) }()
	// Slow writers: insert an event, then hold the transaction open while
	// fast writers commit at least three events and the feed polls three
	// times, then commit.
	var slow sync.WaitGroup
	for g := range 3 {
		slow.Add(1)
		go func() {
			defer slow.Done()
			for i := range 4 {
				tx, err := e.DB.Beginx()
				if err != nil {
					t.Error(err)
					return
				}
				id, recID := uuid.Must(uuid.NewV7()).String(), uuid.Must(uuid.NewV7()).String()
				name := fmt.Sprint("slow", g, "-", i)
				rec, _ := json.Marshal(map[string]any{"id": recID, "name": name, "price": 1})
				// A write first, as every DDS write statement writes its
				// record before its event (the horizon does not need it:
				// the event's seq default takes the writer lock first).
				if _, err = tx.Exec(`SELECT pg_current_xact_id()`); err == nil {
					_, err = tx.Exec(`INSERT INTO dds.events (id, tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
						VALUES ($1, $2, $3, $4, 'entity.created', 'Product', $5, $6)`, id, origin.TenantID, origin.SchemaID, origin.SchemaName, recID, string(rec))
				}
				if err != nil {
					_ = tx.Rollback()
					t.Error(err)
					return
				}
				f0, p0 := fast.Load(), e.Feed.Polls()
				deadline := time.Now().Add(10 * time.Second)
				for (fast.Load() < f0+3 || e.Feed.Polls() < p0+3) && time.Now().Before(deadline) {
					select {
					case <-fastDone:
						deadline = time.Time{} // nothing more to interleave with
					case <-time.After(time.Millisecond):
					}
				}
				if err := tx.Commit(); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				events = append(events, id)
				mu.Unlock()
			}
		}()
	}
	slow.Wait()
	<-fastDone
	if t.Failed() {
		return
	}
	var want []string
	if err := e.DB.Select(&want, `SELECT id::text FROM dds.events WHERE tenant_id = $1 AND seq > $2 ORDER BY seq`, s.tenant, before); err != nil {
		t.Fatal(err)
	}
	if len(want) != 45+12 {
		t.Fatalf("%d events written, want 57", len(want))
	}
	got := make([]string, 0, len(want))
	for range want {
		got = append(got, readChange(t, w).Cursor)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("delivered in another order or not exactly once:\n got  %v\n want %v", got, want)
	}
	for _, id := range events {
		if !slices.Contains(got, id) {
			t.Fatalf("slow event %s never delivered", id)
		}
	}
}

// TestChangedIsNotHeldByTransactionsWithoutEvents: a transaction that
// writes but writes no event (a bulk job's other work, a migration, a
// client's open transaction) stays open while a record is created: the
// subscriber still gets the create at once, not when that transaction ends.
func TestChangedIsNotHeldByTransactionsWithoutEvents(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := subscribeChanged(t, e, s.key, "")
	tx, err := e.DB.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.Exec(`SELECT pg_current_xact_id()`); err != nil { // a write transaction, with an id
		t.Fatal(err)
	}
	id := e.create(t, s.tenant, "Product", map[string]any{"name": "while-open", "price": 1})
	c := readChange(t, w) // fails at the socket's read deadline if the open transaction held the horizon
	if c.RecID != id || c.Type != "CREATED" {
		t.Fatalf("got %+v, want the create of %s", c, id)
	}
}

// TestChangedResumesOnAnotherReplica: a writer keeps writing; the
// subscriber's socket to one server dies mid-stream and it resumes on a
// second server with the last cursor it received: every event exactly
// once across the two connections, in order.
func TestChangedResumesOnAnotherReplica(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	e2 := testReplica(t)
	s := newShop(t)
	w := subscribeChanged(t, e, s.key, "")
	const n = 150
	done := make(chan []string)
	go func() {
		var ids []string
		for i := range n {
			ids = append(ids, e.create(t, s.tenant, "Product", map[string]any{"name": fmt.Sprint("w", i), "price": i}))
		}
		done <- ids
	}()
	var got []change
	for range 40 {
		got = append(got, readChange(t, w))
	}
	// The socket dies without a close frame; what it had in flight is lost.
	_ = w.c.UnderlyingConn().Close()
	w2 := subscribeChanged(t, e2, s.key, got[len(got)-1].Cursor)
	for len(got) < n {
		got = append(got, readChange(t, w2))
	}
	ids := <-done
	for i, c := range got {
		if c.RecID != ids[i] || c.Type != "CREATED" || c.Name != fmt.Sprint("w", i) {
			t.Fatalf("frame %d is %+v, want the creation of %s (w%d)", i, c, ids[i], i)
		}
	}
	// Nothing more: the next frame is the next write's.
	last := e.create(t, s.tenant, "Product", map[string]any{"name": "after", "price": 1})
	if c := readChange(t, w2); c.RecID != last {
		t.Fatalf("after the writer: %+v, want %s", c, last)
	}
}

// TestChangedCursorExpired: a cursor naming no kept event is refused with
// CURSOR_EXPIRED, never a silent gap; a cursor that is not one is a
// validation error naming after.
func TestChangedCursorExpired(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	for _, tc := range []struct{ after, code, msg string }{
		{uuid.Must(uuid.NewV7()).String(), "CURSOR_EXPIRED", "after: cursor"},
		{"not-a-cursor", "VALIDATION_ERROR", "after: not an event cursor"},
	} {
		w := connectWS(t, e, s.key)
		w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{"query": changedQuery, "variables": map[string]any{"after": tc.after}}})
		m := w.read()
		b, _ := json.Marshal(m)
		if m["type"] != "error" || !strings.Contains(string(b), `"code":"`+tc.code+`"`) || !strings.Contains(string(b), tc.msg) {
			t.Errorf("after %q: %s", tc.after, b)
		}
	}
}

// TestChangedTypesAndPrevious: types filters the changes followed;
// previous is the record an update replaced and the one a delete removed.
func TestChangedTypesAndPrevious(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	w := connectWS(t, e, s.key)
	w.send(map[string]any{"id": "1", "type": "subscribe", "payload": map[string]any{
		"query": `subscription { c: productChanged(types: [UPDATED, DELETED]) { __typename type cursor record { name } previous { name } } }`}})
	w.send(map[string]any{"type": "ping"})
	if m := w.read(); m["type"] != "pong" {
		t.Fatalf("%v", m)
	}
	id := e.create(t, s.tenant, "Product", map[string]any{"name": "One", "price": 1})
	if _, err := e.Store.Update(t.Context(), e.scope(t, s.tenant), "Product", id, map[string]any{"name": "Two"}, records.Patch); err != nil {
		t.Fatal(err)
	}
	if err := e.Store.Delete(t.Context(), e.scope(t, s.tenant), "Product", id); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`{"__typename":"ProductChange","type":"UPDATED","cursor":"%s","record":{"name":"Two"},"previous":{"name":"One"}}`,
		`{"__typename":"ProductChange","type":"DELETED","cursor":"%s","record":{"name":"Two"},"previous":{"name":"Two"}}`,
	} {
		m := w.read()
		p, _ := m["payload"].(map[string]any)
		d, _ := p["data"].(map[string]any)
		c, _ := d["c"].(map[string]any)
		cursor, _ := c["cursor"].(string)
		if len(cursor) != 36 {
			t.Fatalf("no cursor: %v", m)
		}
		jsonEq(t, c, fmt.Sprintf(want, cursor))
	}
}

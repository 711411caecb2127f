package outbox_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// The relay's calls (Claim, Prune) reach every event of a database, so
// these tests run on the package's own database (webhooktest.DB), one at a
// time, each in its own tenant, and assert on their own tenant's events.

// newTenant inserts a tenant; it and its events go when the test ends.
func newTenant(t *testing.T, d *sqlx.DB) outbox.Origin {
	t.Helper()
	var id string
	if err := d.Get(&id, `INSERT INTO dds.tenants (name) VALUES ($1) RETURNING id`, t.Name()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := d.Exec(`DELETE FROM dds.events WHERE tenant_id = $1`, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if _, err := d.Exec(`DELETE FROM dds.tenants WHERE id = $1`, id); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	return outbox.Origin{TenantID: id, SchemaID: uuid.NewString(), SchemaName: "shop"}
}

// write inserts one Product row per name into a scratch table and, in the
// same statement, their events through InsertCTE, as an entity write
// does; commit false rolls the transaction back. It returns the event ids
// the statement reports (outbox.EventIDs).
func write(t *testing.T, d *sqlx.DB, o outbox.Origin, eventType string, commit bool, names ...string) []string {
	t.Helper()
	ctx := context.Background()
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`CREATE TEMP TABLE products (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL) ON COMMIT DROP`); err != nil {
		t.Fatal(err)
	}
	var a query.Args
	src := a.Add(schema.ArrayLiteral(names), "text[]")
	q := fmt.Sprintf(`WITH w AS (INSERT INTO products (name) SELECT n FROM unnest(%s) n RETURNING *),
		e AS (%s)
		SELECT %s`, src, outbox.InsertCTE(&a, o, eventType, "Product", "w"), outbox.EventIDs)
	var list *string
	if err := tx.Get(&list, q, a.List()...); err != nil {
		t.Fatal(err)
	}
	if commit {
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if list == nil {
		return nil
	}
	return strings.Split(*list, ",")
}

// events inserts n committed entity.created events of o.
func events(t *testing.T, d *sqlx.DB, o outbox.Origin, n int) []string {
	t.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("p%d", i)
	}
	return write(t, d, o, outbox.EntityCreated, true, names...)
}

// read returns the events of o among ids, in outbox order.
func read(t *testing.T, d *sqlx.DB, o outbox.Origin, ids []string) []outbox.Event {
	t.Helper()
	evs, err := outbox.ReadMany(context.Background(), d, o.TenantID, ids)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func ids(evs []outbox.Event) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID
	}
	return out
}

// claim claims up to 1000 events of the database for lease and returns
// those of o.
func claim(t *testing.T, s *outbox.Store, o outbox.Origin, lease time.Duration) []outbox.Event {
	t.Helper()
	evs, err := s.Claim(context.Background(), 1000, lease)
	if err != nil {
		t.Fatal(err)
	}
	var own []outbox.Event
	for _, e := range evs {
		if e.TenantID == o.TenantID {
			own = append(own, e)
		}
	}
	return own
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// A write's events are inserted by the write's own statement: one per
// row, carrying the row as its record, and gone with a rolled-back write.
func TestInsertCTEWritesEachRowsEventWithIt(t *testing.T) {
	d := webhooktest.DB(t)
	o := newTenant(t, d)
	got := write(t, d, o, outbox.EntityUpdated, true, "a", "b", "c")
	if len(got) != 3 {
		t.Fatalf("event ids %v, want 3", got)
	}
	evs := read(t, d, o, got)
	if len(evs) != 3 {
		t.Fatalf("read %d events, want 3", len(evs))
	}
	var names []string
	for _, e := range evs {
		var rec struct{ ID, Name string }
		if err := json.Unmarshal(e.Record, &rec); err != nil {
			t.Fatalf("record %s: %v", e.Record, err)
		}
		if e.TenantID != o.TenantID || e.SchemaName != "shop" || e.Type != outbox.EntityUpdated || e.Name != "Product" ||
			e.SubjectID != rec.ID || e.CreatedAt.IsZero() {
			t.Errorf("event %+v (record %s)", e, e.Record)
		}
		names = append(names, rec.Name)
	}
	if !sameSet(names, []string{"a", "b", "c"}) {
		t.Errorf("records %v, want a, b, c", names)
	}

	hw := highWater(t, d, o)
	if rolled := write(t, d, o, outbox.EntityCreated, false, "x"); len(rolled) != 1 {
		t.Fatalf("rolled-back write reported %v", rolled)
	} else if evs := read(t, d, o, rolled); len(evs) != 0 || highWater(t, d, o) != hw {
		t.Errorf("a rolled-back write left events: %+v", evs)
	}
}

// InsertOneCTE stores the event under the id the writer made and bound.
func TestInsertOneCTEUsesTheWritersEventID(t *testing.T) {
	d := webhooktest.DB(t)
	o := newTenant(t, d)
	id := outbox.NewEventID()
	var a query.Args
	idArg := a.Add(id, "uuid")
	rec := uuid.NewString()
	q := fmt.Sprintf(`WITH w AS (SELECT %s AS id, 'one' AS name), e AS (%s) SELECT 1`,
		a.Add(rec, "uuid"), outbox.InsertOneCTE(&a, idArg, o, outbox.EntityDeleted, "Product", "w"))
	if _, err := d.Exec(q, a.List()...); err != nil {
		t.Fatal(err)
	}
	evs := read(t, d, o, []string{id})
	if len(evs) != 1 || evs[0].ID != id || evs[0].SubjectID != rec || evs[0].Type != outbox.EntityDeleted {
		t.Fatalf("events %+v, want the one with id %s", evs, id)
	}
	if v := uuid.MustParse(id).Version(); v != 7 {
		t.Errorf("NewEventID is version %d, want 7 (time-ordered, as the table's default)", v)
	}
}

// A relationship event's record is the edge, with both entity names.
func TestInsertEdgeCTERecordsTheEdge(t *testing.T) {
	d := webhooktest.DB(t)
	o := newTenant(t, d)
	edge, src, dst := uuid.NewString(), uuid.NewString(), uuid.NewString()
	var a query.Args
	q := fmt.Sprintf(`WITH w AS (SELECT %s AS id, %s AS source_id, %s AS target_id, '{"since": 2020}'::jsonb AS properties, now() AS created_at),
		e AS (%s) SELECT %s`, a.Add(edge, "uuid"), a.Add(src, "uuid"), a.Add(dst, "uuid"),
		outbox.InsertEdgeCTE(&a, o, outbox.RelationshipCreated, "IN_CATEGORY", "Product", "Category", "w"), outbox.EventIDs)
	var id string
	if err := d.Get(&id, q, a.List()...); err != nil {
		t.Fatal(err)
	}
	evs := read(t, d, o, []string{id})
	if len(evs) != 1 {
		t.Fatalf("events %+v", evs)
	}
	e := evs[0]
	x, err := e.Edge()
	if err != nil {
		t.Fatal(err)
	}
	if e.Type != outbox.RelationshipCreated || e.Name != "IN_CATEGORY" || e.SubjectID != edge || x.ID != edge ||
		x.Relationship != "IN_CATEGORY" || x.SourceEntity != "Product" || x.SourceID != src || x.TargetEntity != "Category" ||
		x.TargetID != dst || string(x.Properties) != `{"since": 2020}` || x.CreatedAt == "" {
		t.Errorf("event %+v, edge %+v", e, x)
	}
	if got := e.Entities(); !slices.Equal(got, []string{"Product", "Category"}) {
		t.Errorf("Entities() = %v", got)
	}
}

// A held event carries its tenant's name and its record, is taken by no
// other Hold while held, and one its relay deferred comes back once the
// deferral's lease has run out, not before.
func TestHeldEventsComeBackAfterTheirDeferral(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	ctx := context.Background()
	want := events(t, d, o, 3)
	// hold holds every free event and returns the claim and tenant o's.
	hold := func() (*outbox.Held, []outbox.Event) {
		t.Helper()
		h, err := s.Hold(ctx, 1000, 0, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return nil, nil
		}
		var own []outbox.Event
		for _, e := range h.Events {
			if e.TenantID == o.TenantID {
				own = append(own, e)
			}
		}
		return h, own
	}
	h, first := hold()
	if !sameSet(ids(first), want) {
		t.Fatalf("held %v, want %v", ids(first), want)
	}
	var name string
	if err := d.Get(&name, `SELECT name FROM dds.tenants WHERE id = $1`, o.TenantID); err != nil {
		t.Fatal(err)
	}
	for _, e := range first {
		if e.TenantName != name || e.Type != outbox.EntityCreated || len(e.Record) == 0 {
			t.Errorf("held event %+v", e)
		}
	}
	if h2, again := hold(); h2 != nil {
		if err := h2.Release(); err != nil {
			t.Fatal(err)
		}
		if len(again) != 0 {
			t.Fatalf("held twice: %v", ids(again))
		}
	}
	const lease = 200 * time.Millisecond
	start := time.Now()
	if err := h.Finish(ctx, nil, ids(first), lease); err != nil {
		t.Fatal(err)
	}
	var back []outbox.Event
	webhooktest.Eventually(t, 10*time.Second, "the deferral to end", func() bool {
		h3, own := hold()
		if h3 != nil {
			if err := h3.Release(); err != nil {
				t.Fatal(err)
			}
		}
		back = own
		return len(own) > 0
	})
	if elapsed := time.Since(start); elapsed < lease {
		t.Errorf("held again after %s, before the %s deferral ended", elapsed, lease)
	}
	if !sameSet(ids(back), want) {
		t.Errorf("held again %v, want %v", ids(back), want)
	}
}

// A relayed event is never claimed again; a mark in a transaction that
// rolls back is undone.
func TestMarkRelayedEndsTheEventsClaims(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	ctx := context.Background()

	relayed, undone, control := events(t, d, o, 2), events(t, d, o, 1), events(t, d, o, 1)
	if got := claim(t, s, o, 100*time.Millisecond); len(got) != 4 {
		t.Fatalf("claimed %d events, want 4", len(got))
	}
	if err := outbox.MarkRelayed(ctx, d, relayed); err != nil {
		t.Fatal(err)
	}
	if err := outbox.MarkRelayed(ctx, d, nil); err != nil {
		t.Fatalf("marking no events: %v", err)
	}
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := outbox.MarkRelayed(ctx, tx, undone); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}

	var back []string
	webhooktest.Eventually(t, 10*time.Second, "the claims to expire", func() bool {
		back = append(back, ids(claim(t, s, o, time.Hour))...)
		return slices.Contains(back, control[0]) && slices.Contains(back, undone[0])
	})
	if got := ids(claim(t, s, o, time.Hour)); len(got) != 0 {
		t.Errorf("claimed after expiry: %v", got)
	}
	for _, id := range relayed {
		if slices.Contains(back, id) {
			t.Errorf("relayed event %s was claimed again", id)
		}
	}
}

// Prune deletes the events relayed longer ago than the retention, in
// batches, and keeps the rest: recently relayed ones and every unrelayed
// one, however old.
func TestPruneDeletesOnlyEventsRelayedBeforeTheRetention(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	ctx := context.Background()
	const retention = 7 * 24 * time.Hour

	old, recent, pending := events(t, d, o, 3), events(t, d, o, 2), events(t, d, o, 2)
	if err := outbox.MarkRelayed(ctx, d, append(slices.Clone(old), recent...)); err != nil {
		t.Fatal(err)
	}
	// Age the rows as the clock would: relayed 8 days ago, and pending
	// events created 30 days ago.
	if _, err := d.Exec(`UPDATE dds.events SET relayed_at = now() - interval '8 days' WHERE id = ANY($1::uuid[])`, schema.ArrayLiteral(old)); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`UPDATE dds.events SET created_at = now() - interval '30 days' WHERE id = ANY($1::uuid[])`, schema.ArrayLiteral(pending)); err != nil {
		t.Fatal(err)
	}

	n, err := s.Prune(ctx, retention, 2) // batches of 2: the loop runs until a short batch
	if err != nil {
		t.Fatal(err)
	}
	if n < int64(len(old)) {
		t.Errorf("pruned %d events, want at least the %d old ones", n, len(old))
	}
	all := append(append(slices.Clone(old), recent...), pending...)
	if left := ids(read(t, d, o, all)); !sameSet(left, append(slices.Clone(recent), pending...)) {
		t.Errorf("left %v, want the recent %v and the pending %v", left, recent, pending)
	}
}

// ReadMany returns a tenant's events among the ids, in outbox order,
// skipping other tenants' events, unknown and malformed ids.
func TestReadManyReadsTheTenantsEventsInOrder(t *testing.T) {
	d := webhooktest.DB(t)
	o, other := newTenant(t, d), newTenant(t, d)
	var mine []string
	for range 3 { // one statement each: their outbox order is their write order
		mine = append(mine, events(t, d, o, 1)...)
	}
	theirs := events(t, d, other, 1)

	ask := []string{mine[2], "not-a-uuid", theirs[0], mine[0], uuid.NewString(), strings.ToUpper(mine[1])}
	evs := read(t, d, o, ask)
	if !slices.Equal(ids(evs), mine) {
		t.Fatalf("read %v, want %v", ids(evs), mine)
	}
	for i, e := range evs {
		if e.TenantName != "" || e.Seq == 0 || i > 0 && e.Seq <= evs[i-1].Seq {
			t.Errorf("event %d: tenant name %q, seq %d", i, e.TenantName, e.Seq)
		}
	}
	for _, q := range [][]string{nil, {"not-a-uuid"}, {theirs[0]}} {
		if evs := read(t, d, o, q); len(evs) != 0 {
			t.Errorf("ReadMany(%v) = %v, want none", q, ids(evs))
		}
	}
}

func highWater(t *testing.T, d *sqlx.DB, o outbox.Origin) int64 {
	t.Helper()
	hw, err := outbox.HighWater(context.Background(), d, o.TenantID)
	if err != nil {
		t.Fatal(err)
	}
	return hw
}

// HighWater is the position of the tenant's newest event: 0 before any,
// unmoved by other tenants' events.
func TestHighWaterIsTheTenantsNewestEvent(t *testing.T) {
	d := webhooktest.DB(t)
	o, other := newTenant(t, d), newTenant(t, d)
	if hw := highWater(t, d, o); hw != 0 {
		t.Fatalf("high water of a tenant without events: %d", hw)
	}
	evs := read(t, d, o, events(t, d, o, 2))
	newest := evs[len(evs)-1].Seq
	if hw := highWater(t, d, o); hw != newest {
		t.Fatalf("high water %d, want %d", hw, newest)
	}
	events(t, d, other, 1)
	if hw := highWater(t, d, o); hw != newest {
		t.Errorf("another tenant's event moved the high water to %d", hw)
	}
	if err := outbox.MarkRelayed(context.Background(), d, ids(evs)); err != nil {
		t.Fatal(err)
	}
	if hw := highWater(t, d, o); hw != newest {
		t.Errorf("relaying moved the high water to %d", hw)
	}
}

// Relays holding at once never take the same event twice, and together
// take every event.
func TestConcurrentHoldersTakeEachEventOnce(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	want := events(t, d, o, 300)

	const claimers = 8
	var (
		mu      sync.Mutex
		claimed = map[string]int{}
		wg      sync.WaitGroup
		errs    = make(chan error, claimers)
	)
	for range claimers {
		wg.Go(func() {
			for {
				h, err := s.Hold(context.Background(), 7, 0, time.Hour)
				if err != nil {
					errs <- err
					return
				}
				if h == nil {
					return
				}
				mu.Lock()
				for _, e := range h.Events {
					claimed[e.ID]++
				}
				mu.Unlock()
				if err := h.Finish(context.Background(), ids(h.Events), nil, time.Hour); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for id, n := range claimed {
		if n > 1 {
			t.Errorf("event %s claimed %d times", id, n)
		}
	}
	for _, id := range want {
		if claimed[id] == 0 {
			t.Errorf("event %s never claimed", id)
		}
	}
}

package outbox_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// openWrite inserts one event of o in a transaction it leaves open (a slow
// writer) and returns the transaction and the event's seq.
func openWrite(t *testing.T, d *sqlx.DB, o outbox.Origin) (*sqlx.Tx, int64) {
	t.Helper()
	tx, err := d.BeginTxx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if _, err := tx.Exec(`CREATE TEMP TABLE products (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), name text NOT NULL) ON COMMIT DROP`); err != nil {
		t.Fatal(err)
	}
	var a query.Args
	q := fmt.Sprintf(`WITH w AS (INSERT INTO products (name) VALUES ('slow') RETURNING *), e AS (%s) SELECT %s`,
		outbox.InsertCTE(&a, o, outbox.EntityCreated, "Product", "w"), outbox.EventIDs)
	var id string
	if err := tx.Get(&id, q, a.List()...); err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := tx.Get(&seq, `SELECT seq FROM dds.events WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return tx, seq
}

func seqOf(t *testing.T, d *sqlx.DB, id string) int64 {
	t.Helper()
	var seq int64
	if err := d.Get(&seq, `SELECT seq FROM dds.events WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return seq
}

// TestHorizonWaitsOnlyForEarlierSeqs: seq is drawn at insert, so the
// horizon must not pass an event whose transaction is still open (a
// reader would skip it when it commits). But a transaction that drew its
// seq after a committed event does not hold that event back: a feed under
// a steady write load always has a writer in flight, and waiting for all
// of them made every frame wait for the slowest one.
func TestHorizonWaitsOnlyForEarlierSeqs(t *testing.T) {
	d := webhooktest.DB(t)
	o := newTenant(t, d)
	ctx := context.Background()
	var h outbox.Horizon
	advance := func() int64 {
		t.Helper()
		safe, err := h.Advance(ctx, d)
		if err != nil {
			t.Fatal(err)
		}
		return safe
	}

	early, a := openWrite(t, d, o) // drew first, commits last
	b := seqOf(t, d, events(t, d, o, 1)[0])
	late, c := openWrite(t, d, o) // drew after b, still open
	if a >= b || b >= c {
		t.Fatalf("seqs %d, %d, %d: want increasing", a, b, c)
	}
	if safe := advance(); safe >= a {
		t.Fatalf("horizon %d passed the open transaction's event %d", safe, a)
	}
	if err := early.Commit(); err != nil {
		t.Fatal(err)
	}
	if safe := advance(); safe < b || safe >= c {
		t.Fatalf("horizon %d with %d and %d committed and %d open: want at least %d and below %d", safe, a, b, c, b, c)
	}
	if err := late.Commit(); err != nil {
		t.Fatal(err)
	}
	if safe := advance(); safe < c {
		t.Fatalf("horizon %d with every event committed: want at least %d", safe, c)
	}
}

// TestHorizonReadReturnsOnlyProvenEvents: the feed proves its horizon and
// reads the events below it in one round trip. It must give exactly the
// events the proof covers — none past an open transaction's seq (the
// reader would skip it when it commits), every committed one below it —
// and pages of limit events must join without a gap.
func TestHorizonReadReturnsOnlyProvenEvents(t *testing.T) {
	d := webhooktest.DB(t)
	o := newTenant(t, d)
	other := newTenant(t, d)
	ctx := context.Background()
	var h outbox.Horizon
	start, err := h.Advance(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	pos := start
	// readAll reads from pos, page by page, and returns the ids.
	readAll := func(limit int) []string {
		t.Helper()
		var got []string
		for {
			upto, evs, more, err := h.AdvanceRead(ctx, d, []string{o.TenantID}, pos, limit)
			if err != nil {
				t.Fatal(err)
			}
			if upto < pos {
				t.Fatalf("the range went back from %d to %d", pos, upto)
			}
			for _, ev := range evs {
				if ev.Seq <= pos || ev.Seq > upto || ev.TenantID != o.TenantID || len(ev.Record) == 0 {
					t.Fatalf("event %+v outside (%d, %d] or of another tenant", ev, pos, upto)
				}
				got = append(got, ev.ID)
			}
			pos = upto
			if !more {
				return got
			}
		}
	}

	early, a := openWrite(t, d, o) // drew first, commits last
	b := events(t, d, o, 3)
	events(t, d, other, 2) // another tenant's: never read for o
	late, c := openWrite(t, d, o)
	if got := readAll(10); len(got) != 0 || pos >= a {
		t.Fatalf("with %d open: read %v up to %d; want nothing, below it", a, got, pos)
	}
	if err := early.Commit(); err != nil {
		t.Fatal(err)
	}
	got := readAll(2) // a and b's three, in pages of two
	if len(got) != 4 || got[0] != idOfSeq(t, d, a) || !slices.Equal(got[1:], b) {
		t.Fatalf("after the first commit: read %v, want the early event then %v", got, b)
	}
	if pos >= c {
		t.Fatalf("horizon %d passed the open transaction's event %d", pos, c)
	}
	if err := late.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readAll(10); len(got) != 1 || got[0] != idOfSeq(t, d, c) {
		t.Fatalf("after the last commit: read %v, want the late event", got)
	}
}

func idOfSeq(t *testing.T, d *sqlx.DB, seq int64) string {
	t.Helper()
	var id string
	if err := d.Get(&id, `SELECT id FROM dds.events WHERE seq = $1`, seq); err != nil {
		t.Fatal(err)
	}
	return id
}

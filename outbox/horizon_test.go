package outbox_test

import (
	"context"
	"fmt"
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

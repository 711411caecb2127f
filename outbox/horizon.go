package outbox

import (
	"context"
	"database/sql"
	"errors"
	"strconv"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// Reading the outbox as a stream: cursors and the safe horizon.
//
// A reader that resumes "after event X" reads in seq order. But seq is
// taken when a transaction inserts its event, not when it commits: a slow
// transaction may commit seq 10 after a fast one committed seq 11, so a
// reader that delivered 11 and moved past it would never see 10. Events are
// therefore read only up to a safe horizon: a seq H such that every event
// with seq <= H is committed (and visible) or aborted. Past the horizon
// the order is not yet settled; below it, it never changes. Every replica
// computes horizons from the same database, so a cursor taken on one is
// good on every other.
//
// How a horizon is proven (Horizon.Advance): read Q, the sequence's last
// value; then, in a new transaction, take a transaction id B (so B is
// assigned after Q was read). Every seq <= Q was taken by a transaction
// that already had a transaction id when it took it, since each event row
// is produced from a row its statement has just written (InsertCTE's src
// is a data-modifying CTE; writing a row assigns the transaction id before
// the outer INSERT evaluates the seq default). Ids are assigned in
// increasing order, so every transaction that holds a seq <= Q has an id
// < B. Once a later snapshot's xmin (its oldest running transaction) is
// >= B, all of them have ended, and Q is safe. (A snapshot's xmax is not
// such a bound: it is one past the latest *completed* id, and a running
// transaction may hold a larger one; the first version of this proof used
// it and skipped events.) The sampling transaction costs one transaction
// id per sample and commits without waiting for a WAL flush; samples are
// taken only while a server has subscribers and events are arriving, at
// most every provePoll. Under load the proof of one sample is complete at
// the next, so the horizon trails commits by one poll plus the longest
// write transaction in flight, and no event is ever skipped.

// Horizon proves safe horizons from samples (see above). It is used by one
// goroutine at a time.
type Horizon struct {
	pending []horizonSample
	safe    int64
}

type horizonSample struct {
	q int64
	b uint64
}

// Safe is the last proven horizon (0 before the first).
func (h *Horizon) Safe() int64 { return h.safe }

// Pending reports whether samples wait for their proof (poll again soon).
func (h *Horizon) Pending() bool { return len(h.pending) > 0 }

// Advance proves the samples it can with the write transactions running
// now in this database, takes a new sample and returns the newest proven
// horizon.
func (h *Horizon) Advance(ctx context.Context, q sqlx.QueryerContext) (int64, error) {
	var row struct {
		Running pq.StringArray `db:"running"`
		Last    sql.NullInt64  `db:"last"`
	}
	// The running transactions of this database only (a long transaction
	// in another database of the cluster cannot write this outbox, so it
	// must not hold the horizon, as a snapshot's xmin would). Their ids
	// are 32-bit here; the sequence is read in the same statement.
	if err := sqlx.GetContext(ctx, q, &row, `SELECT coalesce(array_agg(backend_xid::text), '{}') AS running,
		pg_sequence_last_value('dds.events_seq_seq') AS last
		FROM pg_stat_activity WHERE datname = current_database() AND backend_xid IS NOT NULL AND pid <> pg_backend_pid()`); err != nil {
		return h.safe, err
	}
	var b string
	// A transaction of its own, after the sequence read: its id bounds
	// every id assigned before.
	if err := sqlx.GetContext(ctx, q, &b, `SELECT pg_current_xact_id()::text FROM (SELECT set_config('synchronous_commit', 'off', true)) c`); err != nil {
		return h.safe, err
	}
	bound, err := strconv.ParseUint(b, 10, 64)
	if err != nil {
		return h.safe, err
	}
	running := make([]uint32, 0, len(row.Running))
	for _, x := range row.Running {
		v, err := strconv.ParseUint(x, 10, 32)
		if err != nil {
			return h.safe, err
		}
		running = append(running, uint32(v))
	}
	h.Prove(running)
	h.pending = append(h.pending, horizonSample{q: row.Last.Int64, b: bound})
	return h.safe, nil
}

// Prove settles the samples none of whose transactions is among running
// (the 32-bit ids of the write transactions running now; exported for
// tests of the proof).
func (h *Horizon) Prove(running []uint32) {
	kept := h.pending[:0]
	for _, s := range h.pending {
		b32 := uint32(s.b)
		done := true
		for _, x := range running {
			if int32(x-b32) < 0 { // x was assigned before b (modulo wraparound)
				done = false
				break
			}
		}
		if done {
			h.safe = max(h.safe, s.q)
		} else {
			kept = append(kept, s)
		}
	}
	h.pending = kept
	// Samples are taken in order, so later ones have larger b and q; a
	// burst of unproven samples is bounded by keeping the newest few.
	if len(h.pending) > 64 {
		h.pending = append(h.pending[:0], h.pending[len(h.pending)-64:]...)
	}
}

// CursorSeq is the outbox position of cursor (an event id) of tenant. A
// cursor that is not an event id is a VALIDATION_ERROR naming field; one
// that names no event of the tenant (pruned past retention, or never
// one of its events) is CURSOR_EXPIRED: the reader must start over rather
// than silently miss what was pruned.
func CursorSeq(ctx context.Context, q sqlx.QueryerContext, tenantID, cursor, field string) (int64, error) {
	u, err := uuid.Parse(cursor)
	if err != nil {
		return 0, apperr.Field(field, "not an event cursor")
	}
	var seq int64
	err = sqlx.GetContext(ctx, q, &seq, `SELECT seq FROM dds.events WHERE id = $1 AND tenant_id = $2`, u.String(), tenantID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, apperr.New(apperr.CursorExpired, "%s: cursor %s is past the events retention (or not an event of this tenant): start again without it", field, cursor)
	}
	return seq, err
}

// ReadRange reads the events of tenants with seq in (after, upto], in
// outbox order, at most limit. Callers read only up to a safe horizon.
func ReadRange(ctx context.Context, q sqlx.QueryerContext, tenantIDs []string, after, upto int64, limit int) ([]Event, error) {
	if len(tenantIDs) == 0 || upto <= after {
		return nil, nil
	}
	var out []Event
	err := sqlx.SelectContext(ctx, q, &out, `SELECT id, tenant_id, '' AS tenant_name, schema_name, type, entity_name, entity_id, record, created_at, seq
		FROM dds.events WHERE tenant_id = ANY($1::uuid[]) AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4`,
		schema.ArrayLiteral(tenantIDs), after, upto, limit)
	return out, err
}

// Previous is the record of the newest event of the same subject written
// before seq (the state an update or delete replaced), nil when none is
// kept.
func Previous(ctx context.Context, q sqlx.QueryerContext, ev *Event) ([]byte, error) {
	var rec []byte
	err := sqlx.GetContext(ctx, q, &rec, `SELECT record FROM dds.events WHERE tenant_id = $1 AND seq < $2 AND entity_id = $3 AND entity_name = $4
		ORDER BY seq DESC LIMIT 1`, ev.TenantID, ev.Seq, ev.SubjectID, ev.Name)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return rec, err
}

// FeedFilter narrows a change feed read: entity (or relationship) names
// and event types; empty means all.
type FeedFilter struct {
	Names, Types []string
}

// ReadFeed reads the events of tenant with seq in (after, upto] that
// pass f, in outbox order, at most limit.
func ReadFeed(ctx context.Context, q sqlx.QueryerContext, tenantID string, after, upto int64, f FeedFilter, limit int) ([]Event, error) {
	if upto <= after {
		return nil, nil
	}
	var out []Event
	err := sqlx.SelectContext(ctx, q, &out, `SELECT id, tenant_id, '' AS tenant_name, schema_name, type, entity_name, entity_id, record, created_at, seq
		FROM dds.events WHERE tenant_id = $1 AND seq > $2 AND seq <= $3
			AND ($4::text[] IS NULL OR entity_name = ANY($4)) AND ($5::text[] IS NULL OR type = ANY($5))
		ORDER BY seq LIMIT $6`, tenantID, after, upto, textArray(f.Names), textArray(f.Types), limit)
	return out, err
}

// textArray binds a list as a text[] literal, nil (NULL) when empty.
func textArray(xs []string) any {
	if len(xs) == 0 {
		return nil
	}
	return schema.ArrayLiteral(xs)
}

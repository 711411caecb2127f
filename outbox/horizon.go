package outbox

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"time"

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
// How a horizon is proven (Horizon.Advance). Every event's seq is drawn by
// dds.next_event_seq() (the column's default, migration 00040), which
// first takes a shared transaction-level advisory lock (the key pair
// (1145324288, 1) that dds.events_horizon_read, migration 00051, reads)
// and only then calls nextval: a transaction holds that lock from before
// it takes its first seq until it ends. A sample reads Q, the sequence's
// last value, and then the set H of transactions holding the lock
// (pg_locks, by virtual transaction id, which is never reused). Any
// transaction holding a seq <= Q took the lock before Q was read, so when H
// was read it was either in H or had ended. Once none of H holds the lock
// any more, every seq <= Q is committed (and visible to a later snapshot)
// or aborted: Q is safe. A sample with an empty H is safe at once.
//
// Only transactions that write events hold the horizon. The first version
// waited for every write transaction of the database (pg_stat_activity),
// so one long transaction that wrote no event at all (a bulk job, a
// migration, a client's open transaction) stalled every live feed and
// change feed of every tenant. A long transaction that does write events
// still holds the horizon, as it must: its events come first in outbox
// order. The lock is never taken exclusively, so it never blocks a writer;
// the sample costs two cheap reads and no transaction id.
//
// Floors: a sample need not wait for every holder. Before it draws its
// first seq, a transaction reads the sequence's last value L and takes a
// second shared advisory lock keyed by the bigint L+1 (tagged with 0x4453,
// "DS", in its top 16 bits), its floor (migration 00050): every seq it draws is at least its floor. A holder of the writer
// lock read after Q that holds a floor F has drawn nothing below F; one
// that holds no floor yet has drawn nothing at all, hence nothing <= Q
// (its floor and draw come after Q was read)... unless it runs an older
// definition of the function, so a sample with a holder without a floor
// falls back to the proof above. Otherwise min(Q, min F - 1) is safe at
// once: every seq at or below it was drawn by a transaction that had ended
// when the holders were read. The horizon then trails commits by one
// sample plus only the transactions that drew a seq before the events it
// releases (which must come first), not every writer in flight beside
// them: under a steady load there is always one, and the slowest of them
// held every event back.
//
// The sample is taken by one SQL function, dds.events_horizon_read
// (migration 00051), which knows the lock keys: the sequence's last value,
// then the holders and their floors in a statement of its own (the order
// of two reads within one statement is not defined).

// Horizon proves safe horizons from samples (see above). It is used by one
// goroutine at a time.
type Horizon struct {
	pending []horizonSample
	safe    int64
	last    int64 // the last sample's q
}

type horizonSample struct {
	q       int64
	holders []string // virtual transaction ids holding the writer lock after q was read
}

// Safe is the last proven horizon (0 before the first).
func (h *Horizon) Safe() int64 { return h.safe }

// Pending reports whether samples wait for their proof (poll again soon).
func (h *Horizon) Pending() bool { return len(h.pending) > 0 }

// Advance proves the samples it can with the event-writing transactions
// running now, takes a new sample and returns the newest proven horizon:
// the sample of dds.events_horizon_read, asked for no tenant's events.
func (h *Horizon) Advance(ctx context.Context, q sqlx.QueryerContext) (int64, error) {
	var r struct {
		Last      int64          `db:"h_last"`
		Holders   pq.StringArray `db:"h_holders"`
		Floor     sql.NullInt64  `db:"h_floor"`
		Floorless int            `db:"h_floorless"`
	}
	if err := sqlx.GetContext(ctx, q, &r, `SELECT h_last, h_holders, h_floor, h_floorless
		FROM dds.events_horizon_read('{}'::uuid[], 0, 0, '{}'::text[]) LIMIT 1`); err != nil {
		return h.safe, err
	}
	h.record(r.Last, r.Holders, r.Floor, r.Floorless)
	return h.safe, nil
}

// record adds the sample (q, then the writers in flight: their virtual
// transaction ids, their lowest floor and how many hold none) and proves
// what it can.
func (h *Horizon) record(q int64, holders []string, floor sql.NullInt64, floorless int) {
	h.last = q
	h.pending = append(h.pending, horizonSample{q: q, holders: holders})
	h.Prove(holders) // the new sample too: one no transaction held is safe at once
	if floorless == 0 && floor.Valid {
		h.safe = max(h.safe, min(q, floor.Int64-1))
		// Samples at or below it need no proof any more.
		h.pending = slices.DeleteFunc(h.pending, func(x horizonSample) bool { return x.q <= h.safe })
	}
}

// Held reports whether the last sample left drawn seqs unproven: the
// sequence had gone past the horizon because a transaction that drew an
// earlier seq was still in flight (its events, and every later one, wait
// for it to end).
func (h *Horizon) Held() bool { return h.last > h.safe }

// AdvanceRead is Advance followed by the read of the events of tenants
// after position after, in one round trip (dds.events_horizon_read,
// migration 00051): it returns the events with seq in (after, upto] in
// outbox order, and upto, the end of the range they cover: the proven
// horizon, or less when the read stopped short of it (at limit events:
// more, read again from upto; or at the function's own bound). The
// function reads the events after sampling, in a statement of its own and
// so with its own snapshot: every event at or below the proven horizon is
// visible to it; any read above it are dropped here and read again once
// proven. It must run under READ COMMITTED (a pool connection, no
// transaction).
func (h *Horizon) AdvanceRead(ctx context.Context, q sqlx.QueryerContext, tenantIDs []string, after int64, limit int) (upto int64, evs []Event, more bool, err error) {
	var rows []struct {
		Last      int64          `db:"h_last"`
		Holders   pq.StringArray `db:"h_holders"`
		Floor     sql.NullInt64  `db:"h_floor"`
		Floorless int            `db:"h_floorless"`
		Bound     int64          `db:"h_bound"`
		ID        sql.NullString `db:"e_id"`
		TenantID  sql.NullString `db:"e_tenant_id"`
		Schema    sql.NullString `db:"e_schema_name"`
		Type      sql.NullString `db:"e_type"`
		Name      sql.NullString `db:"e_entity_name"`
		Subject   sql.NullString `db:"e_entity_id"`
		Record    []byte         `db:"e_record"`
		CreatedAt sql.NullTime   `db:"e_created_at"`
		Seq       sql.NullInt64  `db:"e_seq"`
	}
	if err := sqlx.SelectContext(ctx, q, &rows, `SELECT * FROM dds.events_horizon_read($1::uuid[], $2, $3, $4::text[])`,
		schema.ArrayLiteral(tenantIDs), after, limit, schema.ArrayLiteral(OperationalTypes)); err != nil {
		return after, nil, false, err
	}
	if len(rows) == 0 { // never: the function answers at least the sample
		return after, nil, false, errors.New("outbox: events_horizon_read answered no sample")
	}
	r0 := rows[0]
	h.record(r0.Last, r0.Holders, r0.Floor, r0.Floorless)
	// The events read cover (after, cover]: up to the function's bound
	// (the sampled last value, or below the lowest floor in flight), or to
	// the last one read when the limit cut the read short.
	cover := r0.Bound
	n := len(rows)
	if !rows[0].Seq.Valid {
		n = 0
	}
	if n > 0 && n == limit {
		cover = rows[n-1].Seq.Int64
	}
	upto = min(h.safe, cover)
	if upto <= after {
		return after, nil, false, nil
	}
	more = n == limit && h.safe > cover
	evs = make([]Event, 0, n)
	for _, r := range rows[:n] {
		if r.Seq.Int64 > upto {
			break
		}
		evs = append(evs, Event{ID: r.ID.String, TenantID: r.TenantID.String, SchemaName: r.Schema.String, Type: r.Type.String,
			Name: r.Name.String, SubjectID: r.Subject.String, Record: r.Record, CreatedAt: r.CreatedAt.Time, Seq: r.Seq.Int64})
	}
	return upto, evs, more, nil
}

// Prove settles the samples none of whose holders is among running (the
// virtual transaction ids holding the writer lock now; exported for tests
// of the proof). A sample whose own holders are running stays pending.
func (h *Horizon) Prove(running []string) {
	kept := h.pending[:0]
	for _, s := range h.pending {
		done := true
		for _, x := range s.holders {
			if slices.Contains(running, x) {
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
	// Samples are taken in order, so later ones have larger q; a burst of
	// unproven samples is bounded by keeping the newest few.
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

// SinceSeq is the outbox position just before tenant's first event
// written at or after since (in outbox order): reading after it starts
// there. With no such event it is the tenant's newest position.
func SinceSeq(ctx context.Context, q sqlx.QueryerContext, tenantID string, since time.Time) (int64, error) {
	var seq int64
	err := sqlx.GetContext(ctx, q, &seq, `SELECT coalesce(
		(SELECT seq - 1 FROM dds.events WHERE tenant_id = $1 AND created_at >= $2 ORDER BY seq LIMIT 1),
		(SELECT max(seq) FROM dds.events WHERE tenant_id = $1), 0)`, tenantID, since)
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
		FROM dds.events WHERE tenant_id = ANY($1::uuid[]) AND seq > $2 AND seq <= $3 AND `+recordEventsOnly+` ORDER BY seq LIMIT $4`,
		schema.ArrayLiteral(tenantIDs), after, upto, limit)
	return out, err
}

// Previous is the record of the newest event of the same subject written
// before seq (the state an update or delete replaced), nil when none is
// kept. Like Fields, it is kept on ev (not safe for concurrent use).
func Previous(ctx context.Context, q sqlx.QueryerContext, ev *Event) ([]byte, error) {
	if ev.previous != nil { // read once however many subscribers select it (as Fields)
		return *ev.previous, nil
	}
	var rec []byte
	err := sqlx.GetContext(ctx, q, &rec, `SELECT record FROM dds.events WHERE tenant_id = $1 AND seq < $2 AND entity_id = $3 AND entity_name = $4
		ORDER BY seq DESC LIMIT 1`, ev.TenantID, ev.Seq, ev.SubjectID, ev.Name)
	if errors.Is(err, sql.ErrNoRows) {
		rec, err = nil, nil
	}
	if err == nil {
		ev.previous = &rec
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
		FROM dds.events WHERE tenant_id = $1 AND seq > $2 AND seq <= $3 AND `+recordEventsOnly+`
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

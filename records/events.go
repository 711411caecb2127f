package records

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/outbox"
)

// Reads of the events outbox as a stream, for the live feed and the HTTP
// change feed (outbox owns the SQL; see outbox/horizon.go for why reads
// stop at a proven horizon).

// EventsHorizon advances h by one sample and returns the newest safe
// horizon.
func (s *Store) EventsHorizon(ctx context.Context, h *outbox.Horizon) (int64, error) {
	return h.Advance(ctx, s.db)
}

// EventsReader is a Postgres connection of its own for one reader that
// polls the outbox without pause (the live feed, graphql/live): its polls
// never wait behind the requests for a connection of the shared pool,
// nor for one to be opened when a burst grows the pool. Measured with
// bench/events: when writes start on an idle server, the pool opens
// connections while the first writes run, and a poll that found none free
// waited 0.8 s for its own, holding every subscriber's frames that long.
// Its connection counts against the pool's maximum. Not for concurrent use.
type EventsReader struct{ conn *sqlx.Conn }

// EventsReader takes a connection of the pool for a reader (see
// EventsReader); Close gives it back.
func (s *Store) EventsReader(ctx context.Context) (*EventsReader, error) {
	c, err := s.db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	return &EventsReader{conn: c}, nil
}

// Horizon is Store.EventsHorizon on the reader's connection.
func (r *EventsReader) Horizon(ctx context.Context, h *outbox.Horizon) (int64, error) {
	return h.Advance(ctx, r.conn)
}

// HorizonRead advances h by one sample and reads the events of tenants
// after position after up to the proven horizon, in one round trip
// (outbox.Horizon.AdvanceRead).
func (r *EventsReader) HorizonRead(ctx context.Context, h *outbox.Horizon, tenantIDs []string, after int64, limit int) (int64, []outbox.Event, bool, error) {
	return h.AdvanceRead(ctx, r.conn, tenantIDs, after, limit)
}

// Close gives the connection back to the pool.
func (r *EventsReader) Close() error { return r.conn.Close() }

// EventsRange reads the events of tenants with seq in (after, upto], in
// outbox order, at most limit.
func (s *Store) EventsRange(ctx context.Context, tenantIDs []string, after, upto int64, limit int) ([]outbox.Event, error) {
	return outbox.ReadRange(ctx, s.db, tenantIDs, after, upto, limit)
}

// EventCursor is the outbox position of a cursor of tenant
// (CURSOR_EXPIRED when it names no kept event; field names the input).
func (s *Store) EventCursor(ctx context.Context, tenantID, cursor, field string) (int64, error) {
	return outbox.CursorSeq(ctx, s.db, tenantID, cursor, field)
}

// EventsSince is the outbox position just before tenant's first event
// written at or after since.
func (s *Store) EventsSince(ctx context.Context, tenantID string, since time.Time) (int64, error) {
	return outbox.SinceSeq(ctx, s.db, tenantID, since)
}

// PreviousEventRecord is the record of ev's subject before ev (nil when not kept).
func (s *Store) PreviousEventRecord(ctx context.Context, ev *outbox.Event) ([]byte, error) {
	return outbox.Previous(ctx, s.db, ev)
}

// EventFeed reads a page of the change feed of tenant (see outbox.ReadFeed).
func (s *Store) EventFeed(ctx context.Context, tenantID string, after, upto int64, f outbox.FeedFilter, limit int) ([]outbox.Event, error) {
	return outbox.ReadFeed(ctx, s.db, tenantID, after, upto, f, limit)
}

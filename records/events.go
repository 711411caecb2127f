package records

import (
	"context"
	"time"

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

// EventsHorizonRead advances h by one sample and reads the events of
// tenants after position after up to the proven horizon, in one round
// trip (outbox.Horizon.AdvanceRead).
func (s *Store) EventsHorizonRead(ctx context.Context, h *outbox.Horizon, tenantIDs []string, after int64, limit int) (int64, []outbox.Event, bool, error) {
	return h.AdvanceRead(ctx, s.db, tenantIDs, after, limit)
}

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

package outbox

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/schema"
)

// Held claims: the relay's claim as row locks of an open transaction.
//
// Claim writes claimed_until on every event it takes (a new row version
// with an entry in each of the table's indexes, since the pending index's
// predicate names relayed_at) and the relayed mark writes the row again: two
// row versions per event. Hold takes the same events with FOR UPDATE SKIP
// LOCKED and keeps the transaction open while the relay works on them, so
// the claim costs a row lock (no new version, no index entry) and the only
// write is the relayed mark, made by the same transaction when the batch is
// done (Held.Finish). A relay that dies ends its transaction with its
// connection, so its events are free at once instead of after a lease.
//
// What the open transaction costs, and its bounds:
//   - It holds a connection and a transaction id for the batch's duration,
//     which the caller bounds with the context given to Hold (the relay's
//     batch timeout): when it ends, the transaction is rolled back. A
//     transaction id held open keeps vacuum from removing row versions
//     newer than it for that long (seconds).
//   - It holds back no change feed: the safe horizon (horizon.go) waits
//     only for transactions that write events, and a held claim writes
//     none (operational events are written by the recording transactions).
//   - idle_in_transaction_session_timeout is set, for this transaction
//     only, to the lease: a relay that stops talking to Postgres without
//     closing its connection (a paused process, a lost network) loses its
//     claim within one lease, as an expiring claim did. Held.Touch, which
//     the relay calls every third of the lease, keeps a working relay's
//     claim.
//   - What the batch records (delivery rows) is committed by separate
//     transactions as results arrive, as before: a crash repeats no more
//     than it did with expiring claims.
//
// An event with claimed_until in the future (an expiring claim, of a relay
// of an earlier version or one that deferred it, see Finish) is skipped as
// Claim skips it, and Claim skips held events (SKIP LOCKED): both kinds of
// relay can share one outbox.

// Held is a batch of events claimed by Hold. Its methods are safe for
// concurrent use (the relay's keep-alive and its batch share it).
type Held struct {
	Events []Event

	mu sync.Mutex
	tx *sqlx.Tx // nil once finished or released
}

// Hold claims up to n unrelayed events after seq `after` (0: from the
// head; a relay draining a backlog holds each batch after the previous one,
// and from the head at least every poll interval), oldest first, as row
// locks of a transaction that stays open until Finish or Release, or until
// ctx ends (then it is rolled back). lease bounds how long the transaction may sit idle (see above).
// It returns nil when no event is free.
func (s *Store) Hold(ctx context.Context, n int, after int64, lease time.Duration) (*Held, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	var evs []Event
	// set_config(..., true) lasts until the transaction ends: the idle
	// bound, and a commit (the relayed mark) that does not wait for its
	// flush, as every relay bookkeeping transaction (a lost mark re-relays
	// events whose deliveries are recorded: none is sent again).
	err = tx.SelectContext(ctx, &evs, `WITH cfg AS MATERIALIZED (
			SELECT set_config('idle_in_transaction_session_timeout', $3, true) AS idle, set_config('synchronous_commit', 'off', true) AS sync)
		SELECT e.id, e.tenant_id, COALESCE((SELECT name FROM dds.tenants t WHERE t.id = e.tenant_id), '') AS tenant_name,
			e.schema_name, e.type, e.entity_name, e.entity_id, e.record, e.created_at, e.seq
		FROM cfg, dds.events e
		WHERE e.relayed_at IS NULL AND e.seq > $2 AND (e.claimed_until IS NULL OR e.claimed_until < now())
		ORDER BY e.seq LIMIT $1 FOR UPDATE OF e SKIP LOCKED`, n, after, strconv.FormatInt(max(lease.Milliseconds(), 1), 10))
	if err != nil || len(evs) == 0 {
		_ = tx.Rollback()
		return nil, err
	}
	return &Held{Events: evs, tx: tx}, nil
}

// Touch keeps the claim: a statement resets the transaction's idle bound.
func (h *Held) Touch(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tx == nil {
		return nil
	}
	_, err := h.tx.ExecContext(ctx, `SELECT 1`)
	return err
}

// Finish marks relayed the events of relayed, gives the events of
// deferred an expiring claim of lease (events the relay could not relay
// now, which should not be claimed again at once: a payload that cannot
// be built, a batch whose recording failed), and commits, which releases
// every held event. Ids must be among the held events'. It ends the claim
// whatever it returns (on an error the transaction is rolled back).
func (h *Held) Finish(ctx context.Context, relayed, deferred []string, lease time.Duration) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tx == nil {
		return fmt.Errorf("outbox: held claim already ended")
	}
	tx := h.tx
	h.tx = nil
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op; on error the transaction is abandoned
	if err := MarkRelayed(ctx, tx, relayed); err != nil {
		return err
	}
	if len(deferred) > 0 {
		// From now, not now(): that is the transaction's start, when the
		// events were held, and a batch that worked for most of a lease
		// would defer its events for what little is left of it.
		if _, err := tx.ExecContext(ctx, `UPDATE dds.events SET claimed_until = clock_timestamp() + $2 * interval '1 millisecond'
			WHERE id = ANY($1::uuid[]) AND relayed_at IS NULL`, schema.ArrayLiteral(sortedIDs(deferred)), lease.Milliseconds()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Release ends the claim without marking anything: every held event is
// free for the next claim at once.
func (h *Held) Release() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.tx == nil {
		return nil
	}
	tx := h.tx
	h.tx = nil
	return tx.Rollback()
}

package webhook

// Pacing of rate-limited webhooks (docs/webhooks.md, "Rate limit").
//
// A webhook with rateLimit r gets at most r deliveries started in any
// window of one second, whichever worker or retry workflow starts them.
// The shared state is one row per webhook, dds.webhook_pacing(next_slot):
// the earliest time its next delivery may start. Slots are handed out
// Interval(r) apart, in the database's clock, under the row's lock:
//   - the pacer (relay) claims queued deliveries together with their slots
//     in one transaction (ClaimPaced), at most PaceHorizon ahead;
//   - a retry activity reserves one slot the same way (ReserveSlot).
// Nobody sleeps holding a connection: the transaction ends, then the
// caller waits for its slot in memory. A caller that starts a delivery
// more than PaceLateness after its slot must not send it (the slot is
// lost, the delivery takes a new one): the spacing Interval leaves room for
// that lateness, so the limit holds for the start times of the POSTs.

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"
)

const (
	// PaceHorizon is how far ahead the pacer claims slots.
	PaceHorizon = 500 * time.Millisecond
	// PaceLateness is the most a delivery may start after its slot.
	PaceLateness = 50 * time.Millisecond
	// paceSlack is the part of the spacing that absorbs lateness: a start
	// up to PaceLateness late plus up to 50 ms of clock difference between
	// worker and database or of transit jitter to the receiver.
	paceSlack = 100 * time.Millisecond
	// maxPacedClaim bounds the deliveries one pacing claim takes.
	maxPacedClaim = 500
)

// Interval is the spacing of a rate limit's slots: (1 s + slack) / r, so
// any one-second window holds at most r starts even when each is up to the
// slack late: r slots spaced Interval apart span more than 1 s + slack.
func Interval(rate int) time.Duration {
	return (time.Second + paceSlack) / time.Duration(rate)
}

// PacedDelivery is a queued delivery claimed with its slot.
type PacedDelivery struct {
	ID        string    `db:"id"`
	WebhookID string    `db:"webhook_id"`
	EventID   string    `db:"event_id"`
	Attempts  int       `db:"attempts"`
	Body      []byte    `db:"body"`
	CreatedAt time.Time `db:"created_at"`
	Slot      time.Time `db:"-"`
}

// PacedClaim is what ClaimPaced took for one webhook.
type PacedClaim struct {
	Hook       *Webhook
	Deliveries []PacedDelivery // in slot order (oldest delivery first)
}

// PacedBacklog returns the webhooks with queued deliveries nobody has
// claimed whose next slot is within the horizon.
func (s *Store) PacedBacklog(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.db.SelectContext(ctx, &ids, `SELECT p.webhook_id FROM dds.webhook_pacing p
		WHERE p.next_slot < clock_timestamp() + $1::interval AND EXISTS (SELECT 1 FROM dds.webhook_deliveries d
			WHERE d.webhook_id = p.webhook_id AND d.status = 'queued'
			AND (d.claimed_until IS NULL OR d.claimed_until < clock_timestamp()))`, interval(PaceHorizon))
	return ids, err
}

// ClaimPaced claims, for one webhook, the queued deliveries whose slots
// fall within PaceHorizon (oldest first) with an expiring claim of lease,
// and advances the webhook's next slot past them, in one transaction. It
// takes nothing when another worker holds the webhook's pacing row at that
// moment (it is pacing it). Queued deliveries of an inactive webhook are
// cancelled. Without a rate limit (removed after they were queued) the
// deliveries are claimed without slots (zero Slot: send at once).
func (s *Store) ClaimPaced(ctx context.Context, webhookID string, lease time.Duration) (*PacedClaim, error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var row struct {
		Next time.Time `db:"next_slot"`
		Now  time.Time `db:"now"`
	}
	err = tx.GetContext(ctx, &row, `SELECT greatest(next_slot, clock_timestamp()) AS next_slot, clock_timestamp() AS now
		FROM dds.webhook_pacing WHERE webhook_id = $1 FOR UPDATE SKIP LOCKED`, webhookID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var w Webhook
	if err := tx.GetContext(ctx, &w, `SELECT `+webhookCols+` FROM dds.webhooks WHERE id = $1`, webhookID); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		return nil, err
	}
	if !w.IsActive {
		if _, err := tx.ExecContext(ctx, `UPDATE dds.webhook_deliveries SET status = 'cancelled', next_attempt_at = NULL, updated_at = now()
			WHERE webhook_id = $1 AND status = 'queued'`, webhookID); err != nil {
			return nil, err
		}
		return &PacedClaim{Hook: &w}, tx.Commit()
	}
	n := maxPacedClaim
	var step time.Duration
	if w.RateLimit != nil {
		step = Interval(*w.RateLimit)
		room := row.Now.Add(PaceHorizon).Sub(row.Next)
		if room <= 0 {
			return &PacedClaim{Hook: &w}, nil
		}
		n = min(n, int(math.Ceil(float64(room)/float64(step))))
	}
	var ds []PacedDelivery
	err = tx.SelectContext(ctx, &ds, `UPDATE dds.webhook_deliveries d SET claimed_until = clock_timestamp() + $3::interval
		WHERE d.id IN (SELECT id FROM dds.webhook_deliveries WHERE webhook_id = $1 AND status = 'queued'
			AND (claimed_until IS NULL OR claimed_until < clock_timestamp())
			ORDER BY created_at, id LIMIT $2 FOR UPDATE SKIP LOCKED)
		RETURNING d.id, d.webhook_id, d.event_id, d.attempts, d.body, d.created_at`, webhookID, n, interval(lease))
	if err != nil {
		return nil, err
	}
	sortPaced(ds)
	if step > 0 && len(ds) > 0 {
		for i := range ds {
			ds[i].Slot = row.Next.Add(time.Duration(i) * step)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE dds.webhook_pacing SET next_slot = $2 WHERE webhook_id = $1`,
			webhookID, row.Next.Add(time.Duration(len(ds))*step)); err != nil {
			return nil, err
		}
	}
	return &PacedClaim{Hook: &w, Deliveries: ds}, tx.Commit()
}

func sortPaced(ds []PacedDelivery) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && (ds[j].CreatedAt.Before(ds[j-1].CreatedAt) ||
			ds[j].CreatedAt.Equal(ds[j-1].CreatedAt) && ds[j].ID < ds[j-1].ID); j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// ReleasePaced gives claimed queued deliveries back (their slot was missed):
// the next pacing claim takes them with new slots.
func (s *Store) ReleasePaced(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := s.db.ExecContext(ctx, `UPDATE dds.webhook_deliveries SET claimed_until = NULL
		WHERE id = ANY($1::uuid[]) AND status = 'queued'`, ids)
	return err
}

// ReserveSlot reserves one slot of a rate-limited webhook for a retry (a
// retry is a delivery too: it counts against the limit). It reserves up to
// twice PaceHorizon ahead, so retries are never starved by the pacer,
// which claims only PaceHorizon ahead. ok false: the next free slot is
// further; wait is how long until it comes within reach. Without a rate
// limit (or a pacing row) it returns ok with a zero slot: send at once.
func (s *Store) ReserveSlot(ctx context.Context, webhookID string) (slot time.Time, wait time.Duration, ok bool, err error) {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return time.Time{}, 0, false, err
	}
	defer tx.Rollback()
	var row struct {
		Next time.Time `db:"next_slot"`
		Now  time.Time `db:"now"`
		Rate *int      `db:"rate_limit"`
	}
	err = tx.GetContext(ctx, &row, `SELECT greatest(p.next_slot, clock_timestamp()) AS next_slot, clock_timestamp() AS now, w.rate_limit
		FROM dds.webhook_pacing p JOIN dds.webhooks w ON w.id = p.webhook_id WHERE p.webhook_id = $1 FOR UPDATE OF p`, webhookID)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, 0, true, nil
	}
	if err != nil {
		return time.Time{}, 0, false, err
	}
	if row.Rate == nil {
		return time.Time{}, 0, true, nil
	}
	if ahead := row.Next.Sub(row.Now); ahead > 2*PaceHorizon {
		return time.Time{}, ahead - 2*PaceHorizon, false, nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dds.webhook_pacing SET next_slot = $2 WHERE webhook_id = $1`,
		webhookID, row.Next.Add(Interval(*row.Rate))); err != nil {
		return time.Time{}, 0, false, err
	}
	return row.Next, 0, true, tx.Commit()
}

// AwaitSlot waits (without holding any connection) until slot and reports
// whether the start is still within PaceLateness of it; a zero slot is
// always on time.
func AwaitSlot(ctx context.Context, slot time.Time) (bool, error) {
	if slot.IsZero() {
		return true, nil
	}
	if d := time.Until(slot); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	return time.Since(slot) <= PaceLateness, nil
}

func interval(d time.Duration) string {
	return d.String()
}

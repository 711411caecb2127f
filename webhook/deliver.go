package webhook

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
)

// Schedule is the wait before each retry, counted from the failure before
// it (docs/webhooks.md, "How delivery works"): five retries, then the delivery is failed.
var Schedule = []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute, 2 * time.Hour, 8 * time.Hour}

// Send signs body for this attempt (fresh webhook-timestamp, same
// webhook-id = event id) and POSTs it.
func (c *Client) Send(ctx context.Context, targetURL, secret, eventID string, body []byte) Result {
	h := http.Header{}
	SignHeaders(h, secret, eventID, time.Now(), body)
	return c.Post(ctx, targetURL, h, body)
}

// Deliverer makes one attempt of a stored delivery and records it.
type Deliverer struct {
	Store   *Store
	Client  *Client
	Metrics *Metrics // optional
}

// NewDeliverer builds the SSRF-safe delivery client from cfg and a
// Deliverer over d's webhook tables. With reg set, the delivery metrics are
// registered on it.
func NewDeliverer(d *sqlx.DB, cfg ClientConfig, reg prometheus.Registerer) (*Deliverer, error) {
	hc, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	dl := &Deliverer{Store: NewStore(d), Client: hc}
	if reg != nil {
		dl.Metrics = NewMetrics(reg, dl.Store)
	}
	return dl, nil
}

// Outcome of an attempt, as seen by the retry workflow.
type Outcome string

// Outcomes: the delivery's status after the attempt.
const (
	OutcomeSucceeded Outcome = StatusSucceeded
	OutcomeRetrying  Outcome = StatusRetrying
	OutcomeFailed    Outcome = StatusFailed
	OutcomeCancelled Outcome = StatusCancelled
)

// Attempt loads the delivery, stops if it is finished or its webhook is
// inactive or deleted (marking it cancelled), otherwise POSTs the stored
// body and records the attempt. next is the wait before the following
// retry; zero means this is the last one, so a failure fails the delivery.
func (d *Deliverer) Attempt(ctx context.Context, deliveryID string, next time.Duration) (Outcome, error) {
	var row struct {
		Delivery
		TargetURL string `db:"target_url"`
		Secret    string `db:"signing_secret"`
		Active    bool   `db:"is_active"`
		RateLimit *int   `db:"rate_limit"`
	}
	err := d.Store.db.GetContext(ctx, &row, `SELECT d.id, d.webhook_id, d.tenant_id, d.event_id, d.event_type, d.entity_name, d.body,
			d.status, d.attempts, d.last_attempt_at, d.next_attempt_at, d.created_at, d.updated_at,
			w.target_url, w.signing_secret, w.is_active, w.rate_limit
		FROM dds.webhook_deliveries d JOIN dds.webhooks w ON w.id = d.webhook_id WHERE d.id = $1`, deliveryID)
	if errors.Is(err, sql.ErrNoRows) {
		return OutcomeCancelled, nil // the webhook (and with it the delivery) was deleted
	}
	if err != nil {
		return "", err
	}
	switch row.Status {
	case StatusSucceeded, StatusFailed, StatusCancelled:
		return Outcome(row.Status), nil
	}
	if !row.Active {
		if err := d.Store.SetStatus(ctx, deliveryID, StatusCancelled); err != nil {
			return "", err
		}
		return OutcomeCancelled, nil
	}
	if row.RateLimit != nil {
		if err := d.awaitSlot(ctx, row.WebhookID); err != nil {
			return "", err
		}
	}
	now := time.Now() // an attempt is recorded at its start (after its slot, when paced)
	res := d.Client.Send(ctx, row.TargetURL, row.Secret, row.EventID, row.Body)
	rec := AttemptRecord{DeliveryID: row.ID, WebhookID: row.WebhookID, Attempt: row.Attempts + 1, Result: res, At: now}
	switch {
	case res.OK():
		rec.Status = StatusSucceeded
	case res.Gone(): // the receiver unsubscribed: RecordAttempts disables the webhook
		rec.Status = StatusFailed
	case next > 0:
		rec.Status = StatusRetrying
		t := now.Add(next)
		rec.Next = &t
	default:
		rec.Status = StatusFailed
	}
	if err := d.Store.RecordAttempts(ctx, []AttemptRecord{rec}, nil); err != nil {
		return "", err
	}
	d.Metrics.Observe("retry", rec)
	return Outcome(rec.Status), nil
}

// awaitSlot waits for a slot of a rate-limited webhook's pacing (pace.go):
// a retry counts against the limit like a first attempt. The wait holds no
// connection; a slot missed by more than PaceLateness is replaced by a new
// one. Bounded by ctx (the activity's timeout): an activity that times out
// is retried by Temporal and waits again.
func (d *Deliverer) awaitSlot(ctx context.Context, webhookID string) error {
	for {
		slot, wait, ok, err := d.Store.ReserveSlot(ctx, webhookID)
		if err != nil {
			return err
		}
		if !ok {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			continue
		}
		onTime, err := AwaitSlot(ctx, slot)
		if err != nil || onTime {
			return err
		}
	}
}

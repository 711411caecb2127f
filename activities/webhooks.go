// Package activities holds the webhook delivery activity run by the retry
// workflow. (The file activities live in package files, which owns the file
// table.)
package activities

import (
	"context"
	"time"

	"github.com/dds-project/dds/webhook"
)

// Webhooks holds the webhook delivery activities' dependencies.
type Webhooks struct {
	Deliverer *webhook.Deliverer
}

// DeliverInput names the delivery to attempt. Next is the wait before the
// following retry (recorded as the attempt's next_attempt_at); zero marks
// the last retry, whose failure fails the delivery.
type DeliverInput struct {
	DeliveryID string
	Next       time.Duration
}

// Deliver makes one attempt of a stored delivery: the stored body, fresh
// signatures, the 5 s limit, the attempt recorded in Postgres. A non-2xx or
// time-out is a normal result (OutcomeRetrying / OutcomeFailed), not an
// activity error; errors are infrastructure failures Temporal retries.
func (a *Webhooks) Deliver(ctx context.Context, in DeliverInput) (webhook.Outcome, error) {
	return a.Deliverer.Attempt(ctx, in.DeliveryID, in.Next)
}

package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/idempotency"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
)

// Pruner deletes what the outbox and the delivery log no longer need:
// events relayed longer ago than Events, and finished deliveries (with
// their attempts) last touched longer ago than Deliveries. Pending events
// and deliveries still retrying are never pruned. Webhook counters
// (lastTriggered, successRate) live on the webhook row and are kept.
type Pruner struct {
	DB         *sqlx.DB
	Events     time.Duration
	Deliveries time.Duration
	Log        *slog.Logger
}

// pruneBatch bounds each DELETE so it never holds many row locks or a long
// transaction.
const pruneBatch = 5000

// Prune deletes everything past retention, batch by batch, and returns the
// counts.
func (p *Pruner) Prune(ctx context.Context) (events, deliveries int64, err error) {
	if p.Events > 0 {
		if events, err = outbox.NewStore(p.DB).Prune(ctx, p.Events, pruneBatch); err != nil {
			return events, 0, err
		}
	}
	if p.Deliveries <= 0 {
		return events, 0, nil
	}
	for {
		n, err := webhook.NewStore(p.DB).PruneFinished(ctx, p.Deliveries, pruneBatch)
		if err != nil {
			return events, deliveries, err
		}
		deliveries += n
		if n < pruneBatch {
			return events, deliveries, nil
		}
	}
}

// Run prunes every interval until ctx ends.
func (p *Pruner) Run(ctx context.Context, interval time.Duration) error {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		e, d, err := p.Prune(ctx)
		if err != nil && ctx.Err() == nil {
			p.Log.Warn("prune outbox and delivery log", "err", err)
		} else if e+d > 0 {
			p.Log.Info("pruned", "events", e, "deliveries", d)
		}
		// Answers kept for Idempotency-Key retries expire after 24 hours.
		if n, err := idempotency.NewStore(p.DB).Prune(ctx); err != nil && ctx.Err() == nil {
			p.Log.Warn("prune expired idempotency keys", "err", err)
		} else if n > 0 {
			p.Log.Info("pruned", "idempotency_keys", n)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

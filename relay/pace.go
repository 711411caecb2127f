package relay

import (
	"context"
	"sync"
	"time"

	"github.com/dds-project/dds/webhook"
)

// The pacer sends the queued deliveries of rate-limited webhooks
// (docs/webhooks.md, "Rate limit"). Every relay runs one; they share the
// work through webhook.Store.ClaimPaced, which hands out each webhook's
// slots under its pacing row's lock, so the limit holds however many
// workers run. The relay's batches never wait for it: a queued delivery
// is settled as far as its event is concerned, so a rate-limited webhook's
// backlog delays no other webhook.

// paceTick is how often the pacer looks for due slots while some
// rate-limited webhook has a backlog (a fifth of the claim horizon, so a
// webhook's next claim is made well before its claimed slots run out).
const paceTick = webhook.PaceHorizon / 5

func (r *Relay) kickPacer() {
	select {
	case r.paceWake <- struct{}{}:
	default:
	}
}

// paceLoop claims due slots of every webhook with queued deliveries, and
// sends them, until ctx ends; deliveries claimed are sent (or given back)
// before it returns.
func (r *Relay) paceLoop(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wait := r.cfg.PollInterval
	for {
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-r.paceWake:
		case <-t.C:
		}
		t.Stop()
		n, err := r.PaceOnce(ctx, &wg)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			r.log.Error("relay: pace rate-limited webhooks", "err", err)
			wait = r.cfg.PollInterval
		case n > 0:
			wait = paceTick
		default:
			wait = r.cfg.PollInterval
		}
	}
}

// PaceOnce claims the due slots of every webhook with a backlog and starts
// sending them (wg tracks the sends); it returns how many webhooks had a
// backlog.
func (r *Relay) PaceOnce(ctx context.Context, wg *sync.WaitGroup) (int, error) {
	ids, err := r.store.PacedBacklog(ctx)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		c, err := r.store.ClaimPaced(ctx, id, r.cfg.Lease)
		if err != nil {
			return len(ids), err
		}
		if c == nil || len(c.Deliveries) == 0 {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.BatchTimeout)
			defer cancel()
			r.sendPaced(pctx, c)
		}()
	}
	return len(ids), nil
}

// sendPaced starts each claimed delivery at its slot (concurrently: a slow
// receiver does not push later slots back), gives back those it could not
// start within webhook.PaceLateness of their slot, and records the
// attempts in one transaction.
func (r *Relay) sendPaced(ctx context.Context, c *webhook.PacedClaim) {
	var (
		mu     sync.Mutex
		recs   []webhook.AttemptRecord
		missed []string
		wg     sync.WaitGroup
	)
	for _, d := range c.Deliveries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			onTime, err := webhook.AwaitSlot(ctx, d.Slot)
			if err == nil && onTime {
				acquired := false
				select {
				case r.http <- struct{}{}:
					acquired = true
				case <-ctx.Done():
				}
				// Waiting for an HTTP worker may have made it late.
				// The start is this instant, when the slot is checked: it is
				// what the limit bounds, and what the attempt records.
				if start := time.Now(); acquired && (d.Slot.IsZero() || start.Sub(d.Slot) <= webhook.PaceLateness) {
					res := r.client.Send(ctx, c.Hook.TargetURL, c.Hook.SigningSecret, d.EventID, d.Body)
					<-r.http
					rec := r.outcome(&attemptJob{ref: webhook.DeliveryRef{ID: d.ID, WebhookID: d.WebhookID, EventID: d.EventID,
						Attempts: d.Attempts}, res: res, at: start})
					rec.Attempt = d.Attempts + 1
					mu.Lock()
					recs = append(recs, rec)
					mu.Unlock()
					return
				}
				if acquired {
					<-r.http
				}
			}
			mu.Lock()
			missed = append(missed, d.ID)
			mu.Unlock()
		}()
	}
	wg.Wait()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.store.RecordAttempts(rctx, recs, nil); err != nil {
		r.log.Error("relay: record paced attempts; they are sent again when their claim expires", "webhook", c.Hook.ID, "deliveries", len(recs), "err", err)
	}
	if err := r.store.ReleasePaced(rctx, missed); err != nil {
		r.log.Warn("relay: give back missed slots; the deliveries are taken again when their claim expires", "webhook", c.Hook.ID, "deliveries", len(missed), "err", err)
	}
	retrying := 0
	for _, rec := range recs {
		if rec.Status == webhook.StatusRetrying {
			retrying++
		}
	}
	if retrying > 0 {
		r.kickHandOver()
	}
	if len(missed) > 0 {
		r.metrics.pacedMissed(len(missed))
	}
}

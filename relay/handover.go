package relay

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dds-project/dds/webhook"
)

// The hand-over gives each delivery whose first attempt failed (status
// retrying, no workflow yet) to its durable Temporal retry workflow. It
// runs beside the relay, never inside a batch: while Temporal is
// unreachable the deliveries simply wait in Postgres (nothing is lost) and
// healthy deliveries keep flowing; once Temporal answers again they are
// handed over. Starting a workflow twice is a no-op (its id is derived
// from the delivery), so several relays may hand over side by side.

// handOverBatch bounds the deliveries one round handles; handOverParallel
// the workflow starts in flight.
const (
	handOverBatch    = 100
	handOverParallel = 8
)

func (r *Relay) kickHandOver() {
	select {
	case r.handOverWake <- struct{}{}:
	default:
	}
}

// HandOver starts the retry workflows of up to 100 deliveries awaiting
// one and returns how many were handed over. It stops at the first start
// that fails (Temporal unreachable: the rest would fail too).
func (r *Relay) HandOver(ctx context.Context) (int, error) {
	refs, err := r.store.AwaitingHandOver(ctx, handOverBatch)
	if err != nil {
		return 0, storeError{err}
	}
	if len(refs) == 0 {
		return 0, nil
	}
	var handed []string
	for len(refs) > 0 {
		chunk := refs[:min(handOverParallel, len(refs))]
		refs = refs[len(chunk):]
		var mu sync.Mutex
		var wg sync.WaitGroup
		var errs []error
		for _, ref := range chunk {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sctx, cancel := context.WithTimeout(ctx, r.cfg.StartTimeout)
				defer cancel()
				err := webhook.StartDelivery(sctx, r.temporal, r.cfg.TaskQueue, webhook.DeliveryInput{
					DeliveryID: ref.ID, WebhookID: ref.WebhookID, EventID: ref.EventID, TenantID: ref.TenantID, EventType: ref.EventType,
					Schedule: r.cfg.RetrySchedule})
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
					return
				}
				handed = append(handed, ref.ID)
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			err = errs[0]
			if merr := r.store.MarkHandedOver(ctx, handed); merr != nil {
				err = errors.Join(err, storeError{merr})
			}
			return len(handed), err
		}
	}
	if err := r.store.MarkHandedOver(ctx, handed); err != nil {
		return len(handed), storeError{err}
	}
	return len(handed), nil
}

// storeError is a hand-over failure of Postgres (reading or recording the
// deliveries), as opposed to Temporal's refusal to start a workflow: the
// log must name the engine that fails.
type storeError struct{ err error }

func (e storeError) Error() string { return "deliveries awaiting hand-over: " + e.err.Error() }
func (e storeError) Unwrap() error { return e.err }

// failureCause says which engine a hand-over failure comes from.
func failureCause(err error) string {
	if errors.As(err, new(storeError)) {
		return "relay: cannot read or record the deliveries awaiting retry workflows: Postgres fails; they wait until it answers"
	}
	return "relay: cannot start retry workflows; the deliveries wait in Postgres until Temporal answers"
}

// handOverLoop runs HandOver when a batch left retrying deliveries and on
// every poll, backing off (up to 30 s) while Temporal fails.
func (r *Relay) handOverLoop(ctx context.Context) {
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	backoff := time.Duration(0)
	failing := "" // the cause logged for the current run of failures
	for {
		n, err := r.HandOver(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			if cause := failureCause(err); cause != failing {
				r.log.Warn(cause, "err", err)
				failing = cause
			}
			backoff = min(max(2*backoff, r.cfg.PollInterval), 30*time.Second)
		default:
			if failing != "" {
				r.log.Info("relay: retry workflows start again")
			}
			failing, backoff = "", 0
		}
		if n > 0 {
			r.log.Info("relay hand-over", "workflows_started", n)
		}
		if err == nil && n == handOverBatch {
			continue // more may be waiting
		}
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-r.handOverWake:
		case <-poll.C:
		}
	}
}

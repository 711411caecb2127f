// Package heartbeat keeps a Temporal activity visibly alive while it is
// busy in one long call, so that its heartbeat timeout measures a stuck
// worker, not a slow statement.
package heartbeat

import (
	"context"
	"time"

	"go.temporal.io/sdk/activity"
)

// While runs fn, recording a heartbeat every interval (2 s when zero or
// less) until fn returns or ctx ends; a cancellation of the workflow
// reaches fn through ctx.
func While(ctx context.Context, every time.Duration, fn func(context.Context) error) error {
	if every <= 0 {
		every = 2 * time.Second
	}
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				activity.RecordHeartbeat(ctx)
			}
		}
	}()
	err := fn(ctx)
	close(done)
	<-stopped
	return err
}

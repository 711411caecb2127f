// Package busytest runs a relay that gets no notifications, on a database
// of its own (no other relay takes its events).
package busytest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// TestBusyRelayFindsEventsWithoutANotification: while events keep coming,
// the relay looks for new ones on its own (Config.BusyPoll), so an event
// is delivered without waiting for the server's announcement (which goes
// out at most every 20 ms) or for the safety-net poll. Here nothing
// announces and the safety-net poll is an hour away: the second event is
// delivered only because the first made the relay busy.
func TestBusyRelayFindsEventsWithoutANotification(t *testing.T) {
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	// The database is this package's alone and outlives a run.
	if _, err := d.Exec(`DELETE FROM dds.webhooks; UPDATE dds.events SET relayed_at = now() WHERE relayed_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	rc := webhooktest.NewReceiver(t, nil)
	tn := webhooktest.Tenant(t, d, "busy relay")
	if _, err := st.Create(ctx, tn, webhook.CreateInput{TargetURL: rc.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	delivered := func(id string) func() bool {
		return func() bool {
			for _, r := range rc.Requests() {
				var p struct {
					ID string `json:"id"`
				}
				if json.Unmarshal(r.Body, &p) == nil && p.ID == id {
					return true
				}
			}
			return false
		}
	}
	first := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	// No Temporal: every delivery succeeds, nothing is handed over.
	r := relay.New(d, rc.Client(t), nil, relay.Config{PollInterval: time.Hour, BusyFor: time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	defer func() { stop(); <-done }()
	// A relay claims once when it starts.
	webhooktest.Eventually(t, time.Minute, "the first event's delivery", delivered(first))
	second := webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	webhooktest.Eventually(t, time.Minute, "the second event's delivery, found without a notification", delivered(second))
	if n := len(rc.Requests()); n != 2 {
		t.Fatalf("%d requests for 2 events", n)
	}
}

package webhook_test

import (
	"context"
	"flag"
	"sync/atomic"
	"testing"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/internal/testenv/replay"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

var update = flag.Bool("update", false, "re-record the workflow histories in testdata on a Temporal dev server")

const historyFile = "testdata/delivery_history.json"

// TestDeliveryReplay replays a recorded history of the delivery workflow
// (a failed retry, a manual retry-now, then success) against the current
// code: a change that breaks determinism for running workflows fails here.
func TestDeliveryReplay(t *testing.T) {
	if *update {
		recordHistory(t)
	}
	r := worker.NewWorkflowReplayer()
	webhook.Register(replay.Registry{WorkflowReplayer: r}, nil) // the names the worker registers
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, historyFile); err != nil {
		t.Fatalf("replay %s: %v", historyFile, err)
	}
}

// recordHistory runs one delivery on a dev server: the first retry is cut
// short by a signal and fails, the second (also signalled) succeeds.
func recordHistory(t *testing.T) {
	var n atomic.Int32
	f := newFixture(t, func(webhooktest.Request) int {
		if n.Add(1) == 1 {
			return 500
		}
		return 200
	})
	srv, err := webhooktest.StartTemporal()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop() //nolint:errcheck // best-effort shutdown of the test's Temporal dev server; its exit status is not under test
	c := srv.Client()
	w := worker.New(c, "record", worker.Options{})
	webhook.Register(w, f.dl)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	if err := webhook.StartDelivery(ctx, c, "record", f.in); err != nil {
		t.Fatal(err)
	}
	id := webhook.DeliveryWorkflowID(f.in.WebhookID, f.in.EventID)
	for want := int32(1); want <= 2; want++ {
		webhooktest.Eventually(t, 20*time.Second, "a waiting timer", func() bool {
			timers := 0
			it := c.GetWorkflowHistory(ctx, id, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
			for it.HasNext() {
				ev, err := it.Next()
				if err != nil {
					return false
				}
				if ev.GetEventType() == enums.EVENT_TYPE_TIMER_STARTED {
					timers++
				}
			}
			return timers == int(want)
		})
		if err := c.SignalWorkflow(ctx, id, "", webhook.SignalRetryNow, nil); err != nil {
			t.Fatal(err)
		}
	}
	var out webhook.Outcome
	if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err != nil || out != webhook.OutcomeSucceeded {
		t.Fatalf("recorded run ended %s %v", out, err)
	}
	replay.WriteHistory(t, c, id, "", historyFile)
}

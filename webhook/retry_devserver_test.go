package webhook_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"testing"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/webhook"
)

// A namespace without the DDS search attributes still gets its retries:
// StartDelivery falls back to starting the workflow without them.
func TestStartDeliveryWithoutSearchAttributes(t *testing.T) {
	teststack.Need(t, "DDS_TEMPORAL_CLI")
	cli := os.Getenv("DDS_TEMPORAL_CLI")
	srv, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{ExistingPath: cli, LogLevel: "error",
		Stdout: io.Discard, Stderr: io.Discard,
		ClientOptions: &client.Options{Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()        //nolint:errcheck // best-effort shutdown of the test's Temporal dev server; its exit status is not under test
	f := newFixture(t, nil) // the receiver answers 200
	c := srv.Client()
	w := worker.New(c, "plain", worker.Options{})
	webhook.Register(w, f.dl)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx := context.Background()
	// Precondition: this namespace refuses the attributes.
	other := f.in
	other.EventID = "00000000-0000-0000-0000-000000000000"
	if _, err := c.ExecuteWorkflow(ctx, webhook.DeliveryStartOptions("plain", other), webhook.DeliveryWorkflowName, other); err == nil {
		t.Fatal("the dev server accepted unregistered search attributes; this test proves nothing")
	}
	if err := webhook.StartDelivery(ctx, c, "plain", f.in); err != nil {
		t.Fatalf("start without search attributes: %v", err)
	}
	// Starting it again is a no-op, not an error.
	if err := webhook.StartDelivery(ctx, c, "plain", f.in); err != nil {
		t.Fatalf("second start: %v", err)
	}
	if err := c.SignalWorkflow(ctx, webhook.DeliveryWorkflowID(f.in.WebhookID, f.in.EventID), "", webhook.SignalRetryNow, nil); err != nil {
		t.Fatal(err)
	}
	var out webhook.Outcome
	if err := c.GetWorkflow(ctx, webhook.DeliveryWorkflowID(f.in.WebhookID, f.in.EventID), "").Get(ctx, &out); err != nil || out != webhook.OutcomeSucceeded {
		t.Fatalf("workflow ended %s %v", out, err)
	}
	if n := len(f.receiver.Requests()); n != 1 {
		t.Fatalf("receiver got %d requests, want 1", n)
	}
}

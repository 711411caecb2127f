// Package degradetest runs relays whose Temporal is unreachable, on a
// database of its own (no other relay takes its events).
package degradetest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// unreachable returns a Temporal client aimed at a port nothing listens on.
func unreachable(t *testing.T) client.Client {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c, err := client.NewLazyClient(client.Options{HostPort: addr, Logger: nopLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestUnreachableTemporalHoldsNothingUp: with Temporal unreachable, a batch
// mixing a failing receiver's events and a healthy receiver's events is
// relayed completely: the healthy deliveries succeed, the failed ones wait
// durably in Postgres (retrying, no workflow yet) and their events are
// relayed. Before, the batch waited on the workflow starts until they
// timed out and left the failed events unrelayed, blocking every batch
// behind it. When Temporal answers again every waiting delivery gets its
// retry workflow: nothing is lost.
func TestUnreachableTemporalHoldsNothingUp(t *testing.T) {
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	// The database is this package's alone and outlives a run: start from
	// an empty outbox and delivery log, so the backlog gauges are ours.
	if _, err := d.Exec(`DELETE FROM dds.webhooks; DELETE FROM dds.events`); err != nil {
		t.Fatal(err)
	}
	bad := webhooktest.NewReceiver(t, func(webhooktest.Request) int { return 503 })
	good := webhooktest.NewReceiver(t, nil)
	tBad, tGood := webhooktest.Tenant(t, d, "failing receiver"), webhooktest.Tenant(t, d, "healthy receiver")
	if _, err := st.Create(ctx, tBad, webhook.CreateInput{TargetURL: bad.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, tGood, webhook.CreateInput{TargetURL: good.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	const n = 10
	var badEvents []string
	for range n {
		badEvents = append(badEvents, webhooktest.Event(t, d, tBad, "shop", outbox.EntityCreated, "Product", nil))
		webhooktest.Event(t, d, tGood, "shop", outbox.EntityCreated, "Product", nil)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := prometheus.NewRegistry()
	reg.MustRegister(outbox.NewCollector(outbox.NewStore(d)))
	r := relay.New(d, good.Client(t), unreachable(t), relay.Config{BatchSize: 2 * n, TaskQueue: "dds-degrade",
		Registerer: reg, Deliveries: webhook.NewMetrics(reg, st)}, log)
	before, err := gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	if before["dds_outbox_unrelayed_events"] != 2*n || before["dds_outbox_lag_seconds"] <= 0 {
		t.Fatalf("metrics before relaying: %v", before)
	}
	if got, err := r.RelayOnce(ctx); err != nil || got != 2*n {
		t.Fatalf("RelayOnce: %d events, %v", got, err)
	}
	if len(good.Requests()) != n {
		t.Fatalf("healthy receiver got %d deliveries, want %d", len(good.Requests()), n)
	}
	var unrelayed, waiting int
	if err := d.Get(&unrelayed, `SELECT count(*) FROM dds.events WHERE relayed_at IS NULL`); err != nil || unrelayed != 0 {
		t.Fatalf("%d events left unrelayed behind an unreachable Temporal (%v)", unrelayed, err)
	}
	if err := d.Get(&waiting, `SELECT count(*) FROM dds.webhook_deliveries WHERE status = 'retrying' AND workflow_started_at IS NULL`); err != nil || waiting != n {
		t.Fatalf("%d deliveries waiting for their retry workflow, want %d (%v)", waiting, n, err)
	}
	after, err := gather(reg)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		"dds_outbox_unrelayed_events": 0, "dds_outbox_lag_seconds": 0,
		`dds_webhook_deliveries_total{attempt="first",outcome="succeeded"}`: n,
		`dds_webhook_deliveries_total{attempt="first",outcome="retrying"}`:  n,
		"dds_webhook_retry_backlog":                                         n, "dds_webhook_handover_backlog": n,
		"dds_relay_events_total": 2 * n, "dds_relay_batch_duration_seconds_count": 1,
	} {
		if after[name] != want {
			t.Errorf("%s = %v, want %v", name, after[name], want)
		}
	}
	if handed, err := r.HandOver(ctx); err == nil || handed != 0 {
		t.Fatalf("hand-over to an unreachable Temporal: %d, %v; want an error", handed, err)
	}

	// Temporal is back (a relay that reaches it): every waiting delivery
	// gets its workflow.
	srv, err := webhooktest.StartTemporal()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop() //nolint:errcheck // best-effort shutdown of the test's dev server
	back := relay.New(d, good.Client(t), srv.Client(), relay.Config{TaskQueue: "dds-degrade"}, log)
	if handed, err := back.HandOver(ctx); err != nil || handed != n {
		t.Fatalf("hand-over once Temporal is back: %d, %v; want %d", handed, err, n)
	}
	for _, ev := range badEvents {
		var hook string
		if err := d.Get(&hook, `SELECT webhook_id FROM dds.webhook_deliveries WHERE event_id = $1`, ev); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Client().DescribeWorkflowExecution(ctx, webhook.DeliveryWorkflowID(hook, ev), ""); err != nil {
			t.Fatalf("retry workflow of event %s: %v", ev, err)
		}
	}
	if err := d.Get(&waiting, `SELECT count(*) FROM dds.webhook_deliveries WHERE workflow_started_at IS NULL AND status = 'retrying'`); err != nil || waiting != 0 {
		t.Fatalf("%d deliveries still waiting (%v)", waiting, err)
	}
}

// gather flattens reg's metrics to name{labels} -> value (histograms as
// name_count).
func gather(reg *prometheus.Registry) (map[string]float64, error) {
	mfs, err := reg.Gather()
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			name := mf.GetName()
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+`="`+l.GetValue()+`"`)
			}
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			case m.Histogram != nil:
				out[name+"_count"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out, nil
}

type nopLogger struct{}

func (nopLogger) Debug(string, ...any) {}
func (nopLogger) Info(string, ...any)  {}
func (nopLogger) Warn(string, ...any)  {}
func (nopLogger) Error(string, ...any) {}

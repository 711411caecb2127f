package relay

import (
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/webhook"
)

// SetupOptions configure Setup from the process configuration.
type SetupOptions struct {
	HTTPWorkers int // DDS_WEBHOOK_HTTP_WORKERS
	TaskQueue   string
	// RetrySchedule replaces webhook.Schedule for the deliveries this
	// relay hands over (DDS_WEBHOOK_RETRY_SCHEDULE; tests).
	RetrySchedule []time.Duration
	// Hub, when set, wakes the relay on every committed event (NOTIFY);
	// without it the relay polls. Run the hub yourself.
	Hub   *pgnotify.Hub
	Lease time.Duration
	// Metrics, when set, receives the relay's metrics and the outbox
	// backlog.
	Metrics prometheus.Registerer
	Log     *slog.Logger
	// Trace receives each batch's timeline (Config.Trace; benchmarks).
	Trace func(BatchTrace)
	// BatchSize, InFlightBatches and InFlightEvents override Config's
	// defaults when set (benchmarks comparing them).
	BatchSize, InFlightBatches, InFlightEvents int
}

// Setup builds the relay of a worker process: it makes first attempts
// with the same client and delivery metrics as the retry activity (dl;
// webhook.Register adds that workflow to the worker), and wakes on the
// outbox's notifications when o.Hub is set. Run it next to the worker.
func Setup(d *sqlx.DB, tc client.Client, dl *webhook.Deliverer, o SetupOptions) (*Relay, error) {
	if o.Metrics != nil {
		o.Metrics.MustRegister(outbox.NewCollector(outbox.NewStore(d)))
	}
	r := New(d, dl.Client, tc, Config{Lease: o.Lease, HTTPWorkers: o.HTTPWorkers, TaskQueue: o.TaskQueue, RetrySchedule: o.RetrySchedule, Registerer: o.Metrics, Deliveries: dl.Metrics, Trace: o.Trace,
		BatchSize: o.BatchSize, InFlightBatches: o.InFlightBatches, InFlightEvents: o.InFlightEvents}, o.Log)
	if o.Hub != nil {
		if err := o.Hub.Subscribe(outbox.Channel, func(string) { r.Wake() }); err != nil {
			return nil, err
		}
		o.Hub.OnReconnect(r.Wake) // notifications may have been missed
	}
	return r, nil
}

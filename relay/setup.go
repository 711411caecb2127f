package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/activities"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/searchattr"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/workflows"
)

// SetupOptions configure Setup from the process configuration.
type SetupOptions struct {
	AllowPrivate bool   // DDS_WEBHOOK_ALLOW_PRIVATE
	CAFile       string // DDS_WEBHOOK_CA_FILE
	HTTPWorkers  int    // DDS_WEBHOOK_HTTP_WORKERS
	TaskQueue    string
	Namespace    string
	// Hub, when set, wakes the relay on every committed event (NOTIFY);
	// without it the relay polls. Run the hub yourself.
	Hub   *pgnotify.Hub
	Lease time.Duration
	// Metrics, when set, receives the relay's and the deliveries' metrics
	// and the outbox backlog.
	Metrics prometheus.Registerer
	Log     *slog.Logger
}

// Setup wires webhook delivery into a worker process: it builds the
// SSRF-safe delivery client, registers the retry workflow and its
// activities on reg, registers the search attributes (best effort) and
// returns the relay to run next to the worker.
func Setup(ctx context.Context, d *sqlx.DB, tc client.Client, reg worker.Registry, o SetupOptions) (*Relay, error) {
	hc, err := webhook.NewClient(webhook.ClientConfig{AllowPrivate: o.AllowPrivate, CAFile: o.CAFile, MaxConnsPerHost: o.HTTPWorkers})
	if err != nil {
		return nil, err
	}
	store := webhook.NewStore(d)
	var dm *webhook.Metrics
	if o.Metrics != nil {
		dm = webhook.NewMetrics(o.Metrics, store)
		o.Metrics.MustRegister(outbox.NewCollector(outbox.NewStore(d)))
	}
	reg.RegisterWorkflow(workflows.Delivery)
	reg.RegisterActivity(&activities.Webhooks{Deliverer: &webhook.Deliverer{Store: store, Client: hc, Metrics: dm}})
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if err := searchattr.Ensure(ctx, tc, o.Namespace); err != nil {
		o.Log.Warn("webhooks: could not register search attributes DdsTenant/DdsWebhook/DdsEventType; register them on the namespace", "err", err)
	}
	r := New(d, hc, tc, Config{Lease: o.Lease, HTTPWorkers: o.HTTPWorkers, TaskQueue: o.TaskQueue, Registerer: o.Metrics, Deliveries: dm}, o.Log)
	if o.Hub != nil {
		if err := o.Hub.Subscribe(outbox.Channel, func(string) { r.Wake() }); err != nil {
			return nil, err
		}
		o.Hub.OnReconnect(r.Wake) // notifications may have been missed
	}
	return r, nil
}

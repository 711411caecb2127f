package relay

import (
	"context"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/activities"
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
	ListenURL    string // optional: own LISTEN connection (else wire Wake to NOTIFY)
	Lease        time.Duration
	Log          *slog.Logger
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
	reg.RegisterWorkflow(workflows.Delivery)
	reg.RegisterActivity(&activities.Webhooks{Deliverer: &webhook.Deliverer{Store: webhook.NewStore(d), Client: hc}})
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	if err := workflows.EnsureSearchAttributes(ctx, tc, o.Namespace); err != nil {
		o.Log.Warn("webhooks: could not register search attributes DdsTenant/DdsWebhook/DdsEventType; register them on the namespace", "err", err)
	}
	return New(d, hc, tc, Config{ListenURL: o.ListenURL, Lease: o.Lease, HTTPWorkers: o.HTTPWorkers, TaskQueue: o.TaskQueue}, o.Log), nil
}

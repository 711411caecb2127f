// Package worker builds the worker process (`dds worker`). It owns no table
// and no workflow: it opens Postgres, Temporal and file storage, builds the
// dependencies of each durable capability and calls its Register
// (webhook: delivery retries; files: upload lifecycle and deletes; jobs:
// batch jobs; lifecycle: tenant delete, export and import), runs the loops
// that sit beside the Temporal worker (the outbox relay, the file sweeper,
// pruning), and serves the probes.
package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.temporal.io/sdk/client"
	tworker "go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/roles"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/searchattr"
	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/tenant"
	"github.com/dds-project/dds/webhook"
)

// Worker is the worker process.
type Worker struct {
	cfg      *config.Config
	log      *slog.Logger
	DB       *sqlx.DB
	Hub      *pgnotify.Hub
	Temporal client.Client
	tw       tworker.Worker
	// Registry is the worker's Prometheus registry (served on /metrics).
	Registry *prometheus.Registry
	// JobProgress are the gauges long-running jobs report through.
	JobProgress *obs.JobProgress
	// background loops started with the worker (outbox relay, sweepers).
	loops []func(context.Context) error
}

// New connects to Postgres and Temporal and registers every capability's
// workflows and activities.
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Worker, error) {
	d, err := db.Open(ctx, cfg.DatabaseURL, cfg.DBMaxConns, cfg.DBOptions()...)
	if err != nil {
		return nil, err
	}
	if err := schema.RequireMigrated(ctx, d); err != nil { // as `dds serve`: its jobs write records
		d.Close()
		return nil, err
	}
	interceptors, err := obs.TemporalInterceptors() // activities continue the trace of the request that started them
	if err != nil {
		d.Close()
		return nil, err
	}
	tc, err := client.DialContext(ctx, client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Logger: slogAdapter{log},
		Interceptors: interceptors})
	if err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to Temporal at %s: %w", cfg.TemporalAddress, err)
	}
	w := &Worker{cfg: cfg, log: log, DB: d, Hub: pgnotify.New(cfg.DirectURL(), log), Temporal: tc,
		tw: tworker.New(tc, cfg.TemporalTaskQueue, tworker.Options{}), Registry: obs.NewRegistry(d.DB)}
	w.JobProgress = obs.NewJobProgress(w.Registry)
	if err := w.register(ctx); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// register builds each capability's dependencies, calls its Register and
// adds its loops.
func (w *Worker) register(ctx context.Context) error {
	cfg, log, d, tc := w.cfg, w.log, w.DB, w.Temporal
	ns := cfg.TemporalNamespace
	if ns == "" {
		ns = "default"
	}
	if err := searchattr.Ensure(ctx, tc, ns); err != nil {
		log.Warn("could not register search attributes DdsTenant/DdsWebhook/DdsEventType/DdsJobType; register them on the namespace", "err", err)
	}
	// Files: upload lifecycle and durable deletes, plus the sweeper.
	fileStore, err := storage.Open(ctx, storage.FromConfig(cfg))
	if err != nil {
		return err
	}
	if err := storage.EnsureBucket(ctx, fileStore); err != nil {
		log.Warn("file storage bucket", "err", err)
	}
	files.Register(w.tw, d, fileStore)
	w.loops = append(w.loops, files.New(d, fileStore, tc, files.OptionsFrom(cfg, log)).SweepLoop)
	// Batch jobs: one workflow per job, its steps as activities.
	schemas := schema.NewService(d)
	if err := w.Hub.Subscribe("dds_schemas", schemas.Invalidate); err != nil {
		return err
	}
	w.Hub.OnReconnect(schemas.Flush)
	// A job created by a principal under rules runs as it: the worker
	// reads the tenant's roles, kept fresh as the server keeps them.
	roleStore := roles.NewStore(d, schemas)
	if err := w.Hub.Subscribe("dds_roles", roleStore.Invalidate); err != nil {
		return err
	}
	w.Hub.OnReconnect(roleStore.Flush)
	rs := records.NewStore(d, schemas, nil, records.WithVectorEfSearch(cfg.VectorEfSearch), records.WithRuleSource(roleStore))
	jobs.Register(w.tw, jobs.NewExecutor(d, rs, fileStore, w.JobProgress, log))
	// Tenant lifecycle: delete, export, import.
	keys := auth.NewKeys(d, cfg.Env)
	lifecycle.Register(w.tw, &lifecycle.Deps{DB: d, Records: rs, Storage: fileStore, Schemas: schemas, Tenants: tenant.NewService(d, keys),
		Temporal: tc, Log: log, Sections: lifecycle.DefaultSections(keys, webhook.NewStore(d), cfg.WebhookAllowPrivate)})
	// Webhooks: the retry workflow, the outbox relay (first attempts), pruning.
	deliverer, err := webhook.NewDeliverer(d, webhook.ClientConfig{AllowPrivate: cfg.WebhookAllowPrivate, CAFile: cfg.WebhookCAFile,
		MaxConnsPerHost: cfg.WebhookHTTPWorkers}, w.Registry)
	if err != nil {
		return err
	}
	webhook.Register(w.tw, deliverer)
	webhook.RegisterReplay(w.tw, deliverer.Store, tc, cfg.TemporalTaskQueue)
	rl, err := relay.Setup(d, tc, deliverer, relay.SetupOptions{HTTPWorkers: cfg.WebhookHTTPWorkers, TaskQueue: cfg.TemporalTaskQueue,
		RetrySchedule: cfg.WebhookRetrySchedule, Hub: w.Hub, Metrics: w.Registry, Log: log})
	if err != nil {
		return err
	}
	w.loops = append(w.loops, rl.Run)
	pruner := &relay.Pruner{DB: d, Events: cfg.EventRetention, Deliveries: cfg.DeliveryRetention, Log: log}
	w.loops = append(w.loops, func(ctx context.Context) error { return pruner.Run(ctx, time.Hour) })
	return nil
}

// Run runs the Temporal worker and the background loops until ctx ends.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.tw.Start(); err != nil {
		return fmt.Errorf("start Temporal worker: %w", err)
	}
	defer w.tw.Stop()
	go w.Hub.Run(ctx)
	errc := make(chan error, len(w.loops))
	for _, loop := range w.loops {
		go func() { errc <- loop(ctx) }()
	}
	if w.cfg.WorkerHTTPAddr != "" {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, "tcp", w.cfg.WorkerHTTPAddr)
		if err != nil {
			return fmt.Errorf("worker probes: %w", err)
		}
		srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { errc <- ignoreClosed(srv.Serve(ln)) }()
		defer srv.Close() //nolint:errcheck // shutting down; nothing to report
		w.log.Info("worker probes serving", "addr", "http://"+ln.Addr().String(), "paths", "/livez /readyz /metrics")
	}
	w.log.Info("worker running", "temporal", w.cfg.TemporalAddress, "task_queue", w.cfg.TemporalTaskQueue)
	select {
	case <-ctx.Done():
		w.log.Info("worker shutting down")
		return nil
	case err := <-errc:
		return err
	}
}

func ignoreClosed(err error) error {
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Handler serves the worker's probes and metrics: /livez (the process
// runs), /readyz (Postgres and Temporal answer), /metrics.
func (w *Worker) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", func(rw http.ResponseWriter, _ *http.Request) {
		writeJSON(rw, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", w.ready)
	mux.Handle("GET /metrics", promhttp.HandlerFor(w.Registry, promhttp.HandlerOpts{}))
	return mux
}

func (w *Worker) ready(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	body, status := map[string]string{"status": "ok"}, http.StatusOK
	if err := w.DB.PingContext(ctx); err != nil {
		body["database"], body["status"], status = "down", "unavailable", http.StatusServiceUnavailable
	}
	if _, err := w.Temporal.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		body["temporal"], body["status"], status = "down", "unavailable", http.StatusServiceUnavailable
	}
	writeJSON(rw, status, body)
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.WriteHeader(status)
	_ = json.NewEncoder(rw).Encode(v)
}

// Close releases connections.
func (w *Worker) Close() {
	w.Temporal.Close()
	w.DB.Close()
}

// slogAdapter lets the Temporal SDK log through slog.
type slogAdapter struct{ l *slog.Logger }

func (a slogAdapter) Debug(msg string, kv ...any) { a.l.Debug(msg, kv...) }
func (a slogAdapter) Info(msg string, kv ...any)  { a.l.Debug(msg, kv...) }
func (a slogAdapter) Warn(msg string, kv ...any)  { a.l.Warn(msg, kv...) }
func (a slogAdapter) Error(msg string, kv ...any) { a.l.Error(msg, kv...) }

// Package server wires the stateless HTTP server process: the database
// pool, the NOTIFY hub, the services, and every API surface on one router.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/api/admin"
	"github.com/dds-project/dds/api/connectapi"
	"github.com/dds-project/dds/api/console"
	apievents "github.com/dds-project/dds/api/events"
	apieventtypes "github.com/dds-project/dds/api/eventtypes"
	apifiles "github.com/dds-project/dds/api/files"
	"github.com/dds-project/dds/api/graphql"
	apijobs "github.com/dds-project/dds/api/jobs"
	"github.com/dds-project/dds/api/rest"
	apitenants "github.com/dds-project/dds/api/tenants"
	apiwebhooks "github.com/dds-project/dds/api/webhooks"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/files"
	gql "github.com/dds-project/dds/graphql"
	gqllive "github.com/dds-project/dds/graphql/live"
	"github.com/dds-project/dds/idempotency"
	"github.com/dds-project/dds/identity"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/openapi"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/ratelimit"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/roles"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/tenant"
	"github.com/dds-project/dds/ui"
	"github.com/dds-project/dds/webhook"
)

// Server is the HTTP server process.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	DB      *sqlx.DB
	hub     *pgnotify.Hub
	events  *pgnotify.Publisher
	authn   *auth.Authenticator
	Schemas *schema.Service
	Tenants *tenant.Service
	Records *records.Store
	Files   *files.Service
	Jobs    *jobs.Service
	Handler http.Handler
	gqlFeed *gqllive.Feed
	limits  *ratelimit.Sync // shares the rate limits' counts with the other replicas
	// replicas routes reads to DATABASE_REPLICA_URLS (nil without them).
	replicas *db.Replicas
	// draining is set once shutdown begins: /readyz answers 503 so that a
	// balancer stops sending new requests before the listener closes.
	draining atomic.Bool
	// Registry is the server's Prometheus registry (served on /metrics).
	Registry *prometheus.Registry
	// JobProgress are the gauges long-running jobs report through.
	JobProgress *obs.JobProgress
	// Lifecycle is the operator's tenant API (list, delete, export, import).
	Lifecycle *lifecycle.Service
}

// New builds the server: connects to Postgres and wires every surface.
// Migrations are not applied here (`dds migrate` or `dds dev` do that);
// a database they have not brought to this version is refused
// (schema.RequireMigrated).
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (_ *Server, err error) {
	d, err := db.Open(ctx, cfg.DatabaseURL, cfg.DBMaxConns, cfg.DBOptions()...)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	if err := schema.RequireMigrated(ctx, d); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, DB: d, hub: pgnotify.New(cfg.DirectURL(), log), events: pgnotify.NewPublisher(d, log)}
	s.Schemas = schema.NewService(d)
	roleStore := roles.NewStore(d, s.Schemas)
	providers, err := identity.New(d, roleStore, identity.Options{AllowPrivate: cfg.WebhookAllowPrivate, CAFile: cfg.WebhookCAFile,
		MinRefetch: cfg.IdentityJWKSMinRefetch, Log: log})
	if err != nil {
		return nil, err
	}
	s.authn = auth.NewAuthenticator(d, cfg.Env, []byte(cfg.JWTSecret), cfg.AuthCacheTTL, log,
		auth.WithRoles(roleStore), auth.WithProviders(providers))
	keys := auth.NewKeys(d, cfg.Env)
	s.Tenants = tenant.NewService(d, keys)
	if err := s.hub.Subscribe("dds_keys", s.authn.Revoked); err != nil {
		return nil, err
	}
	if err := s.hub.Subscribe("dds_schemas", s.Schemas.Invalidate); err != nil {
		return nil, err
	}
	if err := s.hub.Subscribe("dds_roles", roleStore.Invalidate); err != nil {
		return nil, err
	}
	if err := s.hub.Subscribe("dds_providers", func(string) { providers.Invalidate() }); err != nil {
		return nil, err
	}
	s.hub.OnReconnect(s.authn.Flush)
	s.hub.OnReconnect(roleStore.Flush)
	s.hub.OnReconnect(providers.Invalidate)
	s.hub.OnReconnect(s.Schemas.Flush)

	fileStore, err := storage.Open(ctx, storage.FromConfig(cfg))
	if err != nil {
		return nil, err
	}
	// Lazy: the server starts without Temporal; file uploads and webhook
	// retries need it.
	interceptors, err := obs.TemporalInterceptors()
	if err != nil {
		return nil, err
	}
	temporal, err := client.NewLazyClient(client.Options{HostPort: cfg.TemporalAddress, Namespace: cfg.TemporalNamespace, Interceptors: interceptors})
	if err != nil {
		return nil, err
	}
	s.Files = files.New(d, fileStore, temporal, files.OptionsFrom(cfg, log))

	recOpts := []records.Option{}
	if len(cfg.DatabaseReplicaURLs) > 0 {
		s.replicas, err = db.OpenReplicas(ctx, d, cfg.DatabaseReplicaURLs, cfg.DBMaxConns,
			db.ReplicaOptions{MaxLag: cfg.ReplicaMaxLag, Wait: cfg.ReplicaWait, Log: log}, cfg.DBOptions()...)
		if err != nil {
			return nil, err
		}
		defer func() {
			if err != nil {
				s.replicas.Close()
			}
		}()
		recOpts = append(recOpts, records.WithReplicas(s.replicas))
	}
	s.Records = records.NewStore(d, s.Schemas, s.Files, append(recOpts, records.WithEventNotifications(s.events),
		records.WithVectorEfSearch(cfg.VectorEfSearch),
		records.WithStatementTimeout(cfg.StatementTimeout), records.WithRowBudget(cfg.QueryRowBudget),
		records.WithRuleSource(roleStore))...)

	perTenant, perIP, perIPAuth := ratelimit.New(cfg.RateTenant, time.Minute), ratelimit.New(cfg.RateGlobal, time.Minute), ratelimit.New(cfg.RateAuth, time.Minute)
	s.limits = ratelimit.NewSync(d, cfg.RateSyncInterval, log, map[string]*ratelimit.Limiter{"tenant": perTenant, "ip": perIP, "auth": perIPAuth})
	router := api.NewRouter(s.authn, perTenant, cfg.MaxBodyBytes).WithIdempotency(idempotency.NewStore(d))
	restAPI := rest.New(s.Records, s.Files)
	restAPI.Routes(router)
	restAPI.QueryRoutes(router)     // query, batch, vector search, relationships
	restAPI.LifecycleRoutes(router) // restore (soft delete), history
	restAPI.FileRoutes(router)      // a FILE field's download URL through its record
	connectapi.New(s.Records, s.Schemas).Routes(router)
	// One GraphQL engine (one cache of prepared operations) serves both
	// transports; the live feed dispatches the events outbox to the socket's
	// subscriptions.
	gqlEngine := gql.NewEngine(s.Records, gql.Limits{MaxDocumentBytes: cfg.GraphQLMaxDocumentBytes, MaxDepth: cfg.GraphQLMaxDepth, MaxAliases: cfg.GraphQLMaxAliases, MaxComplexity: cfg.GraphQLMaxComplexity}, log)
	s.gqlFeed = gqllive.NewFeed(s.Records, gqlEngine.Executor(), log)
	s.gqlFeed.SetLimits(gqllive.Limits{PerTenant: cfg.SubscriptionsPerTenant})
	if err := s.hub.Subscribe(outbox.Channel, s.gqlFeed.Notify); err != nil {
		return nil, err
	}
	s.events.Local(outbox.Channel, s.gqlFeed.NotifyLocal)
	socket := graphql.NewSocket(s.authn, s.Records, gqlEngine, s.gqlFeed)
	socket.MaxPerSocket = cfg.SubscriptionsPerSocket
	graphql.NewHandler(gqlEngine, s.Records, socket, log).Routes(router)
	feed := apievents.New(s.Records) // the HTTP change feed
	feed.Retention = cfg.EventRetention
	feed.Routes(router)
	apifiles.New(s.Files, fileStore, s.Records).Routes(router)
	s.Jobs = jobs.NewService(d, s.Records, &jobs.TemporalRunner{Client: temporal, TaskQueue: cfg.TemporalTaskQueue})
	apijobs.New(s.Jobs).Routes(router)
	apiwebhooks.New(webhook.NewStore(d), temporal, cfg.TemporalTaskQueue, cfg.WebhookAllowPrivate).Routes(router)
	apieventtypes.New(s.Schemas).Routes(router)
	s.Lifecycle = lifecycle.NewService(d, keys, s.authn.Revoked,
		&lifecycle.TemporalRunner{Client: temporal, TaskQueue: cfg.TemporalTaskQueue}, fileStore)
	operatorDoc, err := openapi.New(cfg.PublicURL).Operator()
	if err != nil {
		return nil, err
	}
	apitenants.New(s.Lifecycle, cfg.OperatorToken, operatorDoc).Routes(router)
	admin.New(s.Tenants, keys, s.authn, s.Schemas, openapi.New(cfg.PublicURL), cfg.OperatorToken,
		admin.Identity{Roles: roleStore, Providers: providers}).Routes(router)
	// /livez: the process serves HTTP (restart it if not); /readyz (and the
	// older /healthz): it can answer requests, i.e. Postgres is reachable.
	router.Public("GET /livez", http.HandlerFunc(live))
	router.Public("GET /readyz", http.HandlerFunc(s.health))
	consoleUI, err := console.New(ui.Dist())
	if err != nil {
		return nil, err
	}
	consoleUI.Routes(router)
	router.Public("GET /healthz", http.HandlerFunc(s.health))
	reg := obs.NewRegistry(d.DB)
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dds_graphql_subscriptions_active", Help: "GraphQL subscriptions running on this server.",
	}, func() float64 { return float64(s.gqlFeed.Active()) }))
	for i, kind := range gqllive.ReadKinds {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "dds_graphql_feed_reads_total", ConstLabels: prometheus.Labels{"kind": kind},
			Help: "Statements the subscription feed sent Postgres: batch (shared by every subscriber), catch_up, and per subscriber filter, rule and record.",
		}, func() float64 { return float64(s.gqlFeed.Reads(i)) }))
	}
	reg.MustRegister(s.gqlFeed.StageCollector())
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "dds_graphql_feed_horizon_held_total",
		Help: "Polls of the subscription feed whose safe horizon stopped short of the newest event: a transaction that drew an earlier seq was still in flight, and the events after it waited for its commit.",
	}, func() float64 { return float64(s.gqlFeed.Held()) }))
	if s.replicas != nil {
		s.replicas.Register(reg)
	}
	s.Registry, s.JobProgress = reg, obs.NewJobProgress(reg)
	router.Public("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))

	s.Handler = api.CORS(cfg.CORSOrigins, api.Middleware(router, log, api.Limits{
		Global:     perIP,
		Auth:       perIPAuth,
		AuthPaths:  map[string]bool{"POST /api/v1/auth/token": true, "POST /api/v1/tenants": true},
		TrustProxy: cfg.TrustProxy,
		Metrics:    api.NewMetrics(reg),

		AccessLogSample: cfg.AccessLogSample,
		Unlimited:       map[string]bool{"GET /livez": true, "GET /readyz": true, "GET /healthz": true, "GET /metrics": true},
		Body:            cfg.BodyTimeout, Upload: cfg.UploadTimeout, UploadPrefix: storage.LocalRoute,
	}))
	if obs.Tracing() {
		// A span per request (W3C traceparent continues a caller's trace),
		// named by route pattern in api.Middleware once the route is known.
		s.Handler = otelhttp.NewHandler(s.Handler, "http")
	}
	return s, nil
}

func live(w http.ResponseWriter, _ *http.Request) {
	api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		api.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "draining"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.PingContext(ctx); err != nil {
		api.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "down"})
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// SyncLimits shares the rate limits' counts with the other replicas now,
// as the background loop does every DDS_RATE_SYNC_INTERVAL (tests pace
// their requests with it).
func (s *Server) SyncLimits(ctx context.Context) error { return s.limits.Once(ctx) }

// Serve serves on ln until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	authDone := make(chan struct{})
	defer func() { <-authDone }() // the last flush of lastUsed must precede Close
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // runs first: stops the background loops, also when Serve fails
	go s.hub.Run(ctx)
	go func() { s.authn.Run(ctx, 30*time.Second); close(authDone) }()
	go s.gqlFeed.Run(ctx)
	go s.limits.Run(ctx)
	if s.replicas != nil {
		go s.replicas.Run(ctx)
	}
	// Event notifications outlive the HTTP shutdown below, so writes that
	// finish during it are still announced.
	pubCtx, pubStop := context.WithCancel(context.WithoutCancel(ctx))
	pubDone := make(chan struct{})
	go func() { s.events.Run(pubCtx); close(pubDone) }()
	defer func() { pubStop(); <-pubDone }()
	// HTTP/1.1 plus unencrypted HTTP/2, so gRPC clients reach the Connect
	// services without TLS (a TLS-terminating proxy in front is the norm).
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true)
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		Protocols: &protocols, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	if d := s.cfg.ShutdownDrain; d > 0 {
		// Behind a balancer: fail /readyz and keep serving until it has
		// noticed, so no request meets a closed port (a rolling restart
		// then fails none).
		s.draining.Store(true)
		s.log.Info("shutting down: draining (readyz fails) before closing", "drain", d)
		select {
		case err := <-errc:
			return err
		case <-time.After(d):
		}
	}
	s.log.Info("shutting down: finishing open requests", "timeout", "10s")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	s.log.Info("server stopped", "err", err)
	return err
}

// Run listens on the configured address and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.HTTPAddr)
	if err != nil {
		return err
	}
	s.log.Info("serving", "addr", "http://"+ln.Addr().String())
	return s.Serve(ctx, ln)
}

// Close releases the database pool.
func (s *Server) Close() error {
	if s.replicas != nil {
		s.replicas.Close()
	}
	return s.DB.Close()
}

// FlushAuth writes pending lastUsed times now (tests, shutdown).
func (s *Server) FlushAuth(ctx context.Context) error { return s.authn.FlushLastUsed(ctx) }

// Start serves on ln in the background. stop shuts the server down, waits
// for it to finish (including its last lastUsed flush) and closes the pool.
func (s *Server) Start(ctx context.Context, ln net.Listener) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		if err := s.Serve(ctx, ln); err != nil {
			s.log.Error("serve", "err", err)
		}
		close(done)
	}()
	return func() { cancel(); <-done; s.Close() }
}

// Package server wires the stateless HTTP server process: the database
// pool, the NOTIFY hub, the services, and every API surface on one router.
package server

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/api/admin"
	"github.com/dds-project/dds/api/rest"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/ratelimit"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/tenant"
)

// Server is the HTTP server process.
type Server struct {
	cfg     *config.Config
	log     *slog.Logger
	DB      *sqlx.DB
	hub     *pgnotify.Hub
	authn   *auth.Authenticator
	Schemas *schema.Service
	Tenants *tenant.Service
	Records *records.Store
	Handler http.Handler
}

// New builds the server: connects to Postgres and wires every surface.
// Migrations are not applied here (`dds migrate` or `dds dev` do that).
func New(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Server, error) {
	d, err := db.Open(ctx, cfg.DatabaseURL, cfg.DBMaxConns)
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, log: log, DB: d, hub: pgnotify.New(cfg.DatabaseURL, log)}
	s.Schemas = schema.NewService(d)
	s.authn = auth.NewAuthenticator(d, cfg.Env, []byte(cfg.JWTSecret), cfg.AuthCacheTTL, log)
	keys := auth.NewKeys(d, cfg.Env)
	s.Tenants = tenant.NewService(d, keys)
	if err := s.hub.Subscribe("dds_keys", s.authn.Revoked); err != nil {
		return nil, err
	}
	if err := s.hub.Subscribe("dds_schemas", s.Schemas.Invalidate); err != nil {
		return nil, err
	}
	s.hub.OnReconnect(s.authn.Flush)
	s.hub.OnReconnect(s.Schemas.Flush)

	s.Records = records.NewStore(d, s.Schemas, nil)

	router := api.NewRouter(s.authn, ratelimit.New(cfg.RateTenant, time.Minute), cfg.MaxBodyBytes)
	rest.New(s.Records).Routes(router)
	admin.New(s.Tenants, keys, s.authn, s.Schemas, openAPIPending{}, cfg.OperatorToken).Routes(router)
	router.Public("GET /healthz", http.HandlerFunc(s.health))
	router.Public("GET /metrics", promhttp.Handler())

	s.Handler = api.Middleware(router, log, api.Limits{
		Global:     ratelimit.New(cfg.RateGlobal, time.Minute),
		Auth:       ratelimit.New(cfg.RateAuth, time.Minute),
		AuthPaths:  map[string]bool{"POST /api/v1/auth/token": true, "POST /api/v1/tenants": true},
		TrustProxy: cfg.TrustProxy,
	})
	return s, nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.DB.PingContext(ctx); err != nil {
		api.WriteJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "database": "down"})
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// Serve serves on ln until ctx ends, then shuts down gracefully.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	go s.hub.Run(ctx)
	go s.authn.Run(ctx, 30*time.Second)
	srv := &http.Server{Handler: s.Handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// Run listens on the configured address and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.HTTPAddr)
	if err != nil {
		return err
	}
	s.log.Info("serving", "addr", "http://"+ln.Addr().String())
	return s.Serve(ctx, ln)
}

// Close releases the database pool.
func (s *Server) Close() error { return s.DB.Close() }

// Command dds is the one DDS binary:
//
//	dds serve                      the HTTP server
//	dds worker                     the Temporal worker (relay, deliveries, files)
//	dds migrate                    apply control-plane migrations
//	dds tenant create --name NAME  create a tenant and print its admin key once
//	dds dev                        migrate, ensure a dev tenant, run server and worker together
//	dds job watch ID               a progress bar of a batch job, read from the API
//	dds schema pull|diff|push      schemas as code, over the schema API
//
// Configuration comes from the environment (see config.Config).
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/server"
	"github.com/dds-project/dds/worker"
)

const usage = `usage: dds <command> [flags]

commands:
  serve                         run the HTTP server
  worker                        run the Temporal worker
  migrate                       apply control-plane migrations
  tenant create --name NAME     create a tenant; prints its admin key once (--json for JSON)
  dev                           migrate, ensure a "dev" tenant, run server + worker, print a fresh admin key
  job watch ID                  show a batch job's progress until it ends (--url/DDS_URL, --key/DDS_API_KEY)
  schema pull|diff|push         schemas as code: a schema file against a server's schema API (--url, --key, --file)
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "dds:", err)
		os.Exit(1)
	}
}

// commandHelp is what `dds <command> --help` prints.
var commandHelp = map[string]string{
	"serve": `usage: dds serve

Runs the HTTP server (REST, GraphQL and subscriptions, Connect/gRPC, /livez, /readyz,
/metrics) on DDS_HTTP_ADDR. Configuration comes from the environment: DATABASE_URL and
DDS_JWT_SECRET are required; see docs/operations.md and the README for the rest.
`,
	"worker": `usage: dds worker

Runs the Temporal worker: the outbox relay and webhook deliveries, the file lifecycle
and long jobs. Serves /livez, /readyz (Postgres and Temporal reachable) and /metrics on
DDS_WORKER_HTTP_ADDR (default 127.0.0.1:8081; empty serves nothing).
`,
	"migrate": `usage: dds migrate

Applies the pending control-plane migrations to DATABASE_URL (safe to run from several
replicas at once: they are serialised by an advisory lock), then builds on the tables of
existing schemas the indexes this version's DDL adds (CONCURRENTLY: writes go on).
`,
	"tenant": `usage: dds tenant create --name NAME [--json]

Creates a tenant and prints its admin API key once (--json prints
{"tenantId", "apiKey"}).
`,
	"job": `usage: dds job watch ID [--url URL] [--key KEY] [--every 500ms]

Polls GET /api/v1/jobs/ID and draws a progress bar until the job ends; exits non-zero,
printing the error and the first failed items, when it failed or was cancelled.
The key needs job:*:read. --url defaults to DDS_URL or http://127.0.0.1:8080.
`,
	"schema": `usage: dds schema pull|diff|push [--url URL] [--key KEY] [--file schema.json] [flags]

Schemas as code, over the schema API (docs/schemas.md). The file is a schema definition in
JSON, or YAML when it ends in .yaml/.yml; the schema it stands for is the tenant's schema
of the same name. Its "roles" member, when present, is the tenant's whole set of roles.
  pull   write the active schema (or --name NAME) and the tenant's roles to the file
  diff   print the plan of applying the file, destructive steps marked "!", and the
         roles added (+), removed (-) and changed (~) rule by rule;
         exits non-zero when the plan has destructive steps or a role is invalid
  push   apply the file: a new version of that schema, or a new schema, and its roles,
         in one transaction (--allow-data-loss to apply destructive steps, --activate
         to make it active)
--url defaults to DDS_URL or http://127.0.0.1:8080, --key to DDS_API_KEY (schema scopes,
and role scopes for a file with roles).
`,
	"dev": `usage: dds dev

Migrates, ensures a "dev" tenant, runs the server and the worker in one process and
prints a fresh admin key. Secrets missing from the environment are generated under .dds/.
`,
}

// wantsHelp reports whether args ask for help rather than an action.
func wantsHelp(args []string) bool {
	for _, a := range args {
		if a == "-h" || a == "-help" || a == "--help" || a == "help" {
			return true
		}
	}
	return false
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(os.Stderr, usage)
		return errors.New("no command")
	}
	if help, ok := commandHelp[args[0]]; ok && wantsHelp(args[1:]) {
		fmt.Print(help)
		return nil
	}
	switch args[0] {
	case "serve":
		return withConfig(func(cfg *config.Config, log *slog.Logger) error {
			return traced(ctx, "dds-server", log, func() error { return serve(ctx, cfg, log) })
		})
	case "worker":
		return withConfig(func(cfg *config.Config, log *slog.Logger) error {
			return traced(ctx, "dds-worker", log, func() error { return runWorker(ctx, cfg, log) })
		})
	case "migrate":
		return withConfig(func(cfg *config.Config, log *slog.Logger) error { return migrate(ctx, cfg, log) })
	case "tenant":
		return tenantCmd(ctx, args[1:])
	case "dev":
		return dev(ctx)
	case "job":
		return jobCmd(ctx, args[1:], os.Stdout)
	case "schema":
		return schemaCmd(ctx, args[1:], os.Stdout)
	case "help", "-h", "--help":
		fmt.Print(usage)
		return nil
	}
	fmt.Fprint(os.Stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func withConfig(fn func(*config.Config, *slog.Logger) error) error {
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	return fn(cfg, newLogger(cfg))
}

// traced runs fn with OpenTelemetry tracing set up from the OTEL_*
// environment (off unless an OTLP endpoint is set), flushing spans at the end.
func traced(ctx context.Context, service string, log *slog.Logger, fn func() error) error {
	shutdown, err := obs.SetupTracing(ctx, service)
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if obs.Tracing() {
		log.Info("tracing on", "service", service, "endpoint", os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT")+os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := shutdown(sctx); err != nil {
			log.Warn("flush traces", "err", err)
		}
	}()
	return fn()
}

func newLogger(cfg *config.Config) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // config.Load validated it
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(os.Stderr, opts))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, opts))
}

// migrate applies the control-plane migrations, then gives the tables of
// schemas made by an earlier DDS what today's DDL adds (schema.Upgrade).
func migrate(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	d, err := db.Open(ctx, cfg.DirectURL(), 2) // session locks: never through a transaction pooler
	if err != nil {
		return err
	}
	defer d.Close()
	return schema.Migrate(ctx, d, log)
}

func serve(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

func runWorker(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	w, err := worker.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer w.Close()
	return w.Run(ctx)
}

func tenantCmd(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "create" {
		return errors.New("usage: dds tenant create --name NAME [--json]")
	}
	fs := flag.NewFlagSet("tenant create", flag.ContinueOnError)
	name := fs.String("name", "", "tenant name")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	return withConfig(func(cfg *config.Config, log *slog.Logger) error {
		s, err := server.New(ctx, cfg, log)
		if err != nil {
			return err
		}
		defer s.Close()
		c, err := s.Tenants.Create(ctx, *name)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(os.Stdout).Encode(map[string]string{"tenantId": c.TenantID, "apiKey": c.APIKey})
		}
		fmt.Printf("tenant %s (%s)\nadmin key (shown once): %s\n", c.Name, c.TenantID, c.APIKey)
		return nil
	})
}

// dev runs everything in one process for a developer's machine. Missing
// secrets are generated once and kept under .dds/.
func dev(ctx context.Context) error {
	for env, file := range map[string]string{"DDS_JWT_SECRET": "jwt-secret", "DDS_OPERATOR_TOKEN": "operator-token"} {
		if os.Getenv(env) != "" {
			continue
		}
		v, err := devSecret(filepath.Join(".dds", file))
		if err != nil {
			return err
		}
		os.Setenv(env, v)
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := newLogger(cfg)
	return traced(ctx, "dds", log, func() error { return devRun(ctx, cfg, log) })
}

func devRun(ctx context.Context, cfg *config.Config, log *slog.Logger) error {
	if err := migrate(ctx, cfg, log); err != nil {
		return err
	}
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	tenantID, key, err := devTenant(ctx, s, cfg)
	if err != nil {
		return err
	}
	if os.Getenv("DDS_WORKER_HTTP_ADDR") == "" {
		cfg.WorkerHTTPAddr = "" // one process: the server's probes and /metrics serve it
	}
	w, err := worker.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer w.Close()
	fmt.Printf(`
DDS is running.
  API:          http://%[1]s/api/v1
  GraphQL:      http://%[1]s/api/v1/dynamic-gql/%[2]s
  Temporal UI:  %[4]s
  Tenant:       dev (%[2]s)
  Admin key:    %[3]s   (a fresh key each start; older dev keys stay valid)
  Operator token (POST /api/v1/tenants): see .dds/operator-token

Try:  curl -H "Authorization: Bearer %[3]s" http://%[1]s/api/v1/schemas
Ctrl-C stops everything.

`, cfg.HTTPAddr, tenantID, key, temporalUI())
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.Run(gctx) })
	g.Go(func() error { return w.Run(gctx) })
	return g.Wait()
}

func temporalUI() string {
	if u := os.Getenv("DDS_TEMPORAL_UI_URL"); u != "" {
		return u
	}
	return "http://127.0.0.1:8233"
}

func devTenant(ctx context.Context, s *server.Server, cfg *config.Config) (string, string, error) {
	id, err := s.Tenants.Named(ctx, "dev")
	if err != nil {
		c, err := s.Tenants.Create(ctx, "dev")
		if err != nil {
			return "", "", err
		}
		return c.TenantID, c.APIKey, nil
	}
	admin, _ := auth.ParseScopes([]string{"*:*:*"})
	k, err := auth.NewKeys(s.DB, cfg.Env).Create(ctx, id, "dev admin", admin)
	if err != nil {
		return "", "", err
	}
	return id, k.Key, nil
}

func devSecret(path string) (string, error) {
	//nolint:gosec // G304: path is ".dds/" + a constant file name chosen by dev(), never user input.
	if b, err := os.ReadFile(path); err == nil && len(strings.TrimSpace(string(b))) >= 32 {
		return strings.TrimSpace(string(b)), nil
	}
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	v := hex.EncodeToString(b)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return v, os.WriteFile(path, []byte(v+"\n"), 0o600)
}

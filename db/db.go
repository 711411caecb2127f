// Package db opens the Postgres connection pool and applies the embedded,
// versioned control-plane migrations.
package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/XSAM/otelsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib" // the Postgres driver, "pgx"
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/dds-project/dds/obs"
)

//go:embed migrations/*.sql
var migrations embed.FS

// DefaultVectorEfSearch is the HNSW candidate list size connections run with
// (pgvector's own default is 40). Measured on 100k × 128-dim vectors, top 10
// (bench/cmd/ddsbench's vector section), it keeps recall@10 at or above 0.99,
// which 100 and 200 do not reliably.
const DefaultVectorEfSearch = 400

// MaxVectorEfSearch is pgvector's upper bound for hnsw.ef_search.
const MaxVectorEfSearch = 1000

// Option configures Open.
type Option func(*openOptions)

type openOptions struct {
	efSearch          int
	transactionPooler bool
}

// ThroughTransactionPooler makes the pool work through a connection pooler
// in transaction mode (PgBouncer 1.18, which knows no protocol-level
// prepared statements and refuses unknown startup parameters): statements
// are sent with their cached descriptions in one round trip but never
// prepared by name, and no run-time parameter is sent at connection — the
// pooler's connect_query must set jit = off and hnsw.ef_search (see
// docs/operations.md). Session state (LISTEN, session advisory locks) must
// use a direct connection, never this pool.
func ThroughTransactionPooler() Option {
	return func(o *openOptions) { o.transactionPooler = true }
}

// WithVectorEfSearch makes connections run with hnsw.ef_search = ef (1 to
// MaxVectorEfSearch; config validates it) instead of DefaultVectorEfSearch.
func WithVectorEfSearch(ef int) Option {
	return func(o *openOptions) {
		if ef > 0 {
			o.efSearch = ef
		}
	}
}

// Open connects to url, checks the connection and sizes the pool.
//
// The driver is pgx's database/sql adapter: it prepares each distinct
// statement once per connection and re-uses it (binary parameters, no
// re-parse and re-plan per request), which lib/pq does not do. Pass array
// arguments as Go slices ([]string, []int64, [][]byte, []time.Time), not
// lib/pq's array types: pgx turns those into their text literal and parses
// it back to send it in binary (14 % of the webhook relay's CPU before
// they were replaced, docs/webhooks.md "Measured").
//
// Connections run with jit off unless url sets jit (as a parameter or in
// options): DDS's statements are
// short, and Postgres compiles any plan whose estimated cost passes
// jit_above_cost, which a nested selection's estimate does with a few
// thousand related rows (half of such a statement's time was JIT
// compilation, on every execution).
//
// Connections run with hnsw.ef_search = DefaultVectorEfSearch (or
// WithVectorEfSearch's) unless url sets it, so a vector search meets its
// recall without a SET LOCAL and the transaction it needs.
//
// With tracing on (obs.Tracing) the driver is wrapped for OpenTelemetry
// (otelsql, whatever the driver): each statement of a traced request is a
// span of its trace.
func Open(ctx context.Context, url string, maxConns int, opts ...Option) (*sqlx.DB, error) {
	d, err := openLazy(url, maxConns, opts...)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.PingContext(pctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return d, nil
}

// openLazy is Open without the first connection.
func openLazy(url string, maxConns int, opts ...Option) (*sqlx.DB, error) {
	o := openOptions{efSearch: DefaultVectorEfSearch}
	for _, opt := range opts {
		opt(&o)
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if o.transactionPooler {
		cfg.DefaultQueryExecMode = pgx.QueryExecModeCacheDescribe
	} else if !urlSets(cfg, "jit") {
		cfg.RuntimeParams["jit"] = "off"
	}
	// Sent in the startup packet: Postgres keeps it as a placeholder until
	// pgvector loads in the session, which then takes it (a plain SET after
	// connecting would cost a round trip per connection, SET LOCAL one per
	// search). A value in url (parameter or options) stays.
	if !o.transactionPooler && !urlSets(cfg, "hnsw.ef_search") {
		cfg.RuntimeParams["hnsw.ef_search"] = strconv.Itoa(o.efSearch)
	}
	// A statement whose context ends (the request's statement deadline,
	// records.WithStatementTimeout, or a client gone) is cancelled in
	// Postgres with a cancel request, which a pooler in transaction mode
	// forwards, so the server stops working on it; pgx's default only
	// closes the connection, leaving the statement running until it next
	// writes to the client.
	//
	// Through a transaction pooler no cancel request is sent: PgBouncer
	// 1.18 (Debian's) exits with "FATAL ... disconnect_client(): bad client
	// state" when a client's connection closes while the pooler forwards
	// its cancel request — it crashed twice in our test runs, taking every
	// server's pool down with it. There a deadline closes the connection
	// instead; the pooler then drops the server connection, and Postgres
	// stops the statement within client_connection_check_interval, which
	// the pooler's connect_query sets (docs/operations.md).
	if o.transactionPooler {
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.DeadlineContextWatcherHandler{Conn: c.Conn()}
		}
		cfg.DialFunc = noCancelDial(cfg.DialFunc) // nocancel.go: nor when pgx closes a broken connection
	} else {
		cfg.BuildContextWatcherHandler = func(c *pgconn.PgConn) ctxwatch.Handler {
			return &pgconn.CancelRequestContextWatcherHandler{Conn: c, DeadlineDelay: time.Second}
		}
	}
	connector := stdlib.GetConnector(*cfg)
	if o.transactionPooler {
		connector = connectingConnector{connector}
	}
	var sqlDB *sql.DB
	if obs.Tracing() {
		sqlDB = otelsql.OpenDB(connector, obs.SQLOptions()...)
	} else {
		sqlDB = sql.OpenDB(connector)
	}
	d := sqlx.NewDb(sqlDB, "pgx")
	if maxConns <= 0 {
		maxConns = 20
	}
	d.SetMaxOpenConns(maxConns)
	d.SetMaxIdleConns(maxConns)
	d.SetConnMaxIdleTime(5 * time.Minute)
	return d, nil
}

// Migrate applies every pending migration. Concurrent callers (replicas
// starting together, parallel test packages) are serialised by a Postgres
// advisory lock.
func Migrate(ctx context.Context, d *sql.DB) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return err
	}
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		return err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, d, sub,
		goose.WithSessionLocker(locker), goose.WithAllowOutofOrder(true))
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("apply migrations: %w", err)
	}
	return nil
}

// Pending lists the embedded migrations not yet applied to d, by file name
// in order (missing ones below the database's version included, as
// Migrate would apply them). It takes no lock and writes nothing but
// goose's version table, if even that is missing. The processes that serve
// (`dds serve`, `dds worker`) call it at start and refuse to run on a
// database that `dds migrate` has not brought to their version: their
// statements rely on every migration up to it.
func Pending(ctx context.Context, d *sql.DB) ([]string, error) {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return nil, err
	}
	p, err := goose.NewProvider(goose.DialectPostgres, d, sub, goose.WithAllowOutofOrder(true))
	if err != nil {
		return nil, fmt.Errorf("migrations: %w", err)
	}
	st, err := p.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("migration status: %w", err)
	}
	var out []string
	for _, m := range st {
		if m.State == goose.StatePending {
			out = append(out, path.Base(m.Source.Path))
		}
	}
	return out, nil
}

// urlSets reports whether the connection URL sets the run-time parameter
// name, as a parameter of its own or in options ("-c name=v", "-cname=v" or
// "--name=v"); a parameter whose name merely contains name (jit_above_cost)
// does not count.
func urlSets(cfg *pgx.ConnConfig, name string) bool {
	if _, set := cfg.RuntimeParams[name]; set {
		return true
	}
	for _, f := range strings.Fields(cfg.RuntimeParams["options"]) {
		f = strings.TrimPrefix(strings.TrimPrefix(f, "--"), "-c")
		if strings.HasPrefix(f, name+"=") {
			return true
		}
	}
	return false
}

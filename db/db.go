// Package db opens the Postgres connection pool and applies the embedded,
// versioned control-plane migrations.
package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/XSAM/otelsql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib" // the Postgres driver, "pgx"
	"github.com/jmoiron/sqlx"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/dds-project/dds/obs"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Open connects to url, checks the connection and sizes the pool.
//
// The driver is pgx's database/sql adapter: it prepares each distinct
// statement once per connection and re-uses it (binary parameters, no
// re-parse and re-plan per request), which lib/pq does not do.
//
// Connections run with jit off unless url sets jit (as a parameter or in
// options): DDS's statements are
// short, and Postgres compiles any plan whose estimated cost passes
// jit_above_cost, which a nested selection's estimate does with a few
// thousand related rows (half of such a statement's time was JIT
// compilation, on every execution).
//
// With tracing on (obs.Tracing) the driver is wrapped for OpenTelemetry
// (otelsql, whatever the driver): each statement of a traced request is a
// span of its trace.
func Open(ctx context.Context, url string, maxConns int) (*sqlx.DB, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	if _, set := cfg.RuntimeParams["jit"]; !set && !strings.Contains(cfg.RuntimeParams["options"], "jit") {
		cfg.RuntimeParams["jit"] = "off"
	}
	connector := stdlib.GetConnector(*cfg)
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
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := d.PingContext(pctx); err != nil {
		d.Close()
		return nil, fmt.Errorf("connect to database: %w", err)
	}
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

package load

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/tenant"
)

// Tenant opens dbURL with a pool of conns, migrates it and creates the
// tenant name for a benchmark. drop deletes the tenant with all it owns
// (DropTenant) and closes the pool; the caller defers it.
func Tenant(ctx context.Context, dbURL, name string, conns int) (d *sqlx.DB, t tenant.Created, drop func(), err error) {
	d, err = db.Open(ctx, dbURL, conns)
	if err != nil {
		return nil, tenant.Created{}, nil, err
	}
	if err := schema.Migrate(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		d.Close()
		return nil, tenant.Created{}, nil, err
	}
	t, err = tenant.NewService(d, auth.NewKeys(d, "live")).Create(ctx, name)
	if err != nil {
		d.Close()
		return nil, tenant.Created{}, nil, err
	}
	drop = func() {
		if err := DropTenant(ctx, d, t.TenantID); err != nil {
			fmt.Fprintf(os.Stderr, "%s: cleanup: %v\n", name, err)
		}
		d.Close()
	}
	return d, t, drop, nil
}

// DropTenant deletes a benchmark's tenant with everything it owns: the
// Postgres schema of each of its schemas (tables and rows), its outbox
// events, and its row (keys, schemas' rows, webhooks, files and jobs
// cascade). Deleting the row alone would leave the tables behind: the
// benchmarks seed hundreds of thousands of records and events, and a
// bench database kept between runs would grow with every run, so later
// runs would measure bigger tables and a bigger outbox. It runs even when
// ctx was cancelled (an interrupted run cleans up too), bounded by a minute.
func DropTenant(ctx context.Context, d *sqlx.DB, tenantID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var pgSchemas []string
	if err := d.SelectContext(ctx, &pgSchemas, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1`, tenantID); err != nil {
		return err
	}
	var errs []error
	for _, s := range pgSchemas {
		if _, err := d.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+schema.Ident(s)+` CASCADE`); err != nil {
			errs = append(errs, err)
		}
	}
	for _, stmt := range []string{`DELETE FROM dds.events WHERE tenant_id = $1`, `DELETE FROM dds.tenants WHERE id = $1`} {
		if _, err := d.ExecContext(ctx, stmt, tenantID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

package load

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/tenant"
)

// Tenant opens dbURL with a pool of conns, migrates it and creates the
// tenant name for a benchmark. drop deletes the tenant and its events
// (not cancelled with ctx, so it runs even when the run was interrupted) and closes
// the pool; the caller defers it.
func Tenant(ctx context.Context, dbURL, name string, conns int) (d *sqlx.DB, t tenant.Created, drop func(), err error) {
	d, err = db.Open(ctx, dbURL, conns)
	if err != nil {
		return nil, tenant.Created{}, nil, err
	}
	if err := db.Migrate(ctx, d.DB); err != nil {
		d.Close()
		return nil, tenant.Created{}, nil, err
	}
	t, err = tenant.NewService(d, auth.NewKeys(d, "live")).Create(ctx, name)
	if err != nil {
		d.Close()
		return nil, tenant.Created{}, nil, err
	}
	drop = func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		for _, stmt := range []string{`DELETE FROM dds.events WHERE tenant_id = $1`, `DELETE FROM dds.tenants WHERE id = $1`} {
			if _, err := d.ExecContext(cctx, stmt, t.TenantID); err != nil {
				fmt.Fprintf(os.Stderr, "%s: cleanup: %v\n", name, err)
			}
		}
		d.Close()
	}
	return d, t, drop, nil
}

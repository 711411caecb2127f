package load

import (
	"context"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

// TestTenantDropTakesItsTables: a benchmark's tenant leaves nothing behind,
// neither its row nor its schema's Postgres tables nor its events, so a
// bench database kept between runs does not grow with every run.
func TestTenantDropTakesItsTables(t *testing.T) {
	testenv.DB(t) // the test database, migrated
	ctx := context.Background()
	d, created, drop, err := Tenant(ctx, testenv.DatabaseURL(t), "bench-drop-test", 2)
	if err != nil {
		t.Fatal(err)
	}
	def := &schema.Definition{Name: "bench", Entities: []schema.Entity{{Name: "Thing", Fields: []schema.Field{{Name: "name", Type: schema.String}}}}}
	info, err := schema.NewService(d).Create(ctx, created.TenantID, def)
	if err != nil {
		drop()
		t.Fatal(err)
	}
	pg := schema.PgSchemaName(info.ID)
	if _, err := d.ExecContext(ctx, `INSERT INTO `+schema.QualifiedIdent(pg, "Thing")+` (id, name) VALUES (gen_random_uuid(), 'x')`); err != nil {
		drop()
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
		VALUES ($1, $2, 'bench', 'entity.created', 'Thing', gen_random_uuid(), '{}')`, created.TenantID, info.ID); err != nil {
		drop()
		t.Fatal(err)
	}
	drop()

	check := testenv.DB(t)
	for _, c := range []struct {
		what, sql string
		arg       string
	}{
		{"the tenant's Postgres schema", `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, pg},
		{"the tenant's events", `SELECT count(*) FROM dds.events WHERE tenant_id = $1`, created.TenantID},
		{"the tenant's row", `SELECT count(*) FROM dds.tenants WHERE id = $1`, created.TenantID},
		{"the tenant's schema rows", `SELECT count(*) FROM dds.schemas WHERE tenant_id = $1`, created.TenantID},
	} {
		var n int
		if err := check.GetContext(ctx, &n, c.sql, c.arg); err != nil {
			t.Fatal(err)
		}
		if n != 0 {
			t.Errorf("%s is still there after drop", c.what)
		}
	}
}

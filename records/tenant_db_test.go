package records_test

import (
	"context"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

// tenantSchema creates a tenant of its own, named after the test, with the
// schema def active, and returns the database, the schema service and the
// tenant.
func tenantSchema(t *testing.T, def *schema.Definition) (*sqlx.DB, *schema.Service, string) {
	t.Helper()
	d := testenv.DB(t)
	tenant := testenv.TenantRow(t, t.Name())
	schemas := schema.NewService(d)
	if _, err := schemas.Create(context.Background(), tenant, def); err != nil {
		t.Fatal(err)
	}
	return d, schemas, tenant
}

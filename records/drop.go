package records

import (
	"context"
	"fmt"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// DropTenantSchemas drops the data of every DDS schema of a tenant (its
// Postgres schemas, with their tables and edges) for a tenant delete; it
// is the one statement on tenant tables that does not go through a scope,
// because it serves no principal: the tenant is being deleted and has no
// credential left. done is called after each Postgres schema is dropped.
// It is idempotent (a schema already dropped is skipped), so a delete
// resumed after a worker crash runs it again. The dds.schemas rows stay
// for the tenant row's own delete to cascade.
func (s *Store) DropTenantSchemas(ctx context.Context, tenantID string, done func(pg string)) (int, error) {
	var ids []string
	if err := s.db.SelectContext(ctx, &ids, `SELECT id FROM dds.schemas WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID); err != nil {
		return 0, apperr.Wrap(err, "list the tenant's schemas")
	}
	for _, id := range ids {
		pg := schema.PgSchemaName(id)
		if _, err := s.db.ExecContext(ctx, fmt.Sprintf(`DROP SCHEMA IF EXISTS %s CASCADE`, schema.Ident(pg))); err != nil {
			return 0, apperr.Wrap(err, "drop schema %s", pg)
		}
		if done != nil {
			done(pg)
		}
	}
	s.schemas.Invalidate(tenantID)
	return len(ids), nil
}

package outbox

import (
	"fmt"

	"github.com/dds-project/dds/query"
)

// InsertUpsertCTE is InsertCTE for an upsert: the src rows are records of
// entity name that carry one more boolean column, createdCol, true where
// the row was inserted and false where it was updated (an INSERT ... ON
// CONFLICT ... DO UPDATE returns (xmax = 0) for that). Each row's event is
// entity.created or entity.updated accordingly, and its record is the row
// without createdCol. It binds, in order: tenant, schema id, schema name,
// the two event types, name. The event ids come from dds.events' default
// and are returned with their seq and created_at (see EventIDs).
func InsertUpsertCTE(a *query.Args, o Origin, name, src, createdCol string) string {
	t, sid, sn := a.Add(o.TenantID, "uuid"), a.Add(o.SchemaID, "uuid"), a.Add(o.SchemaName, "text")
	created, updated := a.Add(EntityCreated, "text"), a.Add(EntityUpdated, "text")
	n := a.Add(name, "text")
	col := `"` + createdCol + `"` // a constant of the caller, not a user name
	return fmt.Sprintf(`INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
  SELECT %s, %s, %s, CASE WHEN w.%s THEN %s ELSE %s END, %s, w."id", row_to_json(w)::jsonb - '%s' FROM %s w RETURNING id, seq, created_at`,
		t, sid, sn, col, created, updated, n, createdCol, src)
}

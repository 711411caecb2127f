package outbox

import (
	"context"
	"time"

	"github.com/dds-project/dds/schema"
)

// The expiring claim of relays before the held claim (hold.go): it wrote
// claimed_until on the events it took. No relay of this version makes it;
// the tests stand in an older relay with it, to show both kinds share one
// outbox during a rolling upgrade (Hold skips a live claimed_until, Claim
// skips held rows).

// Claim takes up to n unrelayed events whose claim is absent or expired,
// oldest first, and claims them for lease (SKIP LOCKED: concurrent
// claimers take disjoint batches).
func (s *Store) Claim(ctx context.Context, n int, lease time.Duration) ([]Event, error) {
	var out []Event
	err := s.db.SelectContext(ctx, &out, `WITH c AS (
			SELECT id FROM dds.events
			WHERE relayed_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
			ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
		UPDATE dds.events e SET claimed_until = now() + $2 * interval '1 millisecond'
		WHERE e.id = ANY(ARRAY(SELECT id FROM c))
		RETURNING e.id, e.tenant_id, COALESCE((SELECT name FROM dds.tenants t WHERE t.id = e.tenant_id), '') AS tenant_name,
			e.schema_name, e.type, e.entity_name, e.entity_id, e.record, e.created_at, e.seq`,
		n, lease.Milliseconds())
	return out, err
}

// Release ends the claim on those of ids not relayed yet.
func (s *Store) Release(ctx context.Context, ids []string) error {
	_, err := s.db.ExecContext(ctx, `UPDATE dds.events SET claimed_until = NULL WHERE id = ANY($1::uuid[]) AND relayed_at IS NULL`,
		schema.ArrayLiteral(sortedIDs(ids)))
	return err
}

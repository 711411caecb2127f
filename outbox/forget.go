package outbox

import (
	"context"

	"github.com/dds-project/dds/apperr"
)

// DeleteTenant removes every event of a tenant (a tenant delete), batch
// rows per statement so no transaction holds a large one's locks; it is
// idempotent. progress is called with the running total after each batch.
func (s *Store) DeleteTenant(ctx context.Context, tenantID string, batch int, progress func(int64)) (int64, error) {
	if batch <= 0 {
		batch = 10_000
	}
	var total int64
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM dds.events WHERE id IN (
			SELECT id FROM dds.events WHERE tenant_id = $1 LIMIT $2)`, tenantID, batch)
		if err != nil {
			return total, apperr.Wrap(err, "delete the tenant's events")
		}
		n, _ := res.RowsAffected()
		total += n
		if progress != nil {
			progress(total)
		}
		if n < int64(batch) {
			return total, nil
		}
	}
}

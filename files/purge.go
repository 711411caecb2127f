package files

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// PurgeTenant removes every file of a tenant (a tenant delete): the
// objects from storage, then their rows, a page at a time, whatever their
// status. It is idempotent: a row goes only after its object, and deleting
// an object already gone is not an error, so a purge cut short by a crash
// resumes where it stopped. progress is called with the running total.
func PurgeTenant(ctx context.Context, d *sqlx.DB, store ObjectStore, tenantID string, progress func(int64)) (int64, error) {
	const page = 200
	var total int64
	for {
		var rows []struct {
			ID  string `db:"id"`
			Key string `db:"storage_key"`
		}
		if err := d.SelectContext(ctx, &rows, `SELECT id, storage_key FROM dds.files WHERE tenant_id = $1 ORDER BY id LIMIT $2`, tenantID, page); err != nil {
			return total, apperr.Wrap(err, "list the tenant's files")
		}
		if len(rows) == 0 {
			return total, nil
		}
		ids := make([]string, 0, len(rows))
		for _, r := range rows {
			if err := store.Delete(ctx, r.Key); err != nil {
				return total, apperr.Wrap(err, "delete object of file %s", r.ID)
			}
			ids = append(ids, r.ID)
		}
		if _, err := d.ExecContext(ctx, `DELETE FROM dds.files WHERE tenant_id = $1 AND id = ANY($2::uuid[])`, tenantID, ids); err != nil {
			return total, apperr.Wrap(err, "delete the tenant's file rows")
		}
		total += int64(len(rows))
		if progress != nil {
			progress(total)
		}
	}
}

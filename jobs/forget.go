package jobs

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// RunningWorkflowIDs are the workflow IDs of a tenant's jobs that have not
// ended (a tenant delete cancels them, also on a Temporal namespace
// without the DDS search attributes).
func RunningWorkflowIDs(ctx context.Context, d *sqlx.DB, tenantID string) ([]string, error) {
	var ids []string
	if err := d.SelectContext(ctx, &ids, `SELECT id FROM dds.jobs WHERE tenant_id = $1 AND status IN ('queued', 'running')`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "list the tenant's running jobs")
	}
	for i, id := range ids {
		ids[i] = WorkflowID(id)
	}
	return ids, nil
}

package auth

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// A key is live while it is not revoked and its tenant is not being
// deleted. The tenant condition closes the one gap key revocation leaves
// when a tenant is deleted: a key created by a request that raced the
// delete's transaction (its insert waited on the tenant row and committed
// after the revocation) belongs to a deleted tenant and is refused too.
const (
	liveKeyByHash = `SELECT k.id, k.tenant_id, k.scopes, k.role FROM dds.api_keys k JOIN dds.tenants t ON t.id = k.tenant_id
		WHERE k.key_hash = $1 AND k.revoked_at IS NULL AND t.deleted_at IS NULL`
	liveKeyByID = `SELECT EXISTS (SELECT 1 FROM dds.api_keys k JOIN dds.tenants t ON t.id = k.tenant_id
		WHERE k.id = $1 AND k.revoked_at IS NULL AND t.deleted_at IS NULL)`
)

// RevokeTenantIn revokes every live key of a tenant inside q, the
// transaction that accepts the tenant's delete: the revocation trigger
// tells every replica at commit (NOTIFY dds_keys), and the caller drops the
// returned keys from its own replica's cache at once (Authenticator.Revoked),
// so the tenant's keys and the access tokens they minted answer 401 from
// the moment the delete is accepted.
func (k *Keys) RevokeTenantIn(ctx context.Context, q sqlx.QueryerContext, tenantID string) ([]string, error) {
	var ids []string
	err := sqlx.SelectContext(ctx, q, &ids, `UPDATE dds.api_keys SET revoked_at = now()
		WHERE tenant_id = $1 AND revoked_at IS NULL RETURNING id`, tenantID)
	if err != nil {
		return nil, apperr.Wrap(err, "revoke the tenant's keys")
	}
	return ids, nil
}

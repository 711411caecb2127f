package auth

import (
	"context"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
)

// KeyInfo is an API key as listed (never with its secret).
type KeyInfo struct {
	ID        string     `json:"id" db:"id"`
	Name      string     `json:"name" db:"name"`
	Prefix    string     `json:"prefix" db:"key_prefix"`
	Scopes    []string   `json:"scopes" db:"-"`
	Role      string     `json:"role,omitempty" db:"-"`
	CreatedAt time.Time  `json:"createdAt" db:"created_at"`
	LastUsed  *time.Time `json:"lastUsed" db:"last_used"`
}

// NewKeyResult is the create response: the only time the key is shown.
type NewKeyResult struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Key       string    `json:"key"`
	Scopes    []string  `json:"scopes"`
	Role      string    `json:"role,omitempty"`
	CreatedAt time.Time `json:"createdAt"`
}

// Keys manages a tenant's API keys.
type Keys struct {
	db  *sqlx.DB
	env string
}

// NewKeys returns the key store for a deployment's key env.
func NewKeys(db *sqlx.DB, env string) *Keys { return &Keys{db: db, env: env} }

// Create stores a new key (hash only) and returns it once.
func (k *Keys) Create(ctx context.Context, tenantID, name string, scopes Scopes) (NewKeyResult, error) {
	return k.CreateIn(ctx, k.db, tenantID, name, scopes)
}

// CreateIn is Create inside q, a transaction (tenant creation).
func (k *Keys) CreateIn(ctx context.Context, q sqlx.ExtContext, tenantID, name string, scopes Scopes) (NewKeyResult, error) {
	return k.create(ctx, q, tenantID, name, scopes, "")
}

// CreateBound is Create for a key bound to a role of the tenant: its
// requests act within the role's scopes and under its rules. A role that
// does not exist is a VALIDATION_ERROR naming "role" (the foreign key to
// dds.roles decides, so a role deleted meanwhile cannot be bound).
func (k *Keys) CreateBound(ctx context.Context, tenantID, name string, scopes Scopes, role string) (NewKeyResult, error) {
	return k.create(ctx, k.db, tenantID, name, scopes, role)
}

func (k *Keys) create(ctx context.Context, q sqlx.ExtContext, tenantID, name string, scopes Scopes, role string) (NewKeyResult, error) {
	if name == "" || len(name) > 200 {
		return NewKeyResult{}, apperr.Field("name", "is required (at most 200 characters)")
	}
	key, hash, prefix := NewKey(k.env)
	id := uuid.Must(uuid.NewV7()).String()
	var created time.Time
	err := sqlx.GetContext(ctx, q, &created, `INSERT INTO dds.api_keys (id, tenant_id, name, key_hash, key_prefix, scopes, role) VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, '')) RETURNING created_at`,
		id, tenantID, name, hash, prefix, scopes.Strings(), role)
	if pe, ok := db.PgError(err); ok && pe.Code == "23503" && role != "" {
		return NewKeyResult{}, apperr.Field("role", "no role named %q in this tenant", role)
	}
	if err != nil {
		return NewKeyResult{}, apperr.Wrap(err, "create key")
	}
	return NewKeyResult{ID: id, Name: name, Key: key, Scopes: scopes.Strings(), Role: role, CreatedAt: created}, nil
}

// List returns the tenant's live keys.
func (k *Keys) List(ctx context.Context, tenantID string) ([]KeyInfo, error) {
	rows, err := k.db.QueryxContext(ctx, `SELECT id, name, key_prefix, scopes, coalesce(role, ''), created_at, last_used FROM dds.api_keys WHERE tenant_id = $1 AND revoked_at IS NULL ORDER BY created_at, id`, tenantID)
	if err != nil {
		return nil, apperr.Wrap(err, "list keys")
	}
	defer rows.Close()
	out := []KeyInfo{}
	for rows.Next() {
		var ki KeyInfo
		var scopes pq.StringArray
		if err := rows.Scan(&ki.ID, &ki.Name, &ki.Prefix, &scopes, &ki.Role, &ki.CreatedAt, &ki.LastUsed); err != nil {
			return nil, apperr.Wrap(err, "list keys")
		}
		ki.Scopes = scopes
		out = append(out, ki)
	}
	return out, rows.Err()
}

// Revoke revokes a key of the tenant; the NOTIFY trigger tells every
// replica to drop it at once.
func (k *Keys) Revoke(ctx context.Context, tenantID, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return apperr.New(apperr.NotFound, "API key %q not found", id)
	}
	res, err := k.db.ExecContext(ctx, `UPDATE dds.api_keys SET revoked_at = now() WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL`, tenantID, id)
	if err != nil {
		return apperr.Wrap(err, "revoke key")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.New(apperr.NotFound, "API key %q not found", id)
	}
	return nil
}

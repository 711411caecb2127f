package roles

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/schema"
)

// Roles as part of a schema file (docs/schemas.md, Schemas as code): the
// whole set of a tenant's roles replaced together with a schema change,
// in its transaction. ValidateSet runs before anything is written;
// ReplaceTx writes inside the schema change's transaction, so a refused
// role leaves the schema as it was and the other way round.

// ValidateSet checks a set of roles (name → definition) against def, the
// schema they are pushed with (pgSchema: its Postgres schema), and
// returns the union of their scopes. Errors name the path in the file:
// roles.<name>.rules.Todo.read.ownerId, roles.<name>.scopes[0].
func ValidateSet(def *schema.Definition, pgSchema string, set map[string]*Definition) (auth.Scopes, error) {
	if len(set) > MaxRolesPerTenant {
		return nil, apperr.Field("roles", "a tenant may have at most %d roles", MaxRolesPerTenant)
	}
	var all auth.Scopes
	for _, name := range sortedKeys(set) {
		p := "roles." + name
		d := set[name]
		if !schema.ValidIdent(name) {
			return nil, apperr.Field(p, "a role name must start with a letter and hold only letters, digits and _ (at most 63)")
		}
		if d == nil {
			return nil, apperr.Field(p, "must be a role definition ({scopes, rules, fields})")
		}
		scopes, err := auth.ParseScopes(d.Scopes)
		if err != nil {
			return nil, prefixed(p, err)
		}
		if err := validateRules(def, pgSchema, d); err != nil {
			return nil, prefixed(p, err)
		}
		if b, _ := json.Marshal(d); len(b) > maxRuleBytes {
			return nil, apperr.Field(p, "a role's definition must be at most %d bytes", maxRuleBytes)
		}
		all = append(all, scopes...)
	}
	return all, nil
}

// prefixed puts p in front of the paths of a validation error.
func prefixed(p string, err error) error {
	e := apperr.As(err)
	if e.Code != apperr.Validation {
		return err
	}
	out := &apperr.Error{Code: e.Code, Message: p + "." + e.Message, Extra: e.Extra, Err: e.Err}
	for _, d := range e.Details {
		d.Field = p + "." + d.Field
		out.Details = append(out.Details, d)
	}
	return out
}

// RoleChange is what ReplaceTx did to one role.
type RoleChange struct {
	Name   string `json:"name"`
	Change string `json:"change"` // created, updated, deleted (unchanged roles are not listed)
}

// ReplaceTx makes set (validated by ValidateSet) the tenant's roles in tx:
// new roles are created, changed ones replaced (their version grows),
// unchanged ones left as they are, and those not in set deleted. A role to
// delete that a live API key is bound to is a CONFLICT naming it. The
// caches drop the tenant's roles when tx commits (NOTIFY dds_roles); call
// Invalidate after the commit for this replica.
func (s *Store) ReplaceTx(ctx context.Context, tx *sqlx.Tx, tenantID string, set map[string]*Definition) ([]RoleChange, error) {
	var rows []roleRow
	if err := tx.SelectContext(ctx, &rows, `SELECT name, version, definition, created_at, updated_at, false AS created FROM dds.roles WHERE tenant_id = $1 FOR UPDATE`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "read roles")
	}
	have := map[string][]byte{}
	for _, r := range rows {
		have[r.Name] = r.Definition
	}
	var out []RoleChange
	for _, name := range sortedKeys(have) {
		if _, keep := set[name]; keep {
			continue
		}
		var keys pq.StringArray
		if err := tx.GetContext(ctx, &keys, `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM dds.api_keys WHERE tenant_id = $1 AND role = $2 AND revoked_at IS NULL`, tenantID, name); err != nil {
			return nil, apperr.Wrap(err, "delete role")
		}
		if len(keys) > 0 {
			return nil, &apperr.Error{Code: apperr.Conflict, Message: "role " + name + " is not in the file but API keys " + strings.Join(keys, ", ") + " are bound to it; revoke them or keep the role",
				Details: []apperr.FieldError{{Field: "roles." + name, Message: "is bound to API keys"}}}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE dds.api_keys SET role = NULL WHERE tenant_id = $1 AND role = $2 AND revoked_at IS NOT NULL`, tenantID, name); err != nil {
			return nil, apperr.Wrap(err, "delete role")
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM dds.roles WHERE tenant_id = $1 AND name = $2`, tenantID, name); err != nil {
			return nil, apperr.Wrap(err, "delete role")
		}
		out = append(out, RoleChange{Name: name, Change: "deleted"})
	}
	for _, name := range sortedKeys(set) {
		body, err := json.Marshal(set[name])
		if err != nil {
			return nil, apperr.Wrap(err, "encode role")
		}
		old, exists := have[name]
		if exists && sameJSON(old, body) {
			continue
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO dds.roles AS r (tenant_id, name, definition) VALUES ($1, $2, $3)
			ON CONFLICT (tenant_id, name) DO UPDATE SET definition = EXCLUDED.definition, version = r.version + 1, updated_at = now()`,
			tenantID, name, body); err != nil {
			return nil, apperr.Wrap(err, "store role")
		}
		change := "created"
		if exists {
			change = "updated"
		}
		out = append(out, RoleChange{Name: name, Change: change})
	}
	return out, nil
}

// sameJSON reports whether two JSON documents hold the same value
// (Postgres jsonb reorders members).
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// Package roles owns the roles of a tenant (table dds.roles): what a
// principal holding a role may do (its scopes), which rows it may reach
// (rules: read, create check and preset, update where and check, delete)
// and which fields (fields: read, write). A role is validated against the
// tenant's active schema when stored, and versioned: every change bumps its
// version, which principals carry (auth.Principal.RoleSet), so anything
// compiled from a role is keyed by its exact definition.
//
// The store is also the authenticator's auth.RoleSource: a tenant's roles
// are cached per replica and dropped on NOTIFY dds_roles (Invalidate), so a
// role's change applies to every credential holding it at once.
package roles

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Definition is a role as PUT /api/v1/roles/{name} takes it (docs/auth.md).
type Definition struct {
	Scopes []string                `json:"scopes"`
	Rules  map[string]*EntityRules `json:"rules,omitempty"`
	Fields map[string]*FieldLists  `json:"fields,omitempty"`
}

// EntityRules are the row rules of one entity. A where is the REST filter
// DSL whose values may be variables (ParseWhere); nil means no restriction.
type EntityRules struct {
	Read   map[string]any `json:"read,omitempty"`
	Create *CreateRule    `json:"create,omitempty"`
	Update *UpdateRule    `json:"update,omitempty"`
	Delete map[string]any `json:"delete,omitempty"`
}

// CreateRule: a created record must pass Check; Preset values override what
// the client sent (a value may be a variable).
type CreateRule struct {
	Check  map[string]any `json:"check,omitempty"`
	Preset map[string]any `json:"preset,omitempty"`
}

// UpdateRule: only records matching Where may be updated, and the result
// must pass Check.
type UpdateRule struct {
	Where map[string]any `json:"where,omitempty"`
	Check map[string]any `json:"check,omitempty"`
}

// FieldLists are the fields a role may read and write (nil: all).
type FieldLists struct {
	Read  []string `json:"read,omitempty"`
	Write []string `json:"write,omitempty"`
}

// Role is a stored role.
type Role struct {
	Name      string    `json:"name"`
	Version   int64     `json:"version"`
	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	Definition
	scopes auth.Scopes
}

// Scopes returns the role's parsed scopes.
func (r *Role) Scopes() auth.Scopes { return r.scopes }

// Schemas is what the store needs of the schema service.
type Schemas interface {
	ActiveFor(ctx context.Context, tenantID string) (*schema.Active, error)
}

// Store keeps the tenants' roles.
type Store struct {
	db      *sqlx.DB
	schemas Schemas

	mu    sync.RWMutex
	gen   uint64                      // invalidations seen (any tenant); under mu
	cache map[string]map[string]*Role // tenant -> name -> role
}

// NewStore returns the role store.
func NewStore(d *sqlx.DB, schemas Schemas) *Store {
	return &Store{db: d, schemas: schemas, cache: map[string]map[string]*Role{}}
}

// Limits.
const (
	MaxRolesPerTenant = 200
	maxRuleBytes      = 64 << 10
)

// Validate checks a role's name and definition against the tenant's active
// schema (when it has rules or field lists) and returns its scopes. Errors
// are VALIDATION_ERRORs naming the path (scopes[1], rules.Todo.read.ownerId,
// fields.Todo.write[0]).
func (s *Store) Validate(ctx context.Context, tenantID, name string, d *Definition) (auth.Scopes, error) {
	if !schema.ValidIdent(name) {
		return nil, apperr.Field("name", "must start with a letter and hold only letters, digits and _ (at most 63)")
	}
	scopes, err := auth.ParseScopes(d.Scopes)
	if err != nil {
		return nil, err
	}
	if len(d.Rules) == 0 && len(d.Fields) == 0 {
		return scopes, nil
	}
	a, err := s.schemas.ActiveFor(ctx, tenantID)
	if err != nil {
		if apperr.As(err).Code == apperr.NotFound {
			return nil, apperr.Field("rules", "the tenant has no active schema for rules and field lists to name")
		}
		return nil, err
	}
	return scopes, validateRules(a.Def, a.PgSchema, d)
}

// validateRules checks a role's rules and field lists against def (the
// schema they will be compiled for; pgSchema is its Postgres schema).
func validateRules(def *schema.Definition, pgSchema string, d *Definition) error {
	c := query.New(def, pgSchema)
	where := func(entity string, m map[string]any, path string) error {
		if m == nil {
			return nil
		}
		f, err := ParseWhere(def, entity, m, path)
		if err != nil {
			return err
		}
		e, _ := def.Entity(entity)
		_, err = c.Where(entity, sampled(def, e, f), "t", path, &query.Args{})
		return err
	}
	for _, entity := range sortedKeys(d.Rules) {
		r := d.Rules[entity]
		p := "rules." + entity
		e, ok := def.Entity(entity)
		if !ok {
			return apperr.Field(p, "unknown entity %s", entity)
		}
		if r == nil {
			continue
		}
		if err := where(entity, r.Read, p+".read"); err != nil {
			return err
		}
		if r.Create != nil {
			if err := where(entity, r.Create.Check, p+".create.check"); err != nil {
				return err
			}
			if err := presets(e, r.Create.Preset, p+".create.preset"); err != nil {
				return err
			}
		}
		if r.Update != nil {
			if err := where(entity, r.Update.Where, p+".update.where"); err != nil {
				return err
			}
			if err := where(entity, r.Update.Check, p+".update.check"); err != nil {
				return err
			}
		}
		if err := where(entity, r.Delete, p+".delete"); err != nil {
			return err
		}
	}
	for _, entity := range sortedKeys(d.Fields) {
		fl := d.Fields[entity]
		p := "fields." + entity
		e, ok := def.Entity(entity)
		if !ok {
			return apperr.Field(p, "unknown entity %s", entity)
		}
		if fl == nil {
			continue
		}
		for i, f := range fl.Read {
			if _, ok := e.Field(f); !ok && f != schema.ColID && f != schema.ColCreatedAt && f != schema.ColUpdatedAt {
				return apperr.Field(fmt.Sprintf("%s.read[%d]", p, i), "unknown field %s on %s", f, entity)
			}
		}
		for i, f := range fl.Write {
			if _, ok := e.Field(f); !ok {
				return apperr.Field(fmt.Sprintf("%s.write[%d]", p, i), "unknown or read-only field %s on %s", f, entity)
			}
		}
	}
	return nil
}

// presets checks a create rule's presets: fields of e, values of the
// field's type or variables.
func presets(e *schema.Entity, m map[string]any, path string) error {
	for _, k := range sortedKeys(m) {
		f, ok := e.Field(k)
		if !ok {
			return apperr.Field(path+"."+k, "unknown or read-only field %s on %s", k, e.Name)
		}
		if s, isStr := m[k].(string); isStr {
			if _, isVar, err := parseVariable(s); err != nil {
				return apperr.Field(path+"."+k, "%s", err.Error())
			} else if isVar {
				continue
			}
		}
		if _, err := schema.CoerceValue(f, m[k]); err != nil {
			return apperr.Field(path+"."+k, "%s", err.Error())
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Put creates or replaces the role name of the tenant (its version grows)
// and reports whether it was created.
func (s *Store) Put(ctx context.Context, tenantID, name string, d *Definition) (*Role, bool, error) {
	if _, err := s.Validate(ctx, tenantID, name, d); err != nil {
		return nil, false, err
	}
	body, err := json.Marshal(d)
	if err != nil {
		return nil, false, apperr.Wrap(err, "encode role")
	}
	if len(body) > maxRuleBytes {
		return nil, false, apperr.New(apperr.TooLarge, "a role's definition must be at most %d bytes", maxRuleBytes)
	}
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM dds.roles WHERE tenant_id = $1`, tenantID); err != nil {
		return nil, false, apperr.Wrap(err, "count roles")
	}
	var row roleRow
	err = s.db.GetContext(ctx, &row, `INSERT INTO dds.roles AS r (tenant_id, name, definition)
		SELECT $1, $2, $3 WHERE $4 OR EXISTS (SELECT 1 FROM dds.roles WHERE tenant_id = $1 AND name = $2)
		ON CONFLICT (tenant_id, name) DO UPDATE SET definition = EXCLUDED.definition, version = r.version + 1, updated_at = now()
		RETURNING name, version, definition, created_at, updated_at, (xmax = 0) AS created`,
		tenantID, name, body, n < MaxRolesPerTenant)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, apperr.New(apperr.Validation, "a tenant may have at most %d roles", MaxRolesPerTenant)
	}
	if err != nil {
		return nil, false, apperr.Wrap(err, "store role")
	}
	s.Invalidate(tenantID)
	r, err := row.role()
	return r, row.Created, err
}

type roleRow struct {
	Name       string    `db:"name"`
	Version    int64     `db:"version"`
	Definition []byte    `db:"definition"`
	CreatedAt  time.Time `db:"created_at"`
	UpdatedAt  time.Time `db:"updated_at"`
	Created    bool      `db:"created"`
}

func (r roleRow) role() (*Role, error) {
	out := &Role{Name: r.Name, Version: r.Version, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	d := json.NewDecoder(strings.NewReader(string(r.Definition)))
	d.UseNumber()
	if err := d.Decode(&out.Definition); err != nil {
		return nil, apperr.Wrap(err, "decode role %s", r.Name)
	}
	sc, err := auth.ParseScopes(out.Definition.Scopes)
	if err != nil {
		return nil, apperr.Wrap(err, "stored scopes of role %s", r.Name)
	}
	out.scopes = sc
	return out, nil
}

// Get returns the role name of the tenant (NOT_FOUND if none).
func (s *Store) Get(ctx context.Context, tenantID, name string) (*Role, error) {
	all, err := s.tenantRoles(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	r, ok := all[name]
	if !ok {
		return nil, apperr.New(apperr.NotFound, "role %q not found", name)
	}
	return r, nil
}

// List returns the tenant's roles by name.
func (s *Store) List(ctx context.Context, tenantID string) ([]*Role, error) {
	all, err := s.tenantRoles(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]*Role, 0, len(all))
	for _, r := range all {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b *Role) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Delete removes a role. A role bound to a live API key is a CONFLICT
// (revoke or recreate the key first); revoked keys let go of it. Tokens
// naming it lose it at their next request.
func (s *Store) Delete(ctx context.Context, tenantID, name string) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return apperr.Wrap(err, "delete role")
	}
	defer func() { _ = tx.Rollback() }()
	var keys pq.StringArray
	if err := tx.GetContext(ctx, &keys, `SELECT coalesce(array_agg(name ORDER BY name), '{}') FROM dds.api_keys WHERE tenant_id = $1 AND role = $2 AND revoked_at IS NULL`, tenantID, name); err != nil {
		return apperr.Wrap(err, "delete role")
	}
	if len(keys) > 0 {
		return apperr.New(apperr.Conflict, "role %q is bound to API keys %s; revoke them first", name, strings.Join(keys, ", "))
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dds.api_keys SET role = NULL WHERE tenant_id = $1 AND role = $2 AND revoked_at IS NOT NULL`, tenantID, name); err != nil {
		return apperr.Wrap(err, "delete role")
	}
	res, err := tx.ExecContext(ctx, `DELETE FROM dds.roles WHERE tenant_id = $1 AND name = $2`, tenantID, name)
	if pe, ok := db.PgError(err); ok && pe.Code == "23503" { // a key bound meanwhile
		return apperr.New(apperr.Conflict, "role %q is bound to an API key; revoke it first", name)
	}
	if err != nil {
		return apperr.Wrap(err, "delete role")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.New(apperr.NotFound, "role %q not found", name)
	}
	if err := tx.Commit(); err != nil {
		return apperr.Wrap(err, "delete role")
	}
	s.Invalidate(tenantID)
	return nil
}

// Roles implements auth.RoleSource: those of names the tenant has.
func (s *Store) Roles(ctx context.Context, tenantID string, names []string) ([]auth.RoleGrant, error) {
	all, err := s.tenantRoles(ctx, tenantID)
	if err != nil {
		return nil, err
	}
	out := make([]auth.RoleGrant, 0, len(names))
	for _, n := range names {
		if r, ok := all[n]; ok && !slices.ContainsFunc(out, func(g auth.RoleGrant) bool { return g.Name == n }) {
			out = append(out, auth.RoleGrant{Name: r.Name, Version: r.Version, Scopes: r.scopes})
		}
	}
	return out, nil
}

// tenantRoles returns the tenant's roles, from the cache or read once. A
// read that began before an invalidation is not cached (the same rule as
// the authenticator's keys: a change wins every race with a cache fill).
func (s *Store) tenantRoles(ctx context.Context, tenantID string) (map[string]*Role, error) {
	s.mu.RLock()
	all, ok := s.cache[tenantID]
	gen := s.gen
	s.mu.RUnlock()
	if ok {
		return all, nil
	}
	var rows []roleRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT name, version, definition, created_at, updated_at, false AS created FROM dds.roles WHERE tenant_id = $1`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "read roles")
	}
	all = make(map[string]*Role, len(rows))
	for _, row := range rows {
		r, err := row.role()
		if err != nil {
			return nil, err
		}
		all[r.Name] = r
	}
	s.mu.Lock()
	if s.gen == gen {
		s.cache[tenantID] = all
	}
	s.mu.Unlock()
	return all, nil
}

// Invalidate drops the tenant's cached roles (wired to NOTIFY dds_roles,
// whose payload is the tenant id).
func (s *Store) Invalidate(tenantID string) {
	s.mu.Lock()
	s.gen++
	delete(s.cache, tenantID)
	s.mu.Unlock()
}

// Flush drops every cached role (after a missed-notification window).
func (s *Store) Flush() {
	s.mu.Lock()
	s.gen++
	s.cache = map[string]map[string]*Role{}
	s.mu.Unlock()
}

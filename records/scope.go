package records

import (
	"context"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Scope is what one request (or one step of a job) may reach: its
// tenant's active schema, as a principal sees it. Every statement records
// runs is compiled for a scope, so no caller reaches another tenant's
// tables, and what will depend on the principal (end-user row rules) has
// one place to be applied.
type Scope struct {
	TenantID string
	Schema   *schema.Active
	compiler *query.Compiler

	principal *auth.Principal
	stmtKey   string      // the schema version's memo holding stmts()
	ruleSet   string      // the role definitions compiler's rules come from (schemaview.go)
	local     *localRules // localrules.go; shared by copies of the scope
}

// Scope resolves the active schema of p's tenant for p.
func (s *Store) Scope(ctx context.Context, p *auth.Principal) (*Scope, error) {
	if p == nil || p.TenantID == "" {
		return nil, apperr.New(apperr.Internal, "records: a scope needs a principal of a tenant")
	}
	a, err := s.schemas.ActiveFor(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	c := a.Memo(s.compilerKey, func() any {
		return query.New(a.Def, a.PgSchema).WithVectorEfSearch(s.efSearch)
	}).(*query.Compiler)
	var ruleSet string
	if p.RoleSet != "" && s.rules != nil { // rules.go
		if c, ruleSet, err = s.ruledCompiler(ctx, a, c, p.RoleSet, p.TenantID, p.Roles); err != nil {
			return nil, err
		}
	}
	return &Scope{TenantID: p.TenantID, Schema: a, compiler: c, principal: p, stmtKey: s.stmtKey, ruleSet: ruleSet, local: &localRules{}}, nil
}

// SystemPrincipal is the principal of work that no request carries and
// whose creator is not under rules: the worker's steps of a batch job
// whose creator has no role. It holds every
// scope; when row rules exist it has no role, so it sees every row of its
// tenant, as webhooks do. Work that records its creator runs as the
// creator instead.
func SystemPrincipal(tenantID string) *auth.Principal {
	return &auth.Principal{TenantID: tenantID, Scopes: auth.Scopes{{Kind: "*", Name: "*", Op: "*"}}}
}

// Principal is who the scope acts for.
func (sc *Scope) Principal() *auth.Principal { return sc.principal }

// ruleKey names the principal's rule inputs that compiled SQL depends on.
//
// Invariant: every cache of compiled SQL in this package (stmtCache on the
// schema version, the Kept memos callers hold, the compiler memo itself)
// is keyed by everything the SQL depends on: the schema version, the
// compiler (ef_search), and this. A principal's rules come from its roles
// (auth.Principal.Roles), so two principals with the same roles at the same
// role versions compile the same rules: ruleKey carries Principal.RoleSet
// ("name@version,..."; "" without roles, as for keys, access tokens and
// the system principal, whose statements are unchanged), plus
// "withDeleted" when soft-deleted rows are shown (WithDeleted). The user id
// and claims ($user.id, $user.claims.<path>) are NOT in the key: rule
// compilation must bind them as values, never write them into SQL text,
// and must compile a variable the principal lacks to the same text (a
// bound NULL, which denies), so one statement serves every user of a role
// set. A rule input that cannot be bound must join this key.
func (sc *Scope) ruleKey() string {
	k := sc.principal.RoleSet
	if sc.compiler.ShowsDeleted() {
		k += "\x00withDeleted"
	}
	return k
}

// Entity returns the active schema's entity name (NOT_FOUND if none).
func (sc *Scope) Entity(name string) (*schema.Entity, error) { return sc.compiler.Entity(name) }

// Relationship returns the active schema's relationship name (NOT_FOUND
// if none).
func (sc *Scope) Relationship(name string) (*schema.Relationship, error) {
	return sc.compiler.Relationship(name)
}

// Keys returns the sort keys a list of entity with orderBy really uses, in
// order (the given keys up to the first "id", then an "id" in the last
// key's direction when none was given): the keys a cursor's values follow. A bad key is a
// VALIDATION_ERROR.
func (sc *Scope) Keys(entity string, orderBy []query.Order) ([]query.Order, error) {
	return sc.compiler.Keys(entity, orderBy)
}

package records

import (
	"context"
	"fmt"
	"strings"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// End-user rules (docs/auth.md, "Rules"): a principal with roles gets a
// scope whose compiler applies its roles' rules (query.WithRules), kept on
// the schema version per role set, so the rules are part of the one
// statement of every read and write. Variables are bound per execution
// (Scope.bind): compiled SQL never holds a user's values.

// RuleSource gives the rules of a tenant's roles, parsed against a schema
// version. Declared here, where it is consumed; implemented by package
// roles. roleSet names the roles' exact definitions ("name@version,...",
// as auth.Principal.RoleSet).
type RuleSource interface {
	RoleRules(ctx context.Context, tenantID string, def *schema.Definition, names []string) (rules []query.RoleRules, roleSet string, err error)
}

// WithRuleSource makes the store enforce the rules of principals' roles.
func WithRuleSource(r RuleSource) Option {
	return func(s *Store) { s.rules = r }
}

// ruledCompiler returns base applying the rules of p's roles, kept on the
// schema version a per role set. A principal resolved before its roles
// changed (its RoleSet names older versions) gets a compiler of the
// current rules that is not kept under the old name. The role set
// returned names the definitions the compiler's rules come from.
func (s *Store) ruledCompiler(ctx context.Context, a *schema.Active, base *query.Compiler, roleSet string, tenantID string, roles []string) (*query.Compiler, string, error) {
	key := s.compilerKey + "\x00rules\x00" + roleSet
	if c, ok := a.Lookup(key); ok {
		return c.(*query.Compiler), roleSet, nil
	}
	rr, set, err := s.rules.RoleRules(ctx, tenantID, a.Def, roles)
	if err != nil {
		return nil, "", err
	}
	c := base.WithRules(rr)
	if set != roleSet {
		return c, set, nil
	}
	return a.Memo(key, func() any { return c }).(*query.Compiler), set, nil
}

// variable is the value of a rule variable for the scope's principal.
func (sc *Scope) variable(v query.Var) (any, bool) {
	p := sc.principal
	switch v {
	case query.VarUserID:
		return p.UserID, p.UserID != ""
	case query.VarUserRoles:
		out := make([]any, len(p.Roles))
		for i, r := range p.Roles {
			out[i] = r
		}
		return out, true
	}
	path, ok := query.IsClaimVar(v)
	if !ok {
		return nil, false
	}
	var cur any = p.Claims
	for _, seg := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, cur != nil
}

// bind returns args with the rule variables bound for the scope's
// principal (args itself when there are none).
func (sc *Scope) bind(args []any) []any {
	if !query.HasParams(args) {
		return args
	}
	return query.BindParams(args, sc.variable)
}

// Admits reports whether the scope's principal may see record, a JSON
// object of entity's fields (an event's record; for a delete, the record
// as it was): whether it passes the entity's read rule, evaluated in
// Postgres with the query semantics of every read (relationship
// conditions see the related records as they are now). Without a read
// rule on entity it is true without a round trip. The live feed calls it
// per subscriber; fields outside the read list are the caller's to drop
// (Scope.Readable).
func (s *Store) Admits(ctx context.Context, sc *Scope, entity string, record []byte) (bool, error) {
	if _, err := sc.compiler.Entity(entity); err != nil {
		return false, err
	}
	if !sc.compiler.ReadRestricted(entity) {
		return true, nil
	}
	var a query.Args
	rec := a.Add(string(record), "jsonb")
	w := sc.compiler.ReadRule(entity, "t", &a)
	var ok bool
	err := s.db.QueryRowContext(ctx, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM jsonb_populate_record(NULL::%s, %s) t WHERE %s)`,
		sc.compiler.Table(entity), rec, w), sc.bind(a.List())...).Scan(&ok)
	if err != nil {
		return false, MapError(sc, entity, err)
	}
	return ok, nil
}

// Readable reports whether the scope's principal may read field of
// entity (its roles' field lists).
func (sc *Scope) Readable(entity, field string) bool { return sc.compiler.Readable(entity, field) }

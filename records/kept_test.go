package records

import (
	"testing"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// A statement kept under one scope is served only to scopes with the same
// key: the same compiler and the same rule inputs.
func TestKeptServesOnlyItsKey(t *testing.T) {
	def := &schema.Definition{Name: "k", Entities: []schema.Entity{{Name: "Doc", Fields: []schema.Field{{Name: "title", Type: schema.String}}}}}
	c := query.New(def, "s_a")
	scope := func(c *query.Compiler, tenant string) *Scope {
		return &Scope{TenantID: tenant, compiler: c, principal: SystemPrincipal(tenant)}
	}
	a := scope(c, "t1")
	st := query.Statement{SQL: "SELECT 1"}
	var k Kept
	if _, ok := k.load(a); ok {
		t.Fatal("an empty Kept served a statement")
	}
	k.store(a, st)
	for _, tc := range []struct {
		name string
		sc   *Scope
		want bool
	}{
		{"same scope", a, true},
		{"another principal, same compiler and no rules", scope(c, "t1"), true},
		{"another schema version", scope(query.New(def, "s_a"), "t1"), false},
		{"another ef_search", scope(c.WithVectorEfSearch(100), "t1"), false},
	} {
		if _, ok := k.load(tc.sc); ok != tc.want {
			t.Errorf("%s: served = %v, want %v", tc.name, ok, tc.want)
		}
	}
	// Rule inputs are part of the key: a statement kept for other rule
	// inputs is not served to a scope whose ruleKey differs.
	k.p.Store(&keptStatement{key: keptKey{c: c, rules: "role=editor"}, st: st})
	if _, ok := k.load(a); ok {
		t.Error("a statement kept for other rule inputs was served")
	}
	var nilKept *Kept
	nilKept.store(a, st) // no-op
	if _, ok := nilKept.load(a); ok {
		t.Error("a nil Kept served a statement")
	}
}

package records_test

import (
	"context"
	"testing"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// ListKeptFunc compiles a plan once per scope key: the memo filled under one
// scope serves the same scope, and a scope whose compiler differs (another
// ef_search here; another schema version alike) compiles its own.
func TestListKeptRecompilesForAnotherScope(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "kept", Entities: []schema.Entity{{Name: "Doc", Fields: []schema.Field{
		{Name: "title", Type: schema.String},
	}}}})
	p := records.SystemPrincipal(tenant)
	s := records.NewStore(d, schemas, nil)
	sc, err := s.Scope(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, sc, "Doc", map[string]any{"title": "a"}); err != nil {
		t.Fatal(err)
	}
	other, err := records.NewStore(d, schemas, nil, records.WithVectorEfSearch(77)).Scope(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	var k records.Kept
	plans := 0
	list := func(sc *records.Scope) string {
		t.Helper()
		var out string
		err := s.ListKeptFunc(ctx, sc, &k, "Doc", func() (query.List, error) {
			plans++
			return query.List{Entity: "Doc", Select: query.Selection{Fields: []string{"title"}}}, nil
		}, func(raw []byte) error {
			out = string(raw)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	first := list(sc)
	for _, step := range []struct {
		name  string
		sc    *records.Scope
		plans int
	}{
		{"the same scope is served the memo", sc, 1},
		{"another compiler compiles its own", other, 2},
		{"the first scope again recompiles (the memo now holds the other's)", sc, 3},
		{"and is served", sc, 3},
	} {
		if got := list(step.sc); got != first {
			t.Fatalf("%s: %s, want %s", step.name, got, first)
		}
		if plans != step.plans {
			t.Fatalf("%s: %d plans built, want %d", step.name, plans, step.plans)
		}
	}
}

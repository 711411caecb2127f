package query

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// ruledCompiler: Category readable only when its title is the user's id,
// Product's read list without price.
func ruledCompiler(t *testing.T) *Compiler {
	t.Helper()
	d := testDef()
	if err := schema.Validate(d); err != nil {
		t.Fatal(err)
	}
	return New(d, "s_test").WithRules([]RoleRules{{Name: "member", Entities: map[string]*EntityRules{
		"Category": {Read: Cond{Field: "title", Op: Eq, Value: VarUserID}},
		"Product":  {ReadFields: []string{"name", "stock"}},
	}}})
}

// The read rule reaches related reads (nested selections, _some) as soft
// delete does; its variable is a Param bound per principal, and a missing
// one binds NULL.
func TestRulesCompileVariablesAsParams(t *testing.T) {
	c := ruledCompiler(t)
	for name, st := range map[string]func() (Statement, error){
		"list of the ruled entity": func() (Statement, error) { return c.List(List{Entity: "Category"}) },
		"nested selection": func() (Statement, error) {
			return c.Get("Product", "00000000-0000-7000-8000-000000000000", Selection{Fields: []string{"name"}, Nested: []Nested{{Relationship: "IN_CATEGORY"}}})
		},
		"_some": func() (Statement, error) {
			return c.Count("Product", Related{Relationship: "IN_CATEGORY", Quantifier: Some}, "")
		},
	} {
		s, err := st()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !strings.Contains(s.SQL, `IS NOT NULL AND`) || !HasParams(s.Args) || strings.Contains(s.SQL, "alice") {
			t.Fatalf("%s: the rule is not a bound variable: %s %v", name, s.SQL, s.Args)
		}
		bound := BindParams(s.Args, func(v Var) (any, bool) { return "alice", v == VarUserID })
		missing := BindParams(s.Args, func(Var) (any, bool) { return nil, false })
		for i, a := range s.Args {
			if _, ok := a.(Param); ok && (bound[i] != "alice" || missing[i] != nil) {
				t.Fatalf("%s: bound %v / %v", name, bound[i], missing[i])
			}
		}
	}
	// Without a read rule, Product's statements are unchanged.
	plain, _ := New(testDef(), "s_test").List(List{Entity: "Product", Select: Selection{Fields: []string{"name"}}})
	ruled, _ := c.List(List{Entity: "Product", Select: Selection{Fields: []string{"name"}}})
	if plain.SQL != ruled.SQL {
		t.Fatalf("an unruled entity's list changed:\n%s\n%s", plain.SQL, ruled.SQL)
	}
}

// Fields outside the read list are left out of a full selection and are
// FORBIDDEN, naming the field, when named.
func TestRulesFieldLists(t *testing.T) {
	c := ruledCompiler(t)
	st, err := c.List(List{Entity: "Product"})
	if err != nil || strings.Contains(st.SQL, `"price"`) || !strings.Contains(st.SQL, `"stock"`) {
		t.Fatalf("full selection: %v %s", err, st.SQL)
	}
	for name, f := range map[string]func() error{
		"select": func() error {
			_, err := c.List(List{Entity: "Product", Select: Selection{Fields: []string{"price"}}})
			return err
		},
		"where": func() error { _, err := c.Count("Product", Cond{Field: "price", Op: Gt, Value: 1}, ""); return err },
		"orderBy": func() error {
			_, err := c.List(List{Entity: "Product", OrderBy: []Order{{Field: "price"}}})
			return err
		},
		"search": func() error { _, err := c.Count("Product", nil, "oak"); return err },
	} {
		err := f()
		if e := apperr.As(err); err == nil || e.Code != apperr.Forbidden || len(e.Details) == 0 {
			t.Fatalf("%s of a forbidden field: %v", name, err)
		}
	}
}

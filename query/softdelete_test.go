package query

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/schema"
)

// softCompiler is testCompiler with soft delete on Category.
func softCompiler(t *testing.T) *Compiler {
	t.Helper()
	d := testDef()
	d.Entities[1].SoftDelete = true
	if err := schema.Validate(d); err != nil {
		t.Fatal(err)
	}
	return New(d, "s_test")
}

// The row predicate reaches every read of a soft-delete entity's table,
// root or related, and withDeleted lifts it for the root only.
func TestSoftDeletePredicateOnEveryRead(t *testing.T) {
	c := softCompiler(t)
	live := `."deletedAt" IS NULL`
	count := func(st Statement, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(st.SQL, live)
	}
	nested := Selection{Nested: []Nested{{Relationship: "IN_CATEGORY"}}}
	related := Related{Relationship: "IN_CATEGORY", Quantifier: Some}
	for _, tc := range []struct {
		name      string
		st        func(*Compiler) (Statement, error)
		want, wWD int // occurrences without and with WithDeleted
	}{
		{"get", func(c *Compiler) (Statement, error) {
			return c.Get("Category", "0190f0e0-0000-7000-8000-000000000000", Selection{})
		}, 1, 0},
		{"list", func(c *Compiler) (Statement, error) { return c.List(List{Entity: "Category", IncludeCount: true}) }, 2, 0},
		{"list by id", func(c *Compiler) (Statement, error) {
			return c.List(List{Entity: "Category", Where: Cond{Field: "id", Op: Eq, Value: "0190f0e0-0000-7000-8000-000000000000"}})
		}, 1, 0},
		{"count", func(c *Compiler) (Statement, error) { return c.Count("Category", nil, "") }, 1, 0},
		{"nested from Product", func(c *Compiler) (Statement, error) { return c.List(List{Entity: "Product", Select: nested}) }, 1, 1},
		{"_some from Product", func(c *Compiler) (Statement, error) { return c.List(List{Entity: "Product", Where: related}) }, 1, 1},
		{"relationship list", func(c *Compiler) (Statement, error) {
			return c.RelationshipList("Product", "0190f0e0-0000-7000-8000-000000000000", Nested{Relationship: "IN_CATEGORY"})
		}, 1, 1},
		{"Product list", func(c *Compiler) (Statement, error) { return c.List(List{Entity: "Product"}) }, 0, 0},
	} {
		if got := count(tc.st(c)); got != tc.want {
			t.Errorf("%s: %d live predicates, want %d", tc.name, got, tc.want)
		}
		if got := count(tc.st(c.WithDeleted())); got != tc.wWD {
			t.Errorf("%s withDeleted: %d live predicates, want %d", tc.name, got, tc.wWD)
		}
	}
	// deletedAt is a field of the soft-delete entity only.
	if _, err := c.List(List{Entity: "Category", Where: Cond{Field: "deletedAt", Op: IsNull, Value: false}}); err != nil {
		t.Errorf("filter on Category.deletedAt: %v", err)
	}
	if _, err := c.List(List{Entity: "Product", Where: Cond{Field: "deletedAt", Op: IsNull, Value: false}}); err == nil {
		t.Error("Product has no deletedAt, yet a filter on it compiled")
	}
	// An entity without the option compiles exactly as before.
	plain, _ := testCompiler(t).List(List{Entity: "Category", IncludeCount: true})
	soft, _ := New(testDef(), "s_test").WithDeleted().List(List{Entity: "Category", IncludeCount: true})
	if plain.SQL != soft.SQL {
		t.Errorf("WithDeleted changed the SQL of an entity without soft delete:\n%s\n%s", plain.SQL, soft.SQL)
	}
}

// Soft delete reserves deletedAt on its entity only, and the plan of
// switching it (and history) on or off says what happens to the rows.
func TestSoftDeleteAndHistoryPlans(t *testing.T) {
	d := testDef()
	d.Entities[1].SoftDelete = true
	d.Entities[1].Fields = append(d.Entities[1].Fields, schema.Field{Name: "deletedAt", Type: schema.Timestamp})
	if err := schema.Validate(d); err == nil || !strings.Contains(err.Error(), "deletedAt") {
		t.Fatalf("a deletedAt field on a soft-delete entity: %v", err)
	}
	old, on := testDef(), testDef()
	on.Entities[1].SoftDelete, on.Entities[1].History = true, true
	plan, problems := schema.Diff("s_test", old, on)
	if len(problems) > 0 || len(plan.Destructive()) > 0 {
		t.Fatalf("switching on: problems %v, destructive %v", problems, plan.Destructive())
	}
	all := ""
	for _, s := range plan.Steps {
		all += s.Description + "\n" + s.SQL + "\n"
	}
	for _, want := range []string{`ADD COLUMN "deletedAt" timestamptz`, "existing records stay live", `CREATE TABLE IF NOT EXISTS "s_test"."_history"`, "CREATE TRIGGER", "first version at their next write"} {
		if !strings.Contains(all, want) {
			t.Errorf("switching on: the plan lacks %q:\n%s", want, all)
		}
	}
	back, _ := schema.Diff("s_test", on, old)
	if d := back.Destructive(); len(d) != 2 || !strings.Contains(d[0].SQL+d[1].SQL, `WHERE "deletedAt" IS NOT NULL`) || !strings.Contains(d[0].SQL+d[1].SQL, `"entity" = 'Category'`) {
		t.Errorf("switching off must destroy the deleted records and the versions: %+v", d)
	}
}

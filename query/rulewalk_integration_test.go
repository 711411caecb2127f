package query

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// TestRuleWalkKeepsTheGenericPlan: a list under an owner rule with a
// filter beside it, prepared once and executed as DDS executes it (a
// statement per connection), runs Postgres' generic plan from the sixth
// execution on, a walk of the (name, id) index's range reading the page;
// the same text with the filter's value as a plain parameter (as DDS bound
// it before) is planned again on every execution, its generic plan being
// estimated dearer than the plan made for price >= 0.
func TestRuleWalkKeepsTheGenericPlan(t *testing.T) {
	t.Parallel()
	db, plain := scratch(t)
	manyProducts(t, db, plain, 20000) // name: 97 owners, price 0 … 99
	c := plain.WithRules([]RoleRules{{Name: "owner", Entities: map[string]*EntityRules{
		"Product": {Read: Cond{Field: "name", Op: Eq, Value: VarUserID}},
	}}})
	const limit = 20
	for _, tc := range []struct {
		name string
		l    List
	}{
		{"filtered beside the rule", List{Where: Cond{Field: "price", Op: Gte, Value: json.Number("0")}, Limit: limit}},
		{"below a bound beside the rule", List{Where: Cond{Field: "price", Op: Lt, Value: json.Number("1000")}, Limit: limit}},
	} {
		tc.l.Entity = "Product"
		st, err := c.List(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(st.SQL, "(SELECT $1::") {
			t.Fatalf("%s: the filter's value is not bound opaque:\n%s", tc.name, st.SQL)
		}
		generic, custom, plan := executeTen(t, db, st.SQL, st.Args, "p5")
		if generic != 5 || custom != 5 {
			t.Errorf("%s: %d generic and %d custom plans of 10 executions, want 5 and 5 (the generic plan kept after five)\n%s", tc.name, generic, custom, plan)
		}
		if !strings.Contains(plan, "_btid_") || strings.Contains(plan, "Sort") {
			t.Errorf("%s: the generic plan is not a walk of the (name, id) index:\n%s", tc.name, plan)
		}
		if _, read := explainAnalyze(t, db, st, "p5", true); read > limit {
			t.Errorf("%s: the generic plan read %d rows for a page of %d", tc.name, read, limit)
		}
		t.Logf("%s: %d generic, %d custom plans; generic plan:\n%s", tc.name, generic, custom, plan)
	}
	// Before: the filter's value a plain parameter.
	st, err := c.List(List{Entity: "Product", Where: Cond{Field: "price", Op: Gte, Value: json.Number("0")}, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	before := strings.Replace(st.SQL, "(SELECT $1::double precision)::double precision", "$1::double precision", 1)
	if generic, custom, plan := executeTen(t, db, before, st.Args, "p5"); custom != 10 {
		t.Errorf("with the value a plain parameter: %d generic and %d custom plans of 10; the opaque value buys nothing\n%s", generic, custom, plan)
	}
	// An unruled list and a ruled list in another order bind plain values.
	for name, l := range map[string]List{
		"no rule":          {Entity: "Product", Where: Cond{Field: "price", Op: Gte, Value: json.Number("0")}},
		"ordered by price": {Entity: "Product", Where: Cond{Field: "price", Op: Gte, Value: json.Number("0")}, OrderBy: []Order{{Field: "price"}}},
	} {
		cc := c
		if name == "no rule" {
			cc = plain
		}
		st, err := cc.List(l)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(st.SQL, "(SELECT $") {
			t.Errorf("%s: values bound opaque:\n%s", name, st.SQL)
		}
	}
}

// executeTen prepares sql on one connection, executes it ten times with
// args (rule variables bound to user) and returns how many generic and
// custom plans Postgres made, and the plan it uses next.
func executeTen(t *testing.T, db *sqlx.DB, sql string, args []any, user string) (generic, custom int, plan string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	name := fmt.Sprintf("walk_%d", len(sql))
	if _, err := conn.ExecContext(ctx, "PREPARE "+name+" AS "+sql); err != nil {
		t.Fatalf("prepare %s: %v", sql, err)
	}
	defer conn.ExecContext(ctx, "DEALLOCATE "+name) //nolint:errcheck // the connection goes
	exec := executeWith(name, BindParams(args, func(v Var) (any, bool) { return user, v == VarUserID }))
	for range 10 {
		if _, err := conn.ExecContext(ctx, exec); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.QueryRowxContext(ctx, `SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1`, name).Scan(&generic, &custom); err != nil {
		t.Fatal(err)
	}
	var lines []string
	if err := conn.SelectContext(ctx, &lines, "EXPLAIN (COSTS OFF) "+exec); err != nil {
		t.Fatal(err)
	}
	return generic, custom, strings.Join(lines, "\n")
}

// executeWith is "EXECUTE name(args)" with args written as literals.
func executeWith(name string, args []any) string {
	if len(args) == 0 {
		return "EXECUTE " + name
	}
	lits := make([]string, len(args))
	for i, v := range args {
		switch v := v.(type) {
		case []any:
			s := make([]string, len(v))
			for j, x := range v {
				s[j] = fmt.Sprint(x)
			}
			lits[i] = pq.QuoteLiteral("{" + strings.Join(s, ",") + "}")
		default:
			lits[i] = pq.QuoteLiteral(fmt.Sprint(v))
		}
	}
	return "EXECUTE " + name + "(" + strings.Join(lits, ", ") + ")"
}

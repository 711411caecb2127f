package query

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
)

// TestRuledNestedPageWalksTheEdges: a category's page of products under
// an owner rule on Product walks the category's edges in their index
// order and looks each product up with the rule, stopping at the page's
// last row. A category whose products are all the user's reads ten edges
// for a page of ten, as the unruled page does (before, Postgres expected
// the rule to admit a tenth of them, and joined every edge of the category
// to all the user's products); one with half of them another owner's
// reads until ten pass, and shows only the user's. The same page asked for
// without a rule, with the owner's condition as the nested selection's own
// where, is the same walk (it was left to the join, and cost Postgres
// twice the ruled page in the rules benchmark).
func TestRuledNestedPageWalksTheEdges(t *testing.T) {
	t.Parallel()
	db, plain := scratch(t)
	manyProducts(t, db, plain, 5000) // name: 97 owners, p0 … p96
	own, mixed := "00000000-0000-7000-8000-0000000000d1", "00000000-0000-7000-8000-0000000000d2"
	db.MustExec(fmt.Sprintf(`INSERT INTO %s (id, title) VALUES ('%s', 'own'), ('%s', 'mixed')`, plain.Table("Category"), own, mixed))
	// own: 30 products of p5; mixed: 15 of p5 and 15 of others, interleaved.
	db.MustExec(fmt.Sprintf(`INSERT INTO %[1]s (id, source_id, target_id, created_at)
		SELECT gen_random_uuid(), p.id, '%[3]s', timestamptz '2025-01-01' + n * interval '1 second'
		FROM (SELECT id, row_number() OVER (ORDER BY id) n FROM %[2]s WHERE name = 'p5' LIMIT 30) p`, plain.Table("IN_CATEGORY"), plain.Table("Product"), own))
	db.MustExec(fmt.Sprintf(`INSERT INTO %[1]s (id, source_id, target_id, created_at)
		SELECT gen_random_uuid(), p.id, '%[3]s', timestamptz '2025-01-01' + (2 * n + CASE WHEN p.name = 'p5' THEN 0 ELSE 1 END) * interval '1 second'
		FROM ((SELECT id, name, row_number() OVER (ORDER BY id) n FROM %[2]s WHERE name = 'p5' LIMIT 15)
		      UNION ALL (SELECT id, name, row_number() OVER (ORDER BY id) n FROM %[2]s WHERE name = 'p6' LIMIT 15)) p`, plain.Table("IN_CATEGORY"), plain.Table("Product"), mixed))
	db.MustExec("ANALYZE " + plain.Table("IN_CATEGORY"))
	c := plain.WithRules([]RoleRules{{Name: "owner", Entities: map[string]*EntityRules{
		"Product": {Read: Cond{Field: "name", Op: Eq, Value: VarUserID}},
	}}})
	const limit = 10
	for _, as := range []struct {
		name  string
		c     *Compiler
		where Filter // the nested selection's own
	}{{"the rule", c, nil}, {"the caller's where", plain, Cond{Field: "name", Op: Eq, Value: "p5"}}} {
		for _, tc := range []struct {
			name, title string
			edges       int // edges the page reads
		}{{"all the user's", "own", limit}, {"half the user's", "mixed", 2*limit - 1}} {
			checkNestedWalk(t, db, as.c, as.name+", "+tc.name, tc.title, as.where, limit, tc.edges)
		}
	}
}

// checkNestedWalk runs the page of limit products of the category titled
// title (where: the nested selection's own) by c as user p5, checks it
// shows limit of p5's products, and that its plan, for the values and
// generic, walks edges of the category's edges and joins none by hash.
func checkNestedWalk(t *testing.T, db *sqlx.DB, c *Compiler, name, title string, where Filter, limit, edges int) {
	t.Helper()
	edgeScan := regexp.MustCompile(`Index Scan using \S+ on "IN_CATEGORY" \S+ \(actual rows=(\d+) loops=1\)`)
	st, err := c.List(List{Entity: "Category", Where: Cond{Field: "title", Op: Eq, Value: title},
		Select: Selection{Fields: []string{"title"}, Nested: []Nested{{Key: "products", Relationship: "IN_CATEGORY", Direction: DirIn, Limit: limit,
			Where: where, Select: Selection{Fields: []string{"name"}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := db.Get(&raw, st.SQL, BindParams(st.Args, func(v Var) (any, bool) { return "p5", v == VarUserID })...); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Items []struct{ Products []struct{ Name string } }
	}
	if err := json.Unmarshal(raw, &got); err != nil || len(got.Items) != 1 || len(got.Items[0].Products) != limit {
		t.Fatalf("%s: %s (%v)", name, raw, err)
	}
	for _, p := range got.Items[0].Products {
		if p.Name != "p5" {
			t.Errorf("%s: p5 sees a product of %s", name, p.Name)
		}
	}
	for _, generic := range []bool{false, true} {
		plan, _ := explainAnalyze(t, db, st, "p5", generic)
		m := edgeScan.FindStringSubmatch(plan)
		if m == nil || m[1] != fmt.Sprint(edges) || strings.Contains(plan, "Hash") {
			t.Errorf("%s (generic plan %v): not a walk of the category's edges reading %d of them:\n%s", name, generic, edges, plan)
		}
		t.Logf("%s, generic plan %v:\n%s", name, generic, plan)
	}
}

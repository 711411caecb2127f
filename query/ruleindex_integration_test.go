package query

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/schema"
)

// explainAnalyze returns the plan Postgres runs for st (EXPLAIN ANALYZE,
// BUFFERS; no timings) with its rule variables bound to user, and the
// rows it read: every scan's rows plus those its filter removed.
func explainAnalyze(t *testing.T, db *sqlx.DB, st Statement, user string, generic bool) (string, int) {
	t.Helper()
	args := BindParams(st.Args, func(v Var) (any, bool) { return user, v == VarUserID })
	tx, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read only
	var lines []string
	if generic { // as a statement prepared once and run many times is planned
		// The generic plan of a prepared statement: EXPLAIN of the text
		// with values plans for the values, whatever plan_cache_mode says.
		// A name of its own: a prepared statement is the session's, and
		// one a failed explain leaves behind must not collide with the next.
		name := fmt.Sprintf("explained_%d_%d", len(st.SQL), time.Now().UnixNano())
		tx.MustExec("PREPARE " + name + " AS " + st.SQL)
		tx.MustExec("SET LOCAL plan_cache_mode = force_generic_plan")
		if err := tx.Select(&lines, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "+executeWith(name, args)); err != nil {
			t.Fatalf("explain %s: %v", st.SQL, err)
		}
		tx.MustExec("DEALLOCATE " + name)
	} else if err := tx.Select(&lines, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "+st.SQL, args...); err != nil {
		t.Fatalf("explain %s: %v", st.SQL, err)
	}
	plan := strings.Join(lines, "\n")
	read := 0
	scan := regexp.MustCompile(`Scan .*\(actual rows=(\d+) loops=(\d+)\)`)
	removed := regexp.MustCompile(`Rows Removed by Filter: (\d+)`)
	for _, l := range lines {
		if m := scan.FindStringSubmatch(l); m != nil && !strings.Contains(l, "Bitmap Index Scan") {
			n, _ := strconv.Atoi(m[1])
			loops, _ := strconv.Atoi(m[2])
			read += n * loops
		}
		if m := removed.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			read += n
		}
	}
	return plan, read
}

// TestOwnerRuleReadsOnlyThePage: a list under an owner rule (a read rule
// keying an indexed field on $user.id) reads the page and no more: the
// indexed field's index, on (field, id), yields the owner's rows in list
// order, so a page is the first rows of one index range (forwards,
// backwards, after a cursor, with a filter beside the rule), in the plan
// Postgres makes for the values and in the generic plan of a statement
// prepared once. Before, with the field indexed alone, the same page read
// the owner's every row and sorted them, or walked the table in id order
// and filtered out other owners' rows: the test builds that index too and
// shows both plans (go test -v).
func TestOwnerRuleReadsOnlyThePage(t *testing.T) {
	t.Parallel()
	db, plain := scratch(t)
	manyProducts(t, db, plain, 20000) // name: 97 owners ('p0' … 'p96'), their rows interleaved
	c := plain.WithRules([]RoleRules{{Name: "owner", Entities: map[string]*EntityRules{
		"Product": {Read: Cond{Field: "name", Op: Eq, Value: VarUserID}},
	}}})
	pg := strings.Trim(strings.SplitN(c.Table("Product"), ".", 2)[0], `"`)
	var paged string
	if err := db.Get(&paged, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'Product' AND indexdef LIKE '%(name, id)'`, pg); err != nil {
		t.Fatalf("the (name, id) index of the indexed field: %v", err)
	}
	const limit = 20
	var firstPage page // the first six pages
	st, err := c.List(List{Entity: "Product", Limit: 6 * limit})
	if err != nil {
		t.Fatal(err)
	}
	tx := db.MustBegin()
	var raw []byte
	if err := tx.Get(&raw, st.SQL, BindParams(st.Args, func(v Var) (any, bool) { return "p5", v == VarUserID })...); err != nil {
		t.Fatal(err)
	}
	_ = tx.Rollback()
	if err := json.Unmarshal(raw, &firstPage); err != nil || len(firstPage.Items) != 6*limit {
		t.Fatalf("first pages: %d items, %v", len(firstPage.Items), err)
	}
	// Cursors with pages on both sides: after the first page, before the sixth.
	cursor := &Seek{Values: []any{firstPage.Items[limit-1]["id"]}}
	back := &Seek{Values: []any{firstPage.Items[5*limit]["id"]}, Backward: true}
	cases := []struct {
		name     string
		l        List
		backward bool
	}{
		{"default order (id)", List{Limit: limit}, false},
		{"id descending", List{OrderBy: []Order{{Field: "id", Desc: true}}, Limit: limit}, true},
		{"after a cursor", List{Limit: limit, Seek: cursor}, false},
		{"before a cursor", List{Limit: limit, Seek: back}, true},
		{"filtered beside the rule", List{Where: Cond{Field: "price", Op: Gte, Value: json.Number("0")}, Limit: limit}, false},
	}
	for _, tc := range cases {
		tc.l.Entity = "Product"
		st, err := c.List(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		for _, generic := range []bool{false, true} {
			plan, read := explainAnalyze(t, db, st, "p5", generic)
			scan := "Index Scan using " + paged
			if tc.backward {
				scan = "Index Scan Backward using " + paged
			}
			if !strings.Contains(plan, scan) || strings.Contains(plan, "Sort") {
				t.Errorf("%s (generic plan %v): not a walk of %s without a sort:\n%s", tc.name, generic, paged, plan)
			}
			if read > limit {
				t.Errorf("%s (generic plan %v): %d rows read for a page of %d:\n%s", tc.name, generic, read, limit, plan)
			}
			t.Logf("%s, (name, id) index, generic plan %v: %d rows read\n%s", tc.name, generic, read, plan)
		}
	}
	// Before: the field indexed alone, as earlier versions made it.
	db.MustExec(`DROP INDEX ` + schema.Ident(pg) + `.` + schema.Ident(paged))
	db.MustExec(`CREATE INDEX ON ` + c.Table("Product") + ` (name)`)
	db.MustExec(`ANALYZE ` + c.Table("Product"))
	for _, tc := range cases {
		tc.l.Entity = "Product"
		st, err := c.List(tc.l)
		if err != nil {
			t.Fatal(err)
		}
		plan, read := explainAnalyze(t, db, st, "p5", false)
		if read <= limit && !strings.Contains(plan, "Sort") {
			t.Errorf("%s: the field's index alone serves the page as well; the (field, id) index buys nothing:\n%s", tc.name, plan)
		}
		t.Logf("%s, the field indexed alone: %d rows read\n%s", tc.name, read, plan)
	}
}

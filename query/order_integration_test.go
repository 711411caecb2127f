package query

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/schema"
)

// manyProducts adds n products to the scratch schema of c, their creation
// times shared by batches of 1,001 rows (as the rows of one batch insert
// share a transaction's timestamp), and analyzes the table so the planner
// sees a table worth an index.
func manyProducts(t *testing.T, db *sqlx.DB, c *Compiler, n int) {
	t.Helper()
	tbl := c.Table("Product")
	if _, err := db.Exec(fmt.Sprintf(`INSERT INTO %s (id, name, price, "createdAt", "updatedAt")
		SELECT gen_random_uuid(), 'p' || (i %% 97), i %% 100, timestamptz '2025-01-01' + (i / 1001) * interval '1 minute', now()
		FROM generate_series(1, %d) i`, tbl, n)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("ANALYZE " + tbl); err != nil {
		t.Fatal(err)
	}
}

// explain returns the text plan Postgres chooses for st.
func explain(t *testing.T, db *sqlx.DB, st Statement) string {
	t.Helper()
	var lines []string
	if err := db.Select(&lines, "EXPLAIN "+st.SQL, st.Args...); err != nil {
		t.Fatalf("explain %s: %v", st.SQL, err)
	}
	return strings.Join(lines, "\n")
}

// TestOrderUsesIndexOnPostgres: a page in one direction over an indexed
// order is an index scan, read backwards for a descending order, with no
// sort: newest first, oldest first, filtered, and cursor pages both ways.
func TestOrderUsesIndexOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	manyProducts(t, db, c, 20000)
	var createdIdx string
	pg := strings.Trim(strings.SplitN(c.Table("Product"), ".", 2)[0], `"`)
	if err := db.Get(&createdIdx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 AND tablename = 'Product' AND indexdef LIKE '%("createdAt", id)'`, pg); err != nil {
		t.Fatalf("the (createdAt, id) index every entity gets: %v", err)
	}
	newest := []Order{{Field: "createdAt", Desc: true}}
	cursor := &Seek{Values: []any{"2025-01-01T00:10:00Z", "80000000-0000-7000-8000-000000000000"}}
	sel := Selection{Output: []Member{{Key: "id", Field: "id"}, {Key: "name", Field: "name"}, {Key: "createdAt", Field: "createdAt"}}}
	for _, tc := range []struct {
		name     string
		l        List
		index    string // the index the page must be read from
		backward bool
	}{
		{"newest first", List{OrderBy: newest, Limit: 20, Select: sel}, createdIdx, true},
		{"oldest first", List{OrderBy: []Order{{Field: "createdAt"}}, Limit: 20}, createdIdx, false},
		{"default order (id)", List{Limit: 20}, "Product_pkey", false},
		{"id descending", List{OrderBy: []Order{{Field: "id", Desc: true}}, Limit: 20}, "Product_pkey", true},
		{"newest first, filtered", List{Where: Cond{Field: "price", Op: Gte, Value: json.Number("10")}, OrderBy: newest, Limit: 20, Select: sel}, createdIdx, true},
		{"newest first, after a cursor", List{OrderBy: newest, Limit: 20, Seek: cursor, Select: sel}, createdIdx, true},
		{"newest first, before a cursor", List{OrderBy: newest, Limit: 20, Seek: &Seek{Values: cursor.Values, Backward: true}, Select: sel}, createdIdx, false},
		{"newest first, filtered, after a cursor", List{Where: Cond{Field: "price", Op: Gte, Value: json.Number("10")}, OrderBy: newest, Limit: 20, Seek: cursor}, createdIdx, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Entity = "Product"
			st, err := c.List(tc.l)
			if err != nil {
				t.Fatal(err)
			}
			plan := explain(t, db, st)
			scan := "Index Scan using " + schema.Ident(tc.index)
			if tc.backward {
				scan = "Index Scan Backward using " + schema.Ident(tc.index)
			}
			if !strings.Contains(plan, scan) && !strings.Contains(plan, strings.ReplaceAll(scan, `"`, "")) {
				t.Errorf("plan does not read %s:\n%s", scan, plan)
			}
			if strings.Contains(plan, "Sort") {
				t.Errorf("plan sorts:\n%s", plan)
			}
			if tc.l.Seek != nil && !strings.Contains(plan, "Index Cond: (ROW(") {
				t.Errorf("the cursor is not an index condition:\n%s", plan)
			}
		})
	}
}

// TestKeysetWalksOnPostgres: cursor pages over orders with many ties walk
// every row exactly once in the order Postgres sorts them, forwards and
// backwards, with one direction (the row comparison) and mixed directions
// (the expanded form).
func TestKeysetWalksOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	manyProducts(t, db, c, 5000)
	for _, tc := range []struct {
		name  string
		order []Order
		sql   string // the whole order, as Postgres sorts it
	}{
		{"newest first", []Order{{Field: "createdAt", Desc: true}}, `"createdAt" DESC, id DESC`},
		{"oldest first", []Order{{Field: "createdAt"}}, `"createdAt", id`},
		{"newest first, then name", []Order{{Field: "createdAt", Desc: true}, {Field: "name"}}, `"createdAt" DESC, name, id`},
		{"price descending (nullable)", []Order{{Field: "price", Desc: true}}, `price DESC, id DESC`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			if err := db.Select(&want, fmt.Sprintf(`SELECT id::text FROM %s ORDER BY %s`, c.Table("Product"), tc.sql)); err != nil {
				t.Fatal(err)
			}
			keys, err := c.Keys("Product", tc.order)
			if err != nil {
				t.Fatal(err)
			}
			if last := keys[len(keys)-1]; last.Field != "id" || last.Desc != tc.order[len(tc.order)-1].Desc {
				t.Fatalf("tie breaker %+v does not follow the last key", last)
			}
			fields := []string{"name", "price", "createdAt"}
			cursorOf := func(row map[string]any, backward bool) *Seek {
				vals := make([]any, len(keys))
				for i, k := range keys {
					switch v := row[k.Field].(type) {
					case nil:
					case string:
						vals[i] = v
					default:
						vals[i] = json.Number(jsonNum(v))
					}
				}
				return &Seek{Values: vals, Backward: backward}
			}
			// pages walks from seek to the end (forward) or the start
			// (backward), returning the ids in list order.
			pages := func(seek *Seek) []string {
				var got []string
				for range 100 {
					st, err := c.List(List{Entity: "Product", OrderBy: tc.order, Limit: 400, Seek: seek, Select: Selection{Fields: fields}})
					if err != nil {
						t.Fatal(err)
					}
					var p page
					run(t, db, st, &p)
					if len(p.Items) == 0 {
						return got
					}
					if seek != nil && seek.Backward {
						got = append(names(p.Items, "id"), got...)
						seek = cursorOf(p.Items[0], true)
					} else {
						got = append(got, names(p.Items, "id")...)
						seek = cursorOf(p.Items[len(p.Items)-1], false)
					}
				}
				t.Fatal("no end after 100 pages")
				return nil
			}
			if got := pages(nil); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("forward pages: %d rows, want %d in Postgres' order", len(got), len(want))
			}
			// Backward from the last row's cursor: every other row, in order.
			st, err := c.List(List{Entity: "Product", Where: Cond{Field: "id", Op: Eq, Value: want[len(want)-1]}, Select: Selection{Fields: fields}})
			if err != nil {
				t.Fatal(err)
			}
			var p page
			run(t, db, st, &p)
			got := pages(cursorOf(p.Items[0], true))
			if strings.Join(got, ",") != strings.Join(want[:len(want)-1], ",") {
				t.Fatalf("backward pages: %d rows, want %d in Postgres' order", len(got), len(want)-1)
			}
		})
	}
}

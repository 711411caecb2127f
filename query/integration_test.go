package query

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"

	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/schema"
)

// scratch creates a Postgres schema holding testDef's tables (DDL from
// schema.Diff), filled with fixtures, and returns a compiler over it.
func scratch(t *testing.T) (*sqlx.DB, *Compiler) {
	t.Helper()
	teststack.Need(t, "DATABASE_URL")
	url := os.Getenv("DATABASE_URL")
	db, err := sqlx.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := make([]byte, 6)
	rand.Read(b)
	pg := "qtest_" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := db.ExecContext(ctx, "CREATE EXTENSION IF NOT EXISTS vector"); err != nil && !strings.Contains(err.Error(), "duplicate key") {
		t.Fatal(err)
	}
	def := testDef()
	plan, problems := schema.Diff(pg, nil, def)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for _, s := range plan.Steps {
		if _, err := db.ExecContext(ctx, s.SQL); err != nil {
			t.Fatalf("%s: %v", s.SQL, err)
		}
	}
	t.Cleanup(func() {
		if _, err := db.Exec("DROP SCHEMA " + schema.Ident(pg) + " CASCADE"); err != nil {
			t.Errorf("cleanup: drop schema: %v", err)
		}
	})
	fixtures := []string{
		`INSERT INTO "Product" (id, name, body, price, stock, active, tags, sizes, "releasedAt", day, attributes, status, code, embedding) VALUES
		 ('00000000-0000-7000-8000-000000000001', 'Oak desk', 'solid wood desk', 100, 5, true, '{sale,new}', '{40,42}', '2024-01-10T10:00:00Z', '2024-01-10', '{"color":"red","size":1}', 'live', 'D1', '[1,0,0]'),
		 ('00000000-0000-7000-8000-000000000002', '50% off_chair', 'a chair', 20.5, 0, false, '{sale}', '{38}', '2024-03-01T00:00:00+02:00', '2024-02-29', '{"color":"blue"}', 'draft', NULL, '[0,1,0]'),
		 ('00000000-0000-7000-8000-000000000003', 'Lamp\x', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
		 ('00000000-0000-7000-8000-000000000004', 'Table', 'big oak table', 300, 2, true, '{new}', '{}', '2023-12-31T23:00:00-05:00', '2023-12-31', '{"color":"red"}', 'live', 'T1', '[0.9,0.1,0]')`,
		`INSERT INTO "Category" (id, title, rank) VALUES
		 ('00000000-0000-7000-8000-0000000000c1', 'Office', 1),
		 ('00000000-0000-7000-8000-0000000000c2', 'Home', 2),
		 ('00000000-0000-7000-8000-0000000000c3', 'Empty', 3)`,
		`INSERT INTO "IN_CATEGORY" (id, source_id, target_id, properties, created_at) VALUES
		 ('00000000-0000-7000-8000-0000000000e1', '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-0000000000c1', '{"position": 2, "note": "a_b", "since": "2024-01-01T00:00:00Z", "labels": ["x","y"]}', '2024-01-01T00:00:01Z'),
		 ('00000000-0000-7000-8000-0000000000e2', '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-0000000000c2', '{"position": 1}', '2024-01-01T00:00:02Z'),
		 ('00000000-0000-7000-8000-0000000000e3', '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-0000000000c1', '{"position": 7}', '2024-01-01T00:00:03Z'),
		 ('00000000-0000-7000-8000-0000000000e4', '00000000-0000-7000-8000-000000000004', '00000000-0000-7000-8000-0000000000c2', '{}', '2024-01-01T00:00:04Z')`,
		`INSERT INTO "SIMILAR" (id, source_id, target_id, created_at) VALUES
		 ('00000000-0000-7000-8000-0000000000f1', '00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-000000000004', '2024-01-01T00:00:01Z'),
		 ('00000000-0000-7000-8000-0000000000f2', '00000000-0000-7000-8000-000000000002', '00000000-0000-7000-8000-000000000001', '2024-01-01T00:00:02Z')`,
	}
	tx := db.MustBegin()
	tx.MustExec("SET LOCAL search_path TO " + schema.Ident(pg))
	for _, f := range fixtures {
		if _, err := tx.Exec(f); err != nil {
			t.Fatalf("fixture: %v", err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return db, New(def, pg)
}

// run executes a statement (with its Setup, in a transaction) and decodes
// its JSON result.
func run(t *testing.T, db *sqlx.DB, st Statement, dst any) {
	t.Helper()
	tx, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, s := range st.Setup {
		tx.MustExec(s)
	}
	var out []byte
	if err := tx.QueryRow(st.SQL, st.Args...).Scan(&out); err != nil {
		t.Fatalf("run %s: %v", st.SQL, err)
	}
	if err := json.Unmarshal(out, dst); err != nil {
		t.Fatalf("decode %s: %v", out, err)
	}
}

type page struct {
	Items []map[string]any `json:"items"`
	Count *int             `json:"count"`
}

func names(items []map[string]any, key string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it[key].(string))
	}
	return out
}

func TestOperatorsOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	cases := []struct {
		where string
		want  []string // names, any order
	}{
		{`{"name": "Oak desk"}`, []string{"Oak desk"}},
		{`{"name": {"$neq": "Oak desk"}}`, []string{"50% off_chair", `Lamp\x`, "Table"}},
		{`{"price": {"$neq": 100}}`, []string{"50% off_chair", `Lamp\x`, "Table"}}, // null price matches $neq
		{`{"price": null}`, []string{`Lamp\x`}},
		{`{"price": {"$gt": 20.5}}`, []string{"Oak desk", "Table"}},
		{`{"price": {"$gte": 20.5, "$lt": 300}}`, []string{"Oak desk", "50% off_chair"}},
		{`{"stock": {"$lte": 2}}`, []string{"50% off_chair", "Table"}},
		{`{"stock": {"$in": [0, 5]}}`, []string{"Oak desk", "50% off_chair"}},
		{`{"stock": {"$notIn": [0, 5]}}`, []string{`Lamp\x`, "Table"}},
		{`{"active": false}`, []string{"50% off_chair"}},
		{`{"active": {"$neq": true}}`, []string{"50% off_chair", `Lamp\x`}},
		{`{"status": {"$in": ["draft"]}}`, []string{"50% off_chair"}},
		// timestamps compare as time: 2023-12-31T23:00-05:00 is 2024-01-01T04:00Z
		{`{"releasedAt": {"$gt": "2024-01-01T03:00:00Z", "$lt": "2024-01-01T05:00:00Z"}}`, []string{"Table"}},
		{`{"releasedAt": {"$gte": "2024-02-29T22:00:00Z"}}`, []string{"50% off_chair"}},
		{`{"releasedAt": {"$eq": "2024-03-01T00:00:00+02:00"}}`, []string{"50% off_chair"}},
		{`{"releasedAt": {"$isNull": true}}`, []string{`Lamp\x`}},
		{`{"createdAt": {"$gt": "2000-01-01"}}`, []string{"Oak desk", "50% off_chair", `Lamp\x`, "Table"}},
		{`{"day": {"$lt": "2024-01-01"}}`, []string{"Table"}},
		{`{"id": {"$in": ["00000000-0000-7000-8000-000000000002", "00000000-0000-7000-8000-000000000004"]}}`, []string{"50% off_chair", "Table"}},
		// % and _ and \ are literals
		{`{"name": {"$contains": "%"}}`, []string{"50% off_chair"}},
		{`{"name": {"$contains": "_"}}`, []string{"50% off_chair"}},
		{`{"name": {"$contains": "\\"}}`, []string{`Lamp\x`}},
		{`{"name": {"$startsWith": "50%"}}`, []string{"50% off_chair"}},
		{`{"name": {"$startsWith": "5_"}}`, []string{}},
		{`{"name": {"$endsWith": "_chair"}}`, []string{"50% off_chair"}},
		{`{"name": {"$endsWith": "%"}}`, []string{}},
		{`{"body": {"$contains": "oak"}}`, []string{"Table"}},
		{`{"name": {"$contains": "oak"}}`, []string{}}, // case-sensitive
		{`{"tags": {"$contains": "sale"}}`, []string{"Oak desk", "50% off_chair"}},
		{`{"tags": {"$contains": ["sale", "new"]}}`, []string{"Oak desk"}},
		{`{"tags": {"$in": ["new", "zzz"]}}`, []string{"Oak desk", "Table"}},
		{`{"tags": {"$notIn": ["new"]}}`, []string{"50% off_chair", `Lamp\x`}},
		{`{"tags": {"$startsWith": "sa"}}`, []string{"Oak desk", "50% off_chair"}},
		{`{"sizes": {"$contains": 42}}`, []string{"Oak desk"}},
		{`{"tags": {"$eq": ["sale", "new"]}}`, []string{"Oak desk"}},
		{`{"attributes": {"$contains": {"color": "red"}}}`, []string{"Oak desk", "Table"}},
		{`{"attributes": {"$eq": {"color": "blue"}}}`, []string{"50% off_chair"}},
		{`{"embedding": {"$isNull": false}}`, []string{"Oak desk", "50% off_chair", "Table"}},
		{`{"$or": [{"name": "Table"}, {"$and": [{"stock": {"$gt": 0}}, {"active": true}]}]}`, []string{"Oak desk", "Table"}},
		{`{"$not": {"active": true}}`, []string{"50% off_chair", `Lamp\x`}},
		{`{"$or": []}`, []string{}},
		{`{"name": "x' OR '1'='1"}`, []string{}},
		{`{"code": "toolongvalue"}`, []string{}}, // longer than maxLength: no match, not an error
	}
	for _, tc := range cases {
		st, err := c.List(List{Entity: "Product", Where: where(t, tc.where), Select: Selection{Fields: []string{"name"}}})
		if err != nil {
			t.Errorf("%s: compile: %v", tc.where, err)
			continue
		}
		var p page
		run(t, db, st, &p)
		got := names(p.Items, "name")
		sort.Strings(got)
		sort.Strings(tc.want)
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("%s: got %q, want %q", tc.where, got, tc.want)
		}
	}
}

func TestListFeaturesOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)

	t.Run("search, count, order", func(t *testing.T) {
		st, err := c.List(List{Entity: "Product", Search: "oak", IncludeCount: true, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		var p page
		run(t, db, st, &p)
		if p.Count == nil || *p.Count != 2 || len(p.Items) != 1 {
			t.Fatalf("search oak: got %+v", p)
		}
		st, _ = c.List(List{Entity: "Product", OrderBy: []Order{{Field: "price", Desc: true}}, Select: Selection{Fields: []string{"name"}}})
		run(t, db, st, &p)
		// Postgres default: nulls first when descending
		if got := strings.Join(names(p.Items, "name"), "|"); got != `Lamp\x|Table|Oak desk|50% off_chair` {
			t.Fatalf("order by price desc: %s", got)
		}
	})

	t.Run("traverse with where, edgeWhere, order, limit", func(t *testing.T) {
		st, err := c.List(List{Entity: "Product", Where: where(t, `{"name": "Oak desk"}`), Select: Selection{Fields: []string{"name"}, Nested: []Nested{
			{Key: "cats", Relationship: "IN_CATEGORY", Select: Selection{Fields: []string{"title"}}, OrderBy: []Order{{Field: "title"}}},
			{Key: "office", Relationship: "IN_CATEGORY", Where: where(t, `{"title": "Office"}`), EdgeWhere: where(t, `{"position": {"$gt": 3}}`), Edges: true},
			{Key: "sim", Relationship: "SIMILAR", Direction: DirBoth, Edges: true, Select: Selection{Fields: []string{"name"}}},
		}}})
		if err != nil {
			t.Fatal(err)
		}
		var p page
		run(t, db, st, &p)
		if len(p.Items) != 1 {
			t.Fatalf("items: %+v", p.Items)
		}
		it := p.Items[0]
		cats := toItems(it["cats"])
		if got := strings.Join(names(cats, "title"), "|"); got != "Home|Office|Office" {
			t.Errorf("cats (one item per edge, ordered by title): %s", got)
		}
		office := toItems(it["office"])
		if len(office) != 1 || office[0]["properties"].(map[string]any)["position"].(float64) != 7 {
			t.Errorf("office edge filter: %+v", office)
		}
		rel := office[0]["_relationship"].(map[string]any)
		if rel["id"] != "00000000-0000-7000-8000-0000000000e3" || rel["type"] != "IN_CATEGORY" || rel["direction"] != "out" || rel["createdAt"] == nil {
			t.Errorf("_relationship: %+v", rel)
		}
		sim := toItems(it["sim"])
		if len(sim) != 2 || sim[0]["name"] != "Table" || sim[0]["_relationship"].(map[string]any)["direction"] != "out" ||
			sim[1]["name"] != "50% off_chair" || sim[1]["_relationship"].(map[string]any)["direction"] != "in" {
			t.Errorf("both directions: %+v", sim)
		}
	})

	t.Run("nested levels are per related node, also when a node recurs", func(t *testing.T) {
		// Office is reached twice from Oak desk (e1, e3) and Home from Oak
		// desk and Table: every occurrence carries that category's own page
		// of products (name descending, offset 1, limit 1, with its edge),
		// and each of those its SIMILAR neighbours.
		prods := Nested{Key: "prods", Relationship: "IN_CATEGORY", Direction: DirIn, OrderBy: []Order{{Field: "name", Desc: true}}, Limit: 1, Offset: 1, Edges: true,
			Select: Selection{Fields: []string{"name"}, Nested: []Nested{{Key: "sim", Relationship: "SIMILAR", Direction: DirBoth, Select: Selection{Fields: []string{"name"}}}}}}
		cats := Nested{Key: "cats", Relationship: "IN_CATEGORY", OrderBy: []Order{{Field: "title"}}, Select: Selection{Fields: []string{"title"}, Nested: []Nested{prods}}}
		// render writes name(child,child...) per item; edges add @edge-id suffix.
		var render func(items []map[string]any) string
		render = func(items []map[string]any) string {
			var parts []string
			for _, it := range items {
				s, _ := it["name"].(string)
				if s == "" {
					s, _ = it["title"].(string)
				}
				if rel, ok := it["_relationship"].(map[string]any); ok {
					s += "@" + strings.TrimPrefix(rel["id"].(string), "00000000-0000-7000-8000-0000000000")
				}
				for _, k := range []string{"cats", "prods", "sim"} {
					if v, ok := it[k]; ok {
						s += k + "(" + render(toItems(v)) + ")"
					}
				}
				parts = append(parts, s)
			}
			return strings.Join(parts, ",")
		}
		home := "Home" + "prods(Oak desk@e2sim(Table,50% off_chair))"
		office := "Office" + "prods(Oak desk@e3sim(Table,50% off_chair))"
		st, err := c.List(List{Entity: "Product", OrderBy: []Order{{Field: "name"}}, Select: Selection{Fields: []string{"name"}, Nested: []Nested{cats}}})
		if err != nil {
			t.Fatal(err)
		}
		var p page
		run(t, db, st, &p)
		want := "50% off_chaircats()," + `Lamp\xcats(),` + "Oak deskcats(" + home + "," + office + "," + office + "),Tablecats(" + home + ")"
		if got := render(p.Items); got != want {
			t.Errorf("list:\n got %s\nwant %s", got, want)
		}
		st, err = c.Get("Product", "00000000-0000-7000-8000-000000000004", Selection{Fields: []string{"name"}, Nested: []Nested{cats}})
		if err != nil {
			t.Fatal(err)
		}
		var one map[string]any
		run(t, db, st, &one)
		if got := render([]map[string]any{one}); got != "Tablecats("+home+")" {
			t.Errorf("get: %s", got)
		}
	})

	t.Run("orderBy id orders by the record's id, at the top and nested", func(t *testing.T) {
		// Oak desk's edges, in creation order: e1 → Office (c1), e2 → Home
		// (c2), e3 → Office (c1). By category id: Office, Office, Home; by
		// title: Home, Office, Office — so every case below tells the
		// record's id apart from the edges' order and from the other key.
		cats := func(order ...Order) string {
			t.Helper()
			st, err := c.List(List{Entity: "Product", Where: where(t, `{"name": "Oak desk"}`), Select: Selection{Fields: []string{"name"}, Nested: []Nested{
				{Key: "cats", Relationship: "IN_CATEGORY", Select: Selection{Fields: []string{"title"}}, OrderBy: order, Edges: true},
			}}})
			if err != nil {
				t.Fatal(err)
			}
			var p page
			run(t, db, st, &p)
			var out []string
			for _, it := range toItems(p.Items[0]["cats"]) {
				out = append(out, it["title"].(string)+"@"+strings.TrimPrefix(it["_relationship"].(map[string]any)["id"].(string), "00000000-0000-7000-8000-0000000000"))
			}
			return strings.Join(out, "|")
		}
		for _, tc := range []struct {
			name  string
			order []Order
			want  string
		}{
			{"id", []Order{{Field: "id"}}, "Office@e1|Office@e3|Home@e2"},
			{"id desc", []Order{{Field: "id", Desc: true}}, "Home@e2|Office@e1|Office@e3"},
			{"id then title", []Order{{Field: "id"}, {Field: "title"}}, "Office@e1|Office@e3|Home@e2"},
			{"id desc then title desc", []Order{{Field: "id", Desc: true}, {Field: "title", Desc: true}}, "Home@e2|Office@e1|Office@e3"},
			{"rank desc then id", []Order{{Field: "rank", Desc: true}, {Field: "id"}}, "Home@e2|Office@e1|Office@e3"},
			{"title, ties by edge", []Order{{Field: "title"}}, "Home@e2|Office@e1|Office@e3"},
			{"default: edge creation", nil, "Office@e1|Home@e2|Office@e3"},
		} {
			if got := cats(tc.order...); got != tc.want {
				t.Errorf("nested orderBy %s: got %s, want %s", tc.name, got, tc.want)
			}
		}
		// The other direction: Home's products (edges e2 from Oak desk 01,
		// e4 from Table 04) by product id descending.
		st, err := c.Get("Category", "00000000-0000-7000-8000-0000000000c2", Selection{Fields: []string{"title"}, Nested: []Nested{
			{Key: "prods", Relationship: "IN_CATEGORY", Select: Selection{Fields: []string{"name"}}, OrderBy: []Order{{Field: "id", Desc: true}}},
		}})
		if err != nil {
			t.Fatal(err)
		}
		var home map[string]any
		run(t, db, st, &home)
		if got := strings.Join(names(toItems(home["prods"]), "name"), "|"); got != "Table|Oak desk" {
			t.Errorf("products of Home by id desc: %s", got)
		}
		// Top level: an id key that is not last decides the order (id is
		// unique, so the keys after it never apply).
		for _, tc := range []struct {
			order []Order
			want  string
		}{
			{[]Order{{Field: "id", Desc: true}, {Field: "name"}}, `Table|Lamp\x|50% off_chair|Oak desk`},
			{[]Order{{Field: "id"}, {Field: "name", Desc: true}}, `Oak desk|50% off_chair|Lamp\x|Table`},
			{[]Order{{Field: "name", Desc: true}, {Field: "id", Desc: true}}, `Table|Oak desk|Lamp\x|50% off_chair`},
		} {
			st, err := c.List(List{Entity: "Product", OrderBy: tc.order, Select: Selection{Fields: []string{"name"}}})
			if err != nil {
				t.Fatal(err)
			}
			var p page
			run(t, db, st, &p)
			if got := strings.Join(names(p.Items, "name"), "|"); got != tc.want {
				t.Errorf("top-level orderBy %+v: got %s, want %s", tc.order, got, tc.want)
			}
		}
		keys, err := c.Keys("Product", []Order{{Field: "id", Desc: true}, {Field: "name"}})
		if err != nil || len(keys) != 1 || keys[0] != (Order{Field: "id", Desc: true}) {
			t.Errorf("cursor keys of id desc, name: %+v %v", keys, err)
		}
	})

	t.Run("relationship predicates", func(t *testing.T) {
		check := func(l List, want string) {
			t.Helper()
			st, err := c.List(l)
			if err != nil {
				t.Fatal(err)
			}
			var p page
			run(t, db, st, &p)
			key := "name"
			if l.Entity == "Category" {
				key = "title"
			}
			got := names(p.Items, key)
			sort.Strings(got)
			if strings.Join(got, "|") != want {
				t.Errorf("%+v: got %s want %s", l.Where, strings.Join(got, "|"), want)
			}
		}
		check(List{Entity: "Product", Where: Related{Relationship: "IN_CATEGORY", Quantifier: Some, Where: where(t, `{"title": "Home"}`)}}, "Oak desk|Table")
		check(List{Entity: "Product", Where: Related{Relationship: "IN_CATEGORY", Quantifier: None}}, `50% off_chair|Lamp\x`)
		check(List{Entity: "Category", Where: Related{Relationship: "IN_CATEGORY", Quantifier: Every, Where: where(t, `{"price": {"$gte": 100}}`)}}, "Empty|Home|Office")
		check(List{Entity: "Category", Where: Related{Relationship: "IN_CATEGORY", Quantifier: Every, Where: where(t, `{"price": {"$gte": 200}}`)}}, "Empty")
	})

	t.Run("keyset pages walk every row once, both ways", func(t *testing.T) {
		order := []Order{{Field: "price", Desc: false}}
		var seen []string
		var seek *Seek
		for i := 0; i < 10; i++ {
			st, err := c.List(List{Entity: "Product", OrderBy: order, Limit: 1, Seek: seek, Select: Selection{Fields: []string{"name", "price"}}})
			if err != nil {
				t.Fatal(err)
			}
			var p page
			run(t, db, st, &p)
			if len(p.Items) == 0 {
				break
			}
			last := p.Items[0]
			seen = append(seen, last["name"].(string))
			var price any
			if last["price"] != nil {
				price = json.Number(strings.TrimSuffix(strings.TrimSuffix(jsonNum(last["price"]), ".0"), ""))
			}
			seek = &Seek{Values: []any{price, last["id"]}}
		}
		if got := strings.Join(seen, "|"); got != `50% off_chair|Oak desk|Table|Lamp\x` {
			t.Fatalf("forward pages: %s", got)
		}
		// Backward from the null-priced last row: the three before it, in order.
		st, err := c.List(List{Entity: "Product", OrderBy: order, Limit: 3, Select: Selection{Fields: []string{"name"}},
			Seek: &Seek{Values: []any{nil, "00000000-0000-7000-8000-000000000003"}, Backward: true}})
		if err != nil {
			t.Fatal(err)
		}
		var p page
		run(t, db, st, &p)
		if got := strings.Join(names(p.Items, "name"), "|"); got != "50% off_chair|Oak desk|Table" {
			t.Fatalf("backward page: %s", got)
		}
	})

	t.Run("relationship list", func(t *testing.T) {
		st, err := c.RelationshipList("Product", "00000000-0000-7000-8000-000000000001", Nested{Relationship: "IN_CATEGORY",
			EdgeWhere: where(t, `{"labels": {"$contains": "y"}, "since": {"$lt": "2024-06-01T00:00:00Z"}, "note": {"$startsWith": "a_"}}`)})
		if err != nil {
			t.Fatal(err)
		}
		var p page
		run(t, db, st, &p)
		if len(p.Items) != 1 || p.Items[0]["title"] != "Office" {
			t.Fatalf("edge filter on list/timestamp/string properties: %+v", p.Items)
		}
		st, _ = c.RelationshipList("Product", "00000000-0000-7000-8000-000000000001", Nested{Relationship: "IN_CATEGORY", Limit: 2, Offset: 1})
		run(t, db, st, &p)
		if len(p.Items) != 2 || p.Items[0]["_relationship"].(map[string]any)["id"] != "00000000-0000-7000-8000-0000000000e2" {
			t.Fatalf("creation order, offset 1: %+v", p.Items)
		}
		// The page is cut from the filtered edges before their records
		// are joined: position >= 2 leaves e1 and e3, in creation order.
		for _, tc := range []struct {
			offset int
			want   string
		}{{0, "00000000-0000-7000-8000-0000000000e1"}, {1, "00000000-0000-7000-8000-0000000000e3"}, {2, ""}} {
			st, _ = c.RelationshipList("Product", "00000000-0000-7000-8000-000000000001", Nested{Relationship: "IN_CATEGORY", Limit: 1, Offset: tc.offset,
				EdgeWhere: where(t, `{"position": {"$gte": 2}}`)})
			run(t, db, st, &p)
			got := ""
			if len(p.Items) > 0 {
				got, _ = p.Items[0]["_relationship"].(map[string]any)["id"].(string)
			}
			if len(p.Items) > 1 || got != tc.want || (got != "" && p.Items[0]["title"] != "Office") {
				t.Fatalf("edge filter, limit 1, offset %d: %+v, want %s", tc.offset, p.Items, tc.want)
			}
		}
	})

	t.Run("vector search re-ranks after where", func(t *testing.T) {
		st, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 0.0, 0.0}, TopK: 2, Where: where(t, `{"active": true}`), Select: Selection{Fields: []string{"name"}}})
		if err != nil {
			t.Fatal(err)
		}
		var res []struct {
			Data  map[string]any `json:"data"`
			Score float64        `json:"score"`
		}
		run(t, db, st, &res)
		if len(res) != 2 || res[0].Data["name"] != "Oak desk" || res[0].Score < 0.999 || res[1].Data["name"] != "Table" || res[1].Score >= res[0].Score {
			t.Fatalf("vector results: %+v", res)
		}
		st, err = c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 0.0, 0.0}, TopK: 1,
			Select: Selection{Fields: []string{"name"}, Nested: []Nested{{Key: "cats", Relationship: "IN_CATEGORY", Select: Selection{Fields: []string{"title"}}}}}})
		if err != nil {
			t.Fatal(err)
		}
		run(t, db, st, &res)
		if len(res) != 1 || res[0].Data["name"] != "Oak desk" || strings.Join(names(toItems(res[0].Data["cats"]), "title"), "|") != "Office|Home|Office" {
			t.Fatalf("vector search with a nested selection (edge creation order): %+v", res)
		}
		st, _ = c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{-1.0, 0.0, 0.0}, TopK: 10})
		run(t, db, st, &res)
		for _, r := range res {
			if r.Score < 0 || r.Score > 1 {
				t.Fatalf("score outside [0,1]: %+v", r)
			}
		}
	})
}

func toItems(v any) []map[string]any {
	var out []map[string]any
	for _, x := range v.([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

func jsonNum(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestListByIDOnPostgres: a list whose filter is "id equals" compiles to a
// statement without a page to sort or cut; its JSON is byte for byte what
// the general list statement returns, for a present and an absent id.
func TestListByIDOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	raw := func(st Statement) string {
		var out []byte
		if err := db.QueryRow(st.SQL, st.Args...).Scan(&out); err != nil {
			t.Fatalf("run %s: %v", st.SQL, err)
		}
		return string(out)
	}
	sel := Selection{Fields: []string{"name", "tags", "releasedAt", "attributes"}}
	for _, id := range []string{"00000000-0000-7000-8000-000000000001", "00000000-0000-7000-8000-0000000000ff"} {
		fast, err := c.List(List{Entity: "Product", Where: Cond{Field: "id", Op: Eq, Value: id}, Limit: 1, Select: sel})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(fast.SQL, "LIMIT") {
			t.Errorf("by-id list still pages: %s", fast.SQL)
		}
		general, err := c.List(List{Entity: "Product", Where: And{Cond{Field: "id", Op: Eq, Value: id}}, Limit: 1, Select: sel})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := raw(fast), raw(general); got != want {
			t.Errorf("id %s: by-id list = %s, general list = %s", id, got, want)
		}
	}
}

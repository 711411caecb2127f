package query

import (
	"encoding/json"
	"strings"
	"testing"
)

// categoriesWithProductStats is "categories with their product count,
// average price and highest stock among live products".
func categoriesWithProductStats(t *testing.T) List {
	return List{Entity: "Category", OrderBy: []Order{{Field: "rank"}}, Select: Selection{Fields: []string{"title"}, Aggregates: []RelAggregate{{
		Key: "products", Relationship: "IN_CATEGORY", Direction: DirIn, Where: where(t, `{"active": true}`),
		Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}, {Alias: "avgPrice", Func: Avg, Field: "price"}, {Alias: "stock", Func: Max, Field: "stock"}},
	}}}}
}

// A relationship aggregate is a correlated subquery in the records' own
// statement: one statement, no CTE, the relationship table's rows of each
// record joined to the far records.
func TestRelAggregatePlans(t *testing.T) {
	c := testCompiler(t)
	for name, l := range map[string]List{
		"relaggregate_in":   categoriesWithProductStats(t),
		"relaggregate_both": {Entity: "Product", Select: Selection{Fields: []string{"name"}, Aggregates: []RelAggregate{{Key: "similar", Relationship: "SIMILAR", Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}}}}}},
	} {
		st, err := c.List(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Count(st.SQL, "(SELECT json_build_object('n', count(*)") != 1 || strings.Contains(st.SQL, "WITH ") || strings.Contains(st.SQL, ";") {
			t.Errorf("%s: not one statement with one correlated aggregate: %s", name, st.SQL)
		}
		golden(t, "plan_"+name, st)
	}
}

func TestRelAggregateRejected(t *testing.T) {
	c := testCompiler(t)
	n := Measure{Alias: "n", Func: Count, Field: "*"}
	for _, tc := range []struct {
		name  string
		a     RelAggregate
		field string
	}{
		{"unknown relationship", RelAggregate{Key: "x", Relationship: "NOPE", Measures: []Measure{n}}, "relationship"},
		{"no aggregates", RelAggregate{Key: "x", Relationship: "IN_CATEGORY"}, "aggregates[0].aggregates"},
		{"sum of a string", RelAggregate{Key: "x", Relationship: "IN_CATEGORY", Measures: []Measure{{Alias: "s", Func: Sum, Field: "title", Path: "sum.title"}}}, "aggregates[0].sum.title"},
		{"unknown far field", RelAggregate{Key: "x", Relationship: "IN_CATEGORY", Measures: []Measure{{Alias: "s", Func: Max, Field: "price", Path: "max.price"}}}, "aggregates[0].max.price"},
		{"bad where", RelAggregate{Key: "x", Relationship: "IN_CATEGORY", Where: where(t, `{"nope": 1}`), Measures: []Measure{n}}, "aggregates[0].where.nope"},
		{"key taken", RelAggregate{Key: "name", Relationship: "IN_CATEGORY", Measures: []Measure{n}}, "aggregates[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.List(List{Entity: "Product", Select: Selection{Aggregates: []RelAggregate{tc.a}}})
			if tc.field == "relationship" {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			assertField(t, err, tc.field)
		})
	}
}

func TestRelAggregateOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	st, err := c.List(categoriesWithProductStats(t))
	if err != nil {
		t.Fatal(err)
	}
	var out page
	run(t, db, st, &out)
	got, _ := json.Marshal(out.Items)
	// Office: the oak desk twice (two edges); Home: the desk and the
	// table; Empty: no products (count 0, the others null).
	want := `[{"id":"00000000-0000-7000-8000-0000000000c1","products":{"avgPrice":100,"n":2,"stock":5},"title":"Office"},` +
		`{"id":"00000000-0000-7000-8000-0000000000c2","products":{"avgPrice":200,"n":2,"stock":5},"title":"Home"},` +
		`{"id":"00000000-0000-7000-8000-0000000000c3","products":{"avgPrice":null,"n":0,"stock":null},"title":"Empty"}]`
	if !strings.Contains(canon(t, got), canon(t, []byte(want))) {
		t.Errorf("categories with product stats\n got %s\nwant %s", canon(t, got), canon(t, []byte(want)))
	}
	// A relationship of an entity to itself counts both directions.
	st, _ = c.List(List{Entity: "Product", Where: where(t, `{"name": "Oak desk"}`), Select: Selection{Fields: []string{"name"},
		Aggregates: []RelAggregate{{Key: "similar", Relationship: "SIMILAR", Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}, {Alias: "names", Func: CountDistinct, Field: "name"}}}}}})
	run(t, db, st, &out)
	if len(out.Items) != 1 || canon(t, mustJSON(out.Items[0]["similar"])) != `{"n":2,"names":2}` {
		t.Errorf("similar products of the desk: %v", out.Items)
	}
}

// canon re-marshals JSON with sorted keys, without the timestamps.
func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if l, ok := v.([]any); ok {
		for _, it := range l {
			if m, ok := it.(map[string]any); ok {
				delete(m, "createdAt")
				delete(m, "updatedAt")
			}
		}
	}
	out, _ := json.Marshal(v)
	return string(out)
}

func mustJSON(v any) []byte { b, _ := json.Marshal(v); return b }

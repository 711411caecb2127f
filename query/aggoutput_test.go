package query

import (
	"bytes"
	"encoding/json"
	"testing"
)

// An aggregation with Output answers the groups as the caller's response
// has them: its keys, in its order, nested objects, constants, and null
// for a key field not grouped by.
func TestAggregateOutputOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	p := Aggregation{Entity: "Product", GroupBy: []GroupKey{{Field: "status"}},
		Measures: []Measure{{Alias: "m0", Func: Count, Field: "*"}, {Alias: "m1", Func: Sum, Field: "stock"}},
		OrderBy:  []Order{{Field: "m0", Desc: true}, {Field: "status"}},
		Output: []GroupMember{{Key: "__typename", Const: "ProductAggregateGroup"},
			{Key: "k", Sub: []GroupMember{{Key: "status", KeyField: "status"}, {Key: "name", KeyField: "name"}}},
			{Key: "n", Measure: "m0"}, {Key: "sum", Sub: []GroupMember{{Key: "stock", Measure: "m1"}}}}}
	st, err := c.Aggregate(p)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := testCompiler(t).Aggregate(p)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "plan_aggregate_output", plan)
	var raw []byte
	if err := db.QueryRow(st.SQL, st.Args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if err := json.Compact(&got, raw); err != nil {
		t.Fatal(err)
	}
	want := `[{"__typename":"ProductAggregateGroup","k":{"status":"live","name":null},"n":2,"sum":{"stock":7}},` +
		`{"__typename":"ProductAggregateGroup","k":{"status":"draft","name":null},"n":1,"sum":{"stock":0}},` +
		`{"__typename":"ProductAggregateGroup","k":{"status":null,"name":null},"n":1,"sum":{"stock":null}}]`
	if got.String() != want {
		t.Errorf("groups\n got %s\nwant %s", got.String(), want)
	}
	for name, out := range map[string][]GroupMember{
		"unknown measure": {{Key: "x", Measure: "m9"}},
		"duplicate key":   {{Key: "x", Measure: "m0"}, {Key: "x", Measure: "m1"}},
	} {
		p.Output = out
		if _, err := c.Aggregate(p); err == nil {
			t.Errorf("%s: compiled", name)
		}
	}
}

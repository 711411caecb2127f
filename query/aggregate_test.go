package query

import (
	"encoding/json"
	"testing"
)

func TestAggregatePlans(t *testing.T) {
	c := testCompiler(t)
	for name, p := range map[string]Aggregation{
		"aggregate_total": {Entity: "Product", Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}, {Alias: "total", Func: Sum, Field: "stock"}}},
		"aggregate_by_status": {Entity: "Product", Where: where(t, `{"active": true}`), GroupBy: []GroupKey{{Field: "status"}},
			Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}, {Alias: "avgPrice", Func: Avg, Field: "price"}, {Alias: "latest", Func: Max, Field: "releasedAt"}},
			Having:   where(t, `{"n": {"$gte": 2}}`), OrderBy: []Order{{Field: "avgPrice", Desc: true}}, Limit: 10, Offset: 5},
		"aggregate_by_day": {Entity: "Product", GroupBy: []GroupKey{{Field: "createdAt", Bucket: "day"}, {Field: "day", Bucket: "month"}},
			Measures: []Measure{{Alias: "names", Func: CountDistinct, Field: "name"}}},
	} {
		st, err := c.Aggregate(p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		golden(t, "plan_"+name, st)
	}
}

func TestAggregateRejected(t *testing.T) {
	c := testCompiler(t)
	n := Measure{Alias: "n", Func: Count, Field: "*"}
	for _, tc := range []struct {
		name  string
		p     Aggregation
		field string
	}{
		{"no aggregates", Aggregation{}, "aggregates"},
		{"unknown field", Aggregation{Measures: []Measure{{Alias: "s", Func: Sum, Field: "nope", Path: "aggregates.s.sum"}}}, "aggregates.s.sum"},
		{"sum of a string", Aggregation{Measures: []Measure{{Alias: "s", Func: Sum, Field: "name"}}}, "aggregates.s"},
		{"json", Aggregation{Measures: []Measure{{Alias: "s", Func: Count, Field: "attributes"}}}, "aggregates.s"},
		{"vector", Aggregation{Measures: []Measure{{Alias: "s", Func: Max, Field: "embedding"}}}, "aggregates.s"},
		{"unknown function", Aggregation{Measures: []Measure{{Alias: "s", Func: "median", Field: "price"}}}, "aggregates.s"},
		{"bad alias", Aggregation{Measures: []Measure{{Alias: "a b", Func: Count, Field: "*"}}}, "aggregates.a b"},
		{"group by json", Aggregation{GroupBy: []GroupKey{{Field: "attributes"}}, Measures: []Measure{n}}, "groupBy[0]"},
		{"group by vector", Aggregation{GroupBy: []GroupKey{{Field: "status"}, {Field: "embedding"}}, Measures: []Measure{n}}, "groupBy[1]"},
		{"bucket on a number", Aggregation{GroupBy: []GroupKey{{Field: "price", Bucket: "day"}}, Measures: []Measure{n}}, "groupBy[0].bucket"},
		{"unknown bucket", Aggregation{GroupBy: []GroupKey{{Field: "createdAt", Bucket: "year2"}}, Measures: []Measure{n}}, "groupBy[0].bucket"},
		{"having an unknown alias", Aggregation{Measures: []Measure{n}, Having: Cond{Field: "m", Op: Gt, Value: json.Number("1")}}, "having.m"},
		{"having a field", Aggregation{Measures: []Measure{n}, Having: Cond{Field: "price", Op: Gt, Value: json.Number("1")}}, "having.price"},
		{"order by a field not grouped", Aggregation{Measures: []Measure{n}, OrderBy: []Order{{Field: "price"}}}, "orderBy[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.p.Entity = "Product"
			_, err := c.Aggregate(tc.p)
			assertField(t, err, tc.field)
		})
	}
}

func TestAggregateOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	var out struct {
		Groups []map[string]any `json:"groups"`
	}
	st, err := c.Aggregate(Aggregation{Entity: "Product", GroupBy: []GroupKey{{Field: "status"}},
		Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}, {Alias: "stock", Func: Sum, Field: "stock"}, {Alias: "avgPrice", Func: Avg, Field: "price"},
			{Alias: "cheapest", Func: Min, Field: "price"}, {Alias: "names", Func: CountDistinct, Field: "name"}},
		OrderBy: []Order{{Field: "n", Desc: true}, {Field: "status"}}})
	if err != nil {
		t.Fatal(err)
	}
	run(t, db, st, &out)
	got, _ := json.Marshal(out.Groups)
	want := `[{"avgPrice":200,"cheapest":100,"key":{"status":"live"},"n":2,"names":2,"stock":7},` +
		`{"avgPrice":20.5,"cheapest":20.5,"key":{"status":"draft"},"n":1,"names":1,"stock":0},` +
		`{"avgPrice":null,"cheapest":null,"key":{"status":null},"n":1,"names":1,"stock":null}]`
	if string(got) != want {
		t.Errorf("groups\n got %s\nwant %s", got, want)
	}
	st, _ = c.Aggregate(Aggregation{Entity: "Product", Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}}, Having: where(t, `{"n": {"$gt": 10}}`)})
	run(t, db, st, &out)
	if len(out.Groups) != 0 {
		t.Errorf("having n > 10 over 4 records: %v", out.Groups)
	}
	st, _ = c.Aggregate(Aggregation{Entity: "Product", Where: where(t, `{"active": true}`), GroupBy: []GroupKey{{Field: "releasedAt", Bucket: "month"}},
		Measures: []Measure{{Alias: "n", Func: Count, Field: "*"}}})
	run(t, db, st, &out)
	got, _ = json.Marshal(out.Groups)
	if string(got) != `[{"key":{"releasedAt":"2024-01-01T00:00:00+00:00"},"n":2}]` {
		t.Errorf("monthly buckets in UTC: %s", got)
	}
}

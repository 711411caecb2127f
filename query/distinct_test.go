package query

import (
	"strings"
	"testing"
)

func TestDistinctOnPlans(t *testing.T) {
	c := testCompiler(t)
	for name, l := range map[string]List{
		// Without orderBy the distinctOn fields are the order.
		"list_distinct_on_default_order": {Entity: "Product", DistinctOn: []string{"status"}, Select: Selection{Fields: []string{"name"}}},
		// The newest record of each status, and how many statuses.
		"list_distinct_on_newest": {Entity: "Product", DistinctOn: []string{"status"}, IncludeCount: true, Limit: 10,
			OrderBy: []Order{{Field: "status"}, {Field: "createdAt", Desc: true}}, Where: where(t, `{"price": {"$gt": 1}}`)},
	} {
		st, err := c.List(l)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		golden(t, "plan_"+name, st)
	}
}

func TestDistinctOnRejected(t *testing.T) {
	c := testCompiler(t)
	for _, tc := range []struct {
		name  string
		l     List
		field string
	}{
		{"unknown field", List{DistinctOn: []string{"nope"}}, "distinctOn[0]"},
		{"json field", List{DistinctOn: []string{"status", "attributes"}}, "distinctOn[1]"},
		{"vector field", List{DistinctOn: []string{"embedding"}}, "distinctOn[0]"},
		{"list field", List{DistinctOn: []string{"tags"}}, "distinctOn[0]"},
		{"id", List{DistinctOn: []string{"id"}}, "distinctOn[0]"},
		{"twice", List{DistinctOn: []string{"status", "status"}}, "distinctOn[1]"},
		{"not leading the order", List{DistinctOn: []string{"status"}, OrderBy: []Order{{Field: "createdAt"}, {Field: "status"}}}, "distinctOn[0]"},
		{"second not leading", List{DistinctOn: []string{"status", "stock"}, OrderBy: []Order{{Field: "status"}, {Field: "price"}, {Field: "stock"}}}, "distinctOn[1]"},
		{"with a cursor", List{DistinctOn: []string{"status"}, Seek: &Seek{Values: []any{"live", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}}}, "distinctOn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Entity = "Product"
			_, err := c.List(tc.l)
			assertField(t, err, tc.field)
		})
	}
}

func TestDistinctOnOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	// Fixtures: Oak desk and Table are live, the chair draft, the lamp has
	// no status (one group of its own). Table is the pricier live one.
	for _, tc := range []struct {
		name  string
		l     List
		want  string
		count int
	}{
		{"first of each status by name", List{DistinctOn: []string{"status"}, OrderBy: []Order{{Field: "status"}, {Field: "name"}}}, `50% off_chair|Oak desk|Lamp\x`, 3},
		{"priciest of each status", List{DistinctOn: []string{"status"}, OrderBy: []Order{{Field: "status", Desc: true}, {Field: "price", Desc: true}}}, `Lamp\x|Table|50% off_chair`, 3},
		{"default order", List{DistinctOn: []string{"active"}}, `50% off_chair|Oak desk|Lamp\x`, 3},
		{"filtered, two fields", List{DistinctOn: []string{"active", "status"}, Where: where(t, `{"price": {"$gte": 20}}`)}, `50% off_chair|Oak desk`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.l.Entity, tc.l.IncludeCount = "Product", true
			tc.l.Select = Selection{Fields: []string{"name"}}
			st, err := c.List(tc.l)
			if err != nil {
				t.Fatal(err)
			}
			var p page
			run(t, db, st, &p)
			if got := strings.Join(names(p.Items, "name"), "|"); got != tc.want {
				t.Errorf("items %s, want %s", got, tc.want)
			}
			if p.Count == nil || *p.Count != tc.count {
				t.Errorf("count %v, want %d", p.Count, tc.count)
			}
		})
	}
}

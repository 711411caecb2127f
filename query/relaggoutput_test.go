package query

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/dds-project/dds/apperr"
)

// categoriesAsGraphQLWritesThem is categoriesWithProductStats with the
// record and its aggregate in the response's shape: GraphQL's
// categories { title productsAggregate { __typename count avg { price }
// top: max { stock } } } (the measures named as GraphQL's executor names
// them).
func categoriesAsGraphQLWritesThem(t *testing.T) List {
	l := categoriesWithProductStats(t)
	l.Select.Fields = nil
	l.Select.Aggregates[0].Output = []GroupMember{
		{Key: "__typename", Const: "ProductRelatedAggregate"},
		{Key: "count", Measure: "n"},
		{Key: "avg", Sub: []GroupMember{{Key: "price", Measure: "avgPrice"}}},
		{Key: "top", Sub: []GroupMember{{Key: "stock", Measure: "stock"}, {Key: "__typename", Const: "ProductAggregateMax"}}},
	}
	l.Select.Output = []Member{{Key: "title", Field: "title"}, {Key: "productsAggregate", Aggregate: 1}}
	return l
}

// A relationship aggregate with Output is the same correlated subquery,
// its object built by Postgres with the response's keys and nesting.
func TestRelAggregateOutputPlan(t *testing.T) {
	st, err := testCompiler(t).List(categoriesAsGraphQLWritesThem(t))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.SQL, "WITH ") || strings.Contains(st.SQL, "json_build_object('n'") || !strings.Contains(st.SQL, `AS "productsAggregate"`) {
		t.Errorf("not one statement writing the aggregate under its response key: %s", st.SQL)
	}
	golden(t, "plan_relaggregate_output", st)
}

// What Postgres writes is the response's JSON as it stands: the keys in
// Output's order, nested objects, constants, and no space anywhere (as the
// record around it), null where a function has no value.
func TestRelAggregateOutputOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	st, err := c.List(categoriesAsGraphQLWritesThem(t))
	if err != nil {
		t.Fatal(err)
	}
	var raw json.RawMessage
	run(t, db, st, &raw)
	want := `{"items" : [{"title":"Office","productsAggregate":{"__typename":"ProductRelatedAggregate","count":2,"avg":{"price":100},"top":{"stock":5,"__typename":"ProductAggregateMax"}}}, ` + "\n " +
		`{"title":"Home","productsAggregate":{"__typename":"ProductRelatedAggregate","count":2,"avg":{"price":200},"top":{"stock":5,"__typename":"ProductAggregateMax"}}}, ` + "\n " +
		`{"title":"Empty","productsAggregate":{"__typename":"ProductRelatedAggregate","count":0,"avg":{"price":null},"top":{"stock":null,"__typename":"ProductAggregateMax"}}}]}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
}

// Output of a relationship aggregate says each member once, names only its
// measures, and every aggregate of a selection with Output is written.
func TestRelAggregateOutputRefused(t *testing.T) {
	c := testCompiler(t)
	for name, mod := range map[string]func(l *List){
		"unknown measure": func(l *List) { l.Select.Aggregates[0].Output = []GroupMember{{Key: "c", Measure: "nope"}} },
		"repeated key": func(l *List) {
			l.Select.Aggregates[0].Output = []GroupMember{{Key: "c", Measure: "n"}, {Key: "c", Const: "x"}}
		},
		"group key": func(l *List) { l.Select.Aggregates[0].Output = []GroupMember{{Key: "c", KeyField: "title"}} },
		"key too long": func(l *List) {
			l.Select.Aggregates[0].Output = []GroupMember{{Key: strings.Repeat("k", 64), Measure: "n"}}
		},
		"not written":       func(l *List) { l.Select.Output = l.Select.Output[:1] },
		"written twice":     func(l *List) { l.Select.Output = append(l.Select.Output, Member{Key: "again", Aggregate: 1}) },
		"no such aggregate": func(l *List) { l.Select.Output[1].Aggregate = 2 },
	} {
		l := categoriesAsGraphQLWritesThem(t)
		mod(&l)
		if _, err := c.List(l); apperr.As(err).Code != apperr.Validation {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
}

package query

import (
	"strings"
	"testing"
)

// A get by id whose selection has a relationship aggregate, compiled with
// Output (GraphQL's category(id) { title productsAggregate { ... } }): one
// statement whose row is the response's object, the aggregate the same
// correlated subquery as a list's.
func TestRelAggregateOutputGetPlan(t *testing.T) {
	l := categoriesAsGraphQLWritesThem(t)
	st, err := testCompiler(t).Get("Category", "00000000-0000-7000-8000-0000000000c1", l.Select)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(st.SQL, "WITH ") || !strings.Contains(st.SQL, `AS "productsAggregate"`) || strings.Contains(st.SQL, `t."id",`) {
		t.Errorf("not one statement writing the record's response members: %s", st.SQL)
	}
	golden(t, "plan_get_relaggregate_output", st)
}

// What Postgres writes for it is the response's object as it stands.
func TestRelAggregateOutputGetOnPostgres(t *testing.T) {
	t.Parallel()
	db, c := scratch(t)
	l := categoriesAsGraphQLWritesThem(t)
	st, err := c.Get("Category", "00000000-0000-7000-8000-0000000000c1", l.Select)
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := db.QueryRow(st.SQL, st.Args...).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	want := `{"title":"Office","productsAggregate":{"__typename":"ProductRelatedAggregate","count":2,"avg":{"price":100},"top":{"stock":5,"__typename":"ProductAggregateMax"}}}`
	if string(raw) != want {
		t.Errorf("got  %s\nwant %s", raw, want)
	}
}

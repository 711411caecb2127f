package graphql

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/protocol"
)

// "Categories with their product count and average price" is one
// statement per root field: <field>Aggregate is a correlated subquery of
// the categories' statement, also under a nested relationship list; its
// members come in the selection's order under their aliases.
func TestRelationshipAggregateIsOneStatement(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	sc := e.scope(t, s.tenant)
	m, err := model.ModelFor(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, counter := countingStore(e.Store)
	eng := gql.NewEngine(store, Limits{}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	q := `{
	  categories(orderBy: [{field: "rank"}]) {
	    name
	    productsAggregate { __typename count avg { price } total: sum { stock } max { price name } }
	    live: productsAggregate(where: {status: {equals: live}}) { n: count }
	  }
	  products(where: {name: {equals: "Apple"}}) { name categories { name productsAggregate { count } } }
	}`
	pr, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q})
	if res != nil {
		t.Fatalf("%+v", res.Errors)
	}
	out := eng.Execute(context.Background(), sc, pr)
	if len(out.Errors) > 0 {
		t.Fatalf("%+v", out.Errors)
	}
	if n := counter.Load(); n != 2 {
		t.Errorf("%d SQL statements for 2 root fields, want 2", n)
	}
	var data any
	if err := json.Unmarshal(out.Data, &data); err != nil {
		t.Fatalf("data %s: %v", out.Data, err)
	}
	jsonEq(t, data, `{
	  "categories": [
	    {"name": "Fruit", "productsAggregate": {"__typename": "ProductRelatedAggregate", "count": 2, "avg": {"price": 1}, "total": {"stock": 10}, "max": {"price": 1.5, "name": "Banana"}},
	     "live": {"n": 1}},
	    {"name": "Bakery", "productsAggregate": {"__typename": "ProductRelatedAggregate", "count": 1, "avg": {"price": 3}, "total": {"stock": 5}, "max": {"price": 3, "name": "Carrot cake"}},
	     "live": {"n": 1}}
	  ],
	  "products": [{"name": "Apple", "categories": [{"name": "Fruit", "productsAggregate": {"count": 2}}]}]
	}`)
	want := `{"categories":[{"name":"Fruit","productsAggregate":{"__typename":"ProductRelatedAggregate","count":2,"avg":{"price":1},"total":{"stock":10}`
	if !strings.HasPrefix(string(out.Data), want) {
		t.Errorf("response order: %s", out.Data)
	}
}

// Bad relationship aggregates are refused before execution (a function a
// field does not take is not in the schema) or name the path.
func TestRelationshipAggregateRejected(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	for _, tc := range []struct{ q, want string }{
		{`{ categories { productsAggregate { sum { name } } } }`, "name"},
		{`{ categories { productsAggregate { avg { attributes } } } }`, "attributes"},
		{`{ categories { productsAggregate { max { embedding } } } }`, "embedding"},
		{`{ categories { productsAggregate(where: {nope: {equals: 1}}) { count } } }`, "nope"},
	} {
		r := e.gql(t, s.tenant, s.key, tc.q, nil)
		if len(r.Errors) == 0 || !strings.Contains(r.Errors[0].Message, tc.want) {
			t.Errorf("%s: %+v, want an error naming %s", tc.q, r.Errors, tc.want)
		}
	}
}

package graphql

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"testing"

	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/graphql/protocol"
)

// shopTenant is a tenant with the shop fixture schema and a small catalogue:
// products p[0..2], categories c[0..1], edges with positions.
type shop struct {
	tenant, key string
	p, c        []string
}

func newShop(t *testing.T) *shop {
	e := testEnv(t)
	s := &shop{}
	s.tenant, s.key = e.tenantWith(t, modeltest.Def(t, "shop.json"))
	for i, f := range []map[string]any{
		{"name": "Apple", "price": 1.5, "stock": 10, "active": true, "tags": []string{"fruit", "red"}, "status": "live", "releasedAt": "2024-01-01T00:00:00Z"},
		{"name": "Banana", "price": 0.5, "stock": 0, "active": false, "tags": []string{"fruit"}, "status": "draft"},
		{"name": "Carrot cake", "price": 3, "stock": 5, "status": "live", "attributes": map[string]any{"vegan": true}},
	} {
		_ = i
		s.p = append(s.p, e.create(t, s.tenant, "Product", f))
	}
	s.c = append(s.c, e.create(t, s.tenant, "Category", map[string]any{"name": "Fruit", "rank": 1}))
	s.c = append(s.c, e.create(t, s.tenant, "Category", map[string]any{"name": "Bakery", "rank": 2}))
	e.link(t, s.tenant, "IN_CATEGORY", s.p[0], s.c[0], map[string]any{"position": 2})
	e.link(t, s.tenant, "IN_CATEGORY", s.p[1], s.c[0], map[string]any{"position": 1})
	e.link(t, s.tenant, "IN_CATEGORY", s.p[2], s.c[1], map[string]any{"position": 1})
	return s
}

func jsonEq(t *testing.T, got any, want string) {
	t.Helper()
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	var gv any
	if err := json.Unmarshal(g, &gv); err != nil {
		t.Fatalf("got %s: %v", g, err)
	}
	if !reflect.DeepEqual(gv, w) {
		t.Errorf("got  %s\nwant %s", g, want)
	}
}

func TestNestedQueryIsOneStatementPerRootField(t *testing.T) {
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
	// sc is the system principal's (every scope), as the admin key's would be.
	q := `{
	  products(orderBy: [{field: "name"}]) {
	    name
	    categories { name products(orderBy: [{field: "name", direction: DESC}]) { name } }
	  }
	  cats: categories(orderBy: [{field: "rank"}]) { __typename n: name }
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
	  "products": [
	    {"name": "Apple", "categories": [{"name": "Fruit", "products": [{"name": "Banana"}, {"name": "Apple"}]}]},
	    {"name": "Banana", "categories": [{"name": "Fruit", "products": [{"name": "Banana"}, {"name": "Apple"}]}]},
	    {"name": "Carrot cake", "categories": [{"name": "Bakery", "products": [{"name": "Carrot cake"}]}]}
	  ],
	  "cats": [{"__typename": "Category", "n": "Fruit"}, {"__typename": "Category", "n": "Bakery"}]
	}`)
	// Field order follows the selection, aliases included.
	want := `{"products":[{"name":"Apple","categories":[{"name":"Fruit","products":[{"name":"Banana"},{"name":"Apple"}]}]}`
	if string(out.Data[:len(want)]) != want {
		t.Errorf("response order: %s", out.Data)
	}
}

func TestFilterOperators(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	for _, tc := range []struct {
		where string
		want  []string
	}{
		{`{name: {equals: "Apple"}}`, []string{"Apple"}},
		{`{name: {not: "Apple"}}`, []string{"Banana", "Carrot cake"}},
		{`{name: {in: ["Apple", "Banana"]}}`, []string{"Apple", "Banana"}},
		{`{name: {notIn: ["Apple", "Banana"]}}`, []string{"Carrot cake"}},
		{`{price: {lt: 1.5}}`, []string{"Banana"}},
		{`{price: {lte: 1.5}}`, []string{"Apple", "Banana"}},
		{`{price: {gt: 1.5}}`, []string{"Carrot cake"}},
		{`{price: {gte: 1.5}}`, []string{"Apple", "Carrot cake"}},
		{`{stock: {gt: 0, lt: 10}}`, []string{"Carrot cake"}},
		{`{name: {contains: "an"}}`, []string{"Banana"}},
		{`{name: {startsWith: "Ca"}}`, []string{"Carrot cake"}},
		{`{name: {endsWith: "e"}}`, []string{"Apple", "Carrot cake"}},
		{`{active: {isNull: true}}`, []string{"Carrot cake"}},
		{`{active: {isNull: false}}`, []string{"Apple", "Banana"}},
		{`{active: {equals: true}}`, []string{"Apple"}},
		{`{tags: {contains: "red"}}`, []string{"Apple"}},
		{`{status: {equals: live}}`, []string{"Apple", "Carrot cake"}},
		{`{status: {in: [draft]}}`, []string{"Banana"}},
		{`{releasedAt: {gte: "2023-12-31T00:00:00Z"}}`, []string{"Apple"}},
		{`{attributes: {contains: {vegan: true}}}`, []string{"Carrot cake"}},
		{`{AND: [{price: {gt: 1}}, {stock: {gt: 6}}]}`, []string{"Apple"}},
		{`{OR: [{name: {equals: "Apple"}}, {name: {equals: "Banana"}}]}`, []string{"Apple", "Banana"}},
		{`{NOT: {name: {equals: "Apple"}}}`, []string{"Banana", "Carrot cake"}},
		{`{categories_some: {name: {equals: "Fruit"}}}`, []string{"Apple", "Banana"}},
		{`{categories_none: {name: {equals: "Fruit"}}}`, []string{"Carrot cake"}},
		{`{categories_every: {name: {equals: "Bakery"}}}`, []string{"Carrot cake"}},
		{`{categories_some: {products_some: {name: {equals: "Banana"}}}}`, []string{"Apple", "Banana"}},
	} {
		t.Run(tc.where, func(t *testing.T) {
			d := e.gql(t, s.tenant, s.key, fmt.Sprintf(`{ products(where: %s, orderBy: [{field: "name"}]) { name } }`, tc.where), nil).ok(t)
			var got []string
			for _, p := range d["products"].([]any) {
				got = append(got, p.(map[string]any)["name"].(string))
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFilterVariablesSearchPagingCount(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	d := e.gql(t, s.tenant, s.key, `query($w: ProductWhere, $n: Int) {
	  products(where: $w, limit: $n, offset: 1, orderBy: [{field: "price", direction: DESC}]) { name price }
	  productsCount(where: $w)
	  found: products(search: "carrot") { name }
	}`, map[string]any{"w": map[string]any{"stock": map[string]any{"gte": 0}}, "n": 1}).ok(t)
	jsonEq(t, d, `{"products": [{"name": "Apple", "price": 1.5}], "productsCount": 3, "found": [{"name": "Carrot cake"}]}`)

	one := e.gql(t, s.tenant, s.key, `query($id: ID!) { product(id: $id) { id name } nope: product(id: "x") { id } }`, map[string]any{"id": s.p[1]}).ok(t)
	jsonEq(t, one, fmt.Sprintf(`{"product": {"id": %q, "name": "Banana"}, "nope": null}`, s.p[1]))
}

func TestRelationshipFieldArgumentsAndEdgeConnection(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	d := e.gql(t, s.tenant, s.key, fmt.Sprintf(`{
	  category(id: %q) {
	    products(where: {price: {lt: 1}}) { name }
	    firstTwo: products(orderBy: [{field: "name", direction: DESC}], limit: 1, offset: 1) { name }
	    productsConnection(edgeWhere: {position: {gte: 1}}, orderBy: [{field: "name"}]) {
	      __typename
	      edges { id createdAt properties { position } node { name } }
	    }
	    low: productsConnection(edgeWhere: {position: {equals: 1}}) { edges { properties { __typename position } node { name } } }
	    filtered: productsConnection(nodeWhere: {name: {startsWith: "A"}}) { edges { node { name } } }
	  }
	}`, s.c[0]), nil).ok(t)
	cat := d["category"].(map[string]any)
	jsonEq(t, cat["products"], `[{"name": "Banana"}]`)
	jsonEq(t, cat["firstTwo"], `[{"name": "Apple"}]`)
	jsonEq(t, cat["low"], `{"edges": [{"properties": {"__typename": "InCategoryProperties", "position": 1}, "node": {"name": "Banana"}}]}`)
	jsonEq(t, cat["filtered"], `{"edges": [{"node": {"name": "Apple"}}]}`)
	conn := cat["productsConnection"].(map[string]any)
	if conn["__typename"] != "CategoryProductsRelationshipConnection" {
		t.Errorf("typename %v", conn["__typename"])
	}
	edges := conn["edges"].([]any)
	if len(edges) != 2 {
		t.Fatalf("edges: %v", edges)
	}
	first := edges[0].(map[string]any)
	if first["id"] == nil || first["createdAt"] == nil {
		t.Errorf("edge id/createdAt missing: %v", first)
	}
	jsonEq(t, first["properties"], `{"position": 2}`)
	jsonEq(t, first["node"], `{"name": "Apple"}`)
}

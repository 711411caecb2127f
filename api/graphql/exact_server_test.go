package graphql_test

import (
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

// The three ways a response is written as Postgres built it (a get by id,
// a flat list, a list with relationship selections) through the real
// composition, with GraphQL posted as a client posts it: each answers the
// response's exact bytes (aliases, __typename, selection order), twice (the
// second request runs what the first kept on the prepared operation).
func TestExactOutputThroughTheServer(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "exactsrv", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "tags", "type": "STRING", "list": true}}},
		map[string]any{"name": "Category", "fields": []any{map[string]any{"name": "title", "type": "STRING", "required": true}}},
	}, "relationships": []any{
		map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category", "fromField": "categories", "toField": "products"},
	}})
	create := func(entity string, body map[string]any) string {
		return app.Must(t, 201, "POST", "/api/v1/dynamic/"+entity, key, body).JSON(t)["id"].(string)
	}
	apple := create("Product", map[string]any{"name": "Apple \"é\"", "price": 1.5, "tags": []string{"a", "b"}})
	create("Product", map[string]any{"name": "Pear"})
	fruit, sweet := create("Category", map[string]any{"title": "fruit"}), create("Category", map[string]any{"title": "sweet"})
	for _, c := range []string{sweet, fruit} {
		app.Must(t, 201, "POST", "/api/v1/dynamic/Product/"+apple+"/relationships/IN_CATEGORY", key, map[string]any{"targetId": c})
	}

	for _, c := range []struct {
		name, query string
		vars        map[string]any
		want        string
	}{
		{"get by id", `query($id: ID!) { product(id: $id) { __typename p: price name id } }`, map[string]any{"id": apple},
			`{"data":{"product":{"__typename":"Product","p":1.5,"name":"Apple \"é\"","id":"` + apple + `"}}}`},
		{"get by id of no record", `query($id: ID!) { product(id: $id) { name } }`, map[string]any{"id": fruit},
			`{"data":{"product":null}}`},
		{"flat list", `{ products(orderBy: [{field: "name"}]) { n: name tags price __typename } }`, nil,
			`{"data":{"products":[{"n":"Apple \"é\"","tags":["a","b"],"price":1.5,"__typename":"Product"},{"n":"Pear","tags":null,"price":null,"__typename":"Product"}]}}`},
		{"flat list from variables", `query($min: Float!) { products(where: {price: {gte: $min}}) { name } }`, map[string]any{"min": 1},
			`{"data":{"products":[{"name":"Apple \"é\""}]}}`},
		{"nested list", `{ products(orderBy: [{field: "name"}]) { name cats: categories(orderBy: [{field: "title", direction: DESC}]) { __typename title } } }`, nil,
			`{"data":{"products":[{"name":"Apple \"é\"","cats":[{"__typename":"Category","title":"sweet"},{"__typename":"Category","title":"fruit"}]},{"name":"Pear","cats":[]}]}}`},
		{"relationship aggregate", `{ categories(orderBy: [{field: "title"}]) { title productsAggregate { count avg { price } max { __typename name } } none: productsAggregate(where: {price: {gt: 5}}) { count sum { price } } } }`, nil,
			`{"data":{"categories":[{"title":"fruit","productsAggregate":{"count":1,"avg":{"price":1.5},"max":{"__typename":"ProductAggregateMax","name":"Apple \"é\""}},"none":{"count":0,"sum":{"price":null}}},` +
				`{"title":"sweet","productsAggregate":{"count":1,"avg":{"price":1.5},"max":{"__typename":"ProductAggregateMax","name":"Apple \"é\""}},"none":{"count":0,"sum":{"price":null}}}]}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"query": c.query, "variables": c.vars}
			for range 2 {
				r := app.Must(t, 200, "POST", "/api/v1/dynamic-gql/"+tenant, key, body)
				if string(r.Body) != c.want {
					t.Fatalf("answer:\n%s\nwant:\n%s", r.Body, c.want)
				}
			}
		})
	}
}

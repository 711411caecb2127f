package graphql_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// FuzzDocumentsNeverFailServerSide sends arbitrary GraphQL documents (and
// variables) to the endpoint: the answer is data or errors with a 2xx or
// 4xx status, never a 5xx. Seeds are hostile shapes: deep nesting, fragment
// cycles, alias floods, wrong-typed variables, huge numbers.
func FuzzDocumentsNeverFailServerSide(f *testing.F) {
	for _, s := range [][2]string{
		{`{ products { id name } }`, ``},
		{`{ products(limit: 99999999999999999999) { id } }`, ``},
		{`{ products(where: {price: {gt: "x"}}) { id } }`, ``},
		{`query($n: Int) { products(limit: $n) { id } }`, `{"n": "ten"}`},
		{`query($w: ProductWhere) { products(where: $w) { id } }`, `{"w": {"name": {"startsWith": "%_\\"}, "OR": [{"price": {"in": []}}]}}`},
		{`{ products { categories { products { categories { products { categories { products { id } } } } } } } }`, ``},
		{`fragment A on Product { ...B } fragment B on Product { ...A } { products { ...A } }`, ``},
		{`{ a1: products { id } a2: products { id } a3: products { id } a4: products { id } a5: products { id } }`, ``},
		{`{ productsConnection(first: 5, last: 5) { edges { cursor } } }`, ``},
		{`{ productsConnection(after: "!!notacursor") { edges { cursor } } }`, ``},
		{`mutation { createProduct(input: {name: "\u0000"}) { id } }`, ``},
		{`mutation { batchCreateProduct(input: [{}, {name: "ok"}]) { successCount failed { index } } }`, ``},
		{`{ productVectorSearch(input: {field: "name", vector: [1], topK: 0}) { score } }`, ``},
		{`{ __schema { types { fields { type { ofType { ofType { name } } } } } } }`, ``},
		{`{ product(id: "01a200ae-0000-7000-8000-000000000000") { id } }`, ``},
		{`subscription { productCreated { id } }`, ``},
		{`{`, ``}, {``, `[]`},
	} {
		f.Add(s[0], s[1])
	}
	type fixture struct {
		app         *testenv.App
		key, tenant string
	}
	var shared teststack.Once[fixture]
	f.Fuzz(func(t *testing.T, query, variables string) {
		fx := shared.Get(t, func(t testing.TB) (fixture, error) {
			app := testenv.Server(t)
			tenant, key := app.Tenant(t)
			app.Schema(t, key, map[string]any{"name": "fuzz", "entities": []any{
				map[string]any{"name": "Product", "fields": []any{
					map[string]any{"name": "name", "type": "STRING", "searchable": true},
					map[string]any{"name": "price", "type": "NUMBER"},
					map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 2}}},
				map[string]any{"name": "Category", "fields": []any{map[string]any{"name": "name", "type": "STRING"}}},
			}, "relationships": []any{map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category", "fromField": "categories", "toField": "products"}}})
			return fixture{app, key, tenant}, nil
		})
		app, key, tenant := fx.app, fx.key, fx.tenant
		body := map[string]any{"query": query}
		if variables != "" {
			body["variables"] = json.RawMessage(variables)
		}
		b, err := json.Marshal(body)
		if err != nil { // variables that are not JSON: send them as a string
			body["variables"] = variables
			b, _ = json.Marshal(body)
		}
		r := app.Do(t, "POST", "/api/v1/dynamic-gql/"+tenant, key, b)
		if r.Status >= http.StatusInternalServerError {
			t.Fatalf("query %q variables %q: status %d: %s", query, variables, r.Status, r.Body)
		}
	})
}

package server_test

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

// shelf is a schema whose relationship has GraphQL fields on both ends.
var shelf = map[string]any{"name": "shelf", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{map[string]any{"name": "name", "type": "STRING", "required": true}}},
	map[string]any{"name": "Category", "fields": []any{map[string]any{"name": "title", "type": "STRING", "required": true}}},
}, "relationships": []any{
	map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category", "fromField": "categories", "toField": "products"},
}}

// An orderBy on id orders records by their own id wherever it stands: at
// the top of REST and GraphQL lists and in their nested relationship
// selections, where the default order is the links' creation order. The
// product's links are made in an order that is neither the categories' id
// order nor its reverse, and the titles sort differently again.
func TestOrderByIDThroughRESTAndGraphQL(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, shelf)
	create := func(entity string, body map[string]any) string {
		return app.Must(t, 201, "POST", "/api/v1/dynamic/"+entity, key, body).JSON(t)["id"].(string)
	}
	var cats []string
	for _, tt := range []string{"b", "c", "a"} {
		cats = append(cats, create("Category", map[string]any{"title": tt}))
	}
	sort.Strings(cats) // Postgres orders uuids as their bytes, as their hex text sorts
	p := create("Product", map[string]any{"name": "desk"})
	others := []string{create("Product", map[string]any{"name": "a"}), create("Product", map[string]any{"name": "z"})}
	for _, c := range []string{cats[1], cats[2], cats[0]} {
		app.Must(t, 201, "POST", "/api/v1/dynamic/Product/"+p+"/relationships/IN_CATEGORY", key, map[string]any{"targetId": c})
	}
	asc := strings.Join(cats, ",")
	desc := strings.Join([]string{cats[2], cats[1], cats[0]}, ",")
	ids := func(items []any) string {
		var out []string
		for _, it := range items {
			out = append(out, it.(map[string]any)["id"].(string))
		}
		return strings.Join(out, ",")
	}

	// REST: a traversal of a query, and the relationship list.
	for dir, want := range map[string]string{"ASC": asc, "DESC": desc} {
		r := app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", key, map[string]any{"where": map[string]any{"id": p},
			"traverse": []any{map[string]any{"relationship": "IN_CATEGORY", "as": "cats", "orderBy": "id", "orderDirection": dir}}}).JSON(t)
		if got := ids(r["items"].([]any)[0].(map[string]any)["cats"].([]any)); got != want {
			t.Errorf("REST traverse orderBy id %s: got %s, want %s", dir, got, want)
		}
		q := url.Values{"orderBy": {"id"}, "orderDirection": {dir}}
		r = app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+p+"/relationships/IN_CATEGORY?"+q.Encode(), key, nil).JSON(t)
		if got := ids(r["items"].([]any)); got != want {
			t.Errorf("REST relationship list orderBy id %s: got %s, want %s", dir, got, want)
		}
	}

	// GraphQL: nested id alone and id before another key; a top-level id
	// key before another key.
	gql := func(q string) map[string]any {
		t.Helper()
		r := app.Must(t, 200, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": q}).JSON(t)
		if r["errors"] != nil {
			t.Fatalf("%s: %v", q, r["errors"])
		}
		return r["data"].(map[string]any)
	}
	for order, want := range map[string]string{
		`[{field: "id"}]`:                                    asc,
		`[{field: "id", direction: DESC}]`:                   desc,
		`[{field: "id"}, {field: "title"}]`:                  asc,
		`[{field: "id", direction: DESC}, {field: "title"}]`: desc,
	} {
		d := gql(fmt.Sprintf(`{ product(id: %q) { categories(orderBy: %s) { id title } } }`, p, order))
		if got := ids(d["product"].(map[string]any)["categories"].([]any)); got != want {
			t.Errorf("GraphQL categories(orderBy: %s): got %s, want %s", order, got, want)
		}
	}
	prods := append([]string{p}, others...)
	sort.Sort(sort.Reverse(sort.StringSlice(prods)))
	d := gql(`{ products(orderBy: [{field: "id", direction: DESC}, {field: "name"}]) { id } }`)
	if got, want := ids(d["products"].([]any)), strings.Join(prods, ","); got != want {
		t.Errorf("GraphQL products(orderBy: id DESC, name): got %s, want %s", got, want)
	}
}

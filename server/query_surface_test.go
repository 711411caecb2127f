package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
)

// catalog is the schema of the query surface scenarios (issue 25).
var catalog = map[string]any{"name": "catalog", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "status", "type": "ENUM", "values": []any{"draft", "live"}},
		map[string]any{"name": "price", "type": "NUMBER"},
		map[string]any{"name": "stock", "type": "INTEGER"},
		map[string]any{"name": "releasedAt", "type": "TIMESTAMP"},
		map[string]any{"name": "attributes", "type": "JSON"},
	}},
	map[string]any{"name": "Review", "fields": []any{
		map[string]any{"name": "rating", "type": "INTEGER", "required": true},
	}},
}, "relationships": []any{
	map[string]any{"name": "REVIEWS", "from": "Product", "to": "Review", "fromField": "reviews", "toField": "product"},
}}

// errorField is the field or path a 400's first detail names.
func errorField(t *testing.T, r *testenv.Response) string {
	t.Helper()
	e, _ := r.JSON(t)["error"].(map[string]any)
	ds, _ := e["details"].([]any)
	if len(ds) == 0 {
		return ""
	}
	f, _ := ds[0].(map[string]any)["field"].(string)
	return f
}

func names(items []any) string {
	var out []string
	for _, it := range items {
		out = append(out, it.(map[string]any)["name"].(string))
	}
	return strings.Join(out, ",")
}

// Newest first through REST and GraphQL: the order follows createdAt then
// id, both descending, pages of a GraphQL connection walk it both ways,
// and a cursor made for the old ascending tie breaker is refused.
func TestNewestFirstThroughRESTAndGraphQL(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, catalog)
	// One batch: every row shares the transaction's timestamp, so the
	// order is decided by the ids alone (descending).
	items := []any{}
	for i := range 7 {
		items = append(items, map[string]any{"name": fmt.Sprintf("p%d", i)})
	}
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product/batch", key, map[string]any{"items": items})
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "newest"})
	q := url.Values{"orderBy": {"createdAt"}, "orderDirection": {"DESC"}, "select": {"name"}}
	rest := app.Must(t, 200, "GET", "/api/v1/dynamic/Product?"+q.Encode(), key, nil).JSON(t)["items"].([]any)
	if len(rest) != 8 || rest[0].(map[string]any)["name"] != "newest" {
		t.Fatalf("REST newest first: %v", rest)
	}
	for i := 2; i < len(rest); i++ {
		if a, b := rest[i-1].(map[string]any)["id"].(string), rest[i].(map[string]any)["id"].(string); a <= b {
			t.Errorf("ties on createdAt are not by id descending: %s before %s", a, b)
		}
	}
	gql := func(q string) *testenv.Response {
		return app.Do(t, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": q})
	}
	want := names(rest)
	var got []string
	after := ""
	for range 10 {
		args := `first: 3, orderBy: [{field: "createdAt", direction: DESC}]`
		if after != "" {
			args += fmt.Sprintf(", after: %q", after)
		}
		d := gql(`{ productsConnection(` + args + `) { edges { node { name } } pageInfo { hasNextPage endCursor } } }`).JSON(t)["data"].(map[string]any)["productsConnection"].(map[string]any)
		for _, e := range d["edges"].([]any) {
			got = append(got, e.(map[string]any)["node"].(map[string]any)["name"].(string))
		}
		pi := d["pageInfo"].(map[string]any)
		if !pi["hasNextPage"].(bool) {
			break
		}
		after = pi["endCursor"].(string)
	}
	if strings.Join(got, ",") != want {
		t.Errorf("GraphQL connection pages %v, want %s", got, want)
	}
	flat := gql(`{ products(orderBy: [{field: "createdAt", direction: DESC}], limit: 3) { name } }`).JSON(t)["data"].(map[string]any)["products"].([]any)
	if names(flat) != strings.Join(strings.Split(want, ",")[:3], ",") {
		t.Errorf("GraphQL list newest first: %s, want the first three of %s", names(flat), want)
	}
	old := base64.RawURLEncoding.EncodeToString([]byte(`{"k":["createdAt:desc","id"],"v":["2025-01-01T00:00:00Z","00000000-0000-7000-8000-000000000001"]}`))
	r := gql(fmt.Sprintf(`{ productsConnection(first: 2, after: %q, orderBy: [{field: "createdAt", direction: DESC}]) { totalCount } }`, old))
	if !strings.Contains(string(r.Body), "VALIDATION_ERROR") || !strings.Contains(string(r.Body), `"after"`) {
		t.Errorf("an old descending cursor: %d %s", r.Status, r.Body)
	}
}

// distinctOn through REST (query body and GET list) and GraphQL lists,
// with its bad input: each a 400 naming the path.
func TestDistinctOnThroughRESTAndGraphQL(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, catalog)
	for _, p := range []map[string]any{
		{"name": "a", "status": "live", "price": 10}, {"name": "b", "status": "live", "price": 30},
		{"name": "c", "status": "draft", "price": 20}, {"name": "d", "status": "draft", "price": 5}, {"name": "e"},
	} {
		app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, p)
	}
	// The priciest product of each status (no status last), and how many groups.
	r := app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", key, map[string]any{"distinctOn": []any{"status"}, "includeCount": true,
		"orderBy": []any{map[string]any{"field": "status"}, map[string]any{"field": "price", "direction": "DESC"}}}).JSON(t)
	if got := names(r["items"].([]any)); got != "c,b,e" || r["count"] != float64(3) {
		t.Errorf("REST query distinctOn status: %s count %v", got, r["count"])
	}
	q := url.Values{"distinctOn": {"status"}}
	if got := names(app.Must(t, 200, "GET", "/api/v1/dynamic/Product?"+q.Encode(), key, nil).JSON(t)["items"].([]any)); got != "c,a,e" && got != "d,a,e" && got != "c,b,e" && got != "d,b,e" {
		t.Errorf("REST list distinctOn status, ordered by it: %s", got)
	}
	d := app.Must(t, 200, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": `{ products(distinctOn: ["status"], orderBy: [{field: "status", direction: DESC}, {field: "price"}]) { name } }`}).JSON(t)
	if got := names(d["data"].(map[string]any)["products"].([]any)); got != "e,a,d" {
		t.Errorf("GraphQL distinctOn: %s (%v)", got, d["errors"])
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"distinctOn": []any{"nope"}}, "distinctOn[0]"},
		{map[string]any{"distinctOn": []any{"attributes"}}, "distinctOn[0]"},
		{map[string]any{"distinctOn": []any{"status", "price"}, "orderBy": "status"}, "distinctOn[1]"},
		{map[string]any{"distinctOn": []any{"status"}, "orderBy": "price"}, "distinctOn[0]"},
		{map[string]any{"distinctOn": "status"}, "distinctOn"},
	} {
		r := app.Do(t, "POST", "/api/v1/dynamic/Product/query", key, tc.body)
		if r.Status != 400 || (errorField(t, r) != tc.field && !strings.Contains(string(r.Body), tc.field)) {
			t.Errorf("%v: %d %s, want 400 naming %s", tc.body, r.Status, r.Body, tc.field)
		}
	}
	g := app.Do(t, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": `{ products(distinctOn: ["status"], orderBy: [{field: "price"}]) { name } }`})
	if !strings.Contains(string(g.Body), "VALIDATION_ERROR") || !strings.Contains(string(g.Body), "distinctOn[0]") {
		t.Errorf("GraphQL distinctOn not leading the order: %s", g.Body)
	}
}

// The cost budget through the server: a statement past the statement
// timeout answers 503 QUERY_TIMEOUT (Postgres cancels it), and a list or
// count whose plan Postgres estimates above the row budget answers 400
// QUERY_TOO_EXPENSIVE naming the budget, while a newest-first page, which
// reads only its rows from the index, runs.
func TestCostBudgetThroughRESTAndGraphQL(t *testing.T) {
	t.Parallel()
	app, tenantID, key, table := budgetedCatalog(t, 1500*time.Millisecond)
	q := url.Values{"orderBy": {"createdAt"}, "orderDirection": {"DESC"}, "limit": {"20"}}
	if got := app.Must(t, 200, "GET", "/api/v1/dynamic/Product?"+q.Encode(), key, nil).JSON(t)["items"].([]any); len(got) != 20 {
		t.Fatalf("newest-first page: %d items", len(got))
	}
	expensive := func(r *testenv.Response) {
		t.Helper()
		e, _ := r.JSON(t)["error"].(map[string]any)
		if r.Status != 400 || e["code"] != "QUERY_TOO_EXPENSIVE" || e["budget"] != float64(1000) || !strings.Contains(e["message"].(string), "1000") {
			t.Errorf("want 400 QUERY_TOO_EXPENSIVE naming the budget, got %d %s", r.Status, r.Body)
		}
	}
	// Sorting by an unindexed field reads every row; so does counting them.
	expensive(app.Do(t, "POST", "/api/v1/dynamic/Product/query", key, map[string]any{"orderBy": "price", "limit": 5}))
	expensive(app.Do(t, "POST", "/api/v1/dynamic/Product/query", key, map[string]any{"includeCount": true, "limit": 5}))
	g := app.Must(t, 200, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": `{ productsCount }`})
	if !strings.Contains(string(g.Body), "QUERY_TOO_EXPENSIVE") {
		t.Errorf("GraphQL count over the budget: %s", g.Body)
	}

	// A statement that cannot finish in time: the table is locked by
	// another transaction, so the read waits until its deadline.
	tx, err := testenv.DB(t).Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	tx.MustExec("LOCK TABLE " + table + " IN ACCESS EXCLUSIVE MODE")
	for _, r := range []*testenv.Response{
		app.Do(t, "GET", "/api/v1/dynamic/Product?"+q.Encode(), key, nil),
		app.Do(t, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "late"}),
	} {
		e, _ := r.JSON(t)["error"].(map[string]any)
		if r.Status != 503 || e["code"] != "QUERY_TIMEOUT" {
			t.Errorf("a statement past the timeout: %d %s", r.Status, r.Body)
		}
	}
	g = app.Must(t, 200, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": `{ products(limit: 1) { name } }`})
	if !strings.Contains(string(g.Body), "QUERY_TIMEOUT") {
		t.Errorf("GraphQL list past the timeout: %s", g.Body)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	// Nothing was written by the create that timed out.
	r := app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", key, map[string]any{"where": map[string]any{"name": "late"}}).JSON(t)
	if len(r["items"].([]any)) != 0 {
		t.Errorf("the timed-out create wrote: %v", r["items"])
	}
}

// Aggregates through REST: groups with their measures typed as their
// fields, buckets, having, order and limit; bad input is a 400 naming the
// path.
func TestAggregateThroughREST(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	app.Schema(t, key, catalog)
	for _, p := range []map[string]any{
		{"name": "a", "status": "live", "price": 10, "stock": 3, "releasedAt": "2025-03-01T10:00:00Z"},
		{"name": "b", "status": "live", "price": 30, "stock": 4, "releasedAt": "2025-03-01T23:00:00Z"},
		{"name": "c", "status": "draft", "price": 20, "stock": 1, "releasedAt": "2025-03-02T01:00:00Z"},
		{"name": "d", "status": "draft", "price": 5},
		{"name": "e"},
	} {
		app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, p)
	}
	agg := func(body string) *testenv.Response {
		return app.Do(t, "POST", "/api/v1/dynamic/Product/aggregate", key, body)
	}
	for _, tc := range []struct{ name, body, want string }{
		{"one group over everything", `{"aggregates": {"n": {"count": "*"}, "stock": {"sum": "stock"}, "avgPrice": {"avg": "price"}}}`,
			`{"groups":[{"avgPrice":16.25,"key":{},"n":5,"stock":8}]}`},
		{"per status, by count then key", `{"groupBy": ["status"], "aggregates": {"n": {"count": "*"}, "top": {"max": "price"}, "names": {"countDistinct": "name"}},
			"orderBy": [{"field": "n", "direction": "DESC"}, {"field": "status"}]}`,
			`{"groups":[{"key":{"status":"draft"},"n":2,"names":2,"top":20},{"key":{"status":"live"},"n":2,"names":2,"top":30},{"key":{"status":null},"n":1,"names":1,"top":null}]}`},
		{"having and limit", `{"where": {"price": {"$gte": 5}}, "groupBy": ["status"], "aggregates": {"n": {"count": "*"}, "total": {"sum": "price"}},
			"having": {"total": {"$gt": 30}}, "orderBy": "total", "orderDirection": "DESC", "limit": 1}`,
			`{"groups":[{"key":{"status":"live"},"n":2,"total":40}]}`},
		{"daily buckets", `{"where": {"releasedAt": {"$isNull": false}}, "groupBy": [{"field": "releasedAt", "bucket": "day"}], "aggregates": {"n": {"count": "releasedAt"}}}`,
			`{"groups":[{"key":{"releasedAt":"2025-03-01T00:00:00+00:00"},"n":2},{"key":{"releasedAt":"2025-03-02T00:00:00+00:00"},"n":1}]}`},
	} {
		r := agg(tc.body)
		if r.Status != 200 {
			t.Errorf("%s: %d %s", tc.name, r.Status, r.Body)
			continue
		}
		var got any
		r.Decode(t, &got)
		b, _ := json.Marshal(got)
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
	for _, tc := range []struct{ body, field string }{
		{`{"aggregates": {"s": {"sum": "nope"}}}`, "aggregates.s.sum"},
		{`{"aggregates": {"s": {"avg": "name"}}}`, "aggregates.s.avg"},
		{`{"aggregates": {"s": {"count": "attributes"}}}`, "aggregates.s.count"},
		{`{"aggregates": {"s": {"median": "price"}}}`, "aggregates.s.median"},
		{`{"aggregates": {"s": {"sum": "*"}}}`, "aggregates.s.sum"},
		{`{"aggregates": {"s": {"sum": "price", "max": "price"}}}`, "aggregates.s"},
		{`{"aggregates": {}}`, "aggregates"},
		{`{"groupBy": ["attributes"], "aggregates": {"n": {"count": "*"}}}`, "groupBy[0]"},
		{`{"groupBy": [{"field": "price", "bucket": "day"}], "aggregates": {"n": {"count": "*"}}}`, "groupBy[0].bucket"},
		{`{"groupBy": [{"field": "releasedAt", "bucket": "year"}], "aggregates": {"n": {"count": "*"}}}`, "groupBy[0].bucket"},
		{`{"groupBy": [7], "aggregates": {"n": {"count": "*"}}}`, "groupBy[0]"},
		{`{"aggregates": {"n": {"count": "*"}}, "having": {"m": {"$gt": 1}}}`, "having.m"},
		{`{"aggregates": {"n": {"count": "*"}}, "orderBy": "price"}`, "orderBy[0]"},
		{`{"aggregates": {"n": {"count": "*"}}, "where": {"nope": 1}}`, "where.nope"},
		{`{"aggregates": {"n": {"count": "*"}}, "limit": 5000}`, "limit"},
		{`{"aggregates": {"n": {"count": "*"}}, "extra": 1}`, "extra"},
	} {
		r := agg(tc.body)
		if r.Status != 400 || (errorField(t, r) != tc.field && !strings.Contains(string(r.Body), tc.field)) {
			t.Errorf("%s: %d %s, want 400 naming %s", tc.body, r.Status, r.Body, tc.field)
		}
	}
	// Scope: a key that may not read Product may not aggregate it either.
	if r := app.Do(t, "POST", "/api/v1/dynamic/Product/aggregate", "", `{"aggregates": {"n": {"count": "*"}}}`); r.Status != 401 {
		t.Errorf("no credential: %d %s", r.Status, r.Body)
	}
}

// Aggregates through GraphQL: totals and groups in the response's shape,
// typed as their fields; bad input is an error naming the argument.
func TestAggregateThroughGraphQL(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, catalog)
	for _, p := range []map[string]any{
		{"name": "a", "status": "live", "price": 10, "stock": 3}, {"name": "b", "status": "live", "price": 30, "stock": 4},
		{"name": "c", "status": "draft", "price": 20, "stock": 1}, {"name": "d"},
	} {
		app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, p)
	}
	gql := func(q string) string {
		return string(app.Must(t, 200, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": q}).Body)
	}
	got := gql(`{ productsAggregate(where: {price: {gte: 10}}, groupBy: ["status"]) {
	  __typename count total: sum { stock price } avg { price } max { price name }
	  groups(limit: 10) { key { status } count sum { stock } countDistinct { name } } } }`)
	want := `{"data":{"productsAggregate":{"__typename":"ProductAggregate","count":3,"total":{"stock":8,"price":60},"avg":{"price":20},"max":{"price":30,"name":"c"},` +
		`"groups":[{"key":{"status":"draft"},"count":1,"sum":{"stock":1},"countDistinct":{"name":1}},{"key":{"status":"live"},"count":2,"sum":{"stock":7},"countDistinct":{"name":2}}]}}}`
	if got != want {
		t.Errorf("aggregate:\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct{ q, want string }{
		{`{ productsAggregate(groupBy: ["nope"]) { groups { count } } }`, "groupBy[0]"},
		{`{ productsAggregate(groupBy: ["attributes"]) { groups { count } } }`, "groupBy[0]"},
		{`{ productsAggregate { groups { count } } }`, "groupBy"},
		{`{ productsAggregate(where: {nope: 1}) { count } }`, "nope"},
		{`{ productsAggregate { sum { name } } }`, "name"},
	} {
		if g := gql(tc.q); !strings.Contains(g, `"errors"`) || !strings.Contains(g, tc.want) {
			t.Errorf("%s: %s, want an error naming %s", tc.q, g, tc.want)
		}
	}
}

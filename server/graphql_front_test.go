package server_test

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

// TestGraphQLFrontEndThroughTheServer: what the GraphQL front end refuses
// (malformed bodies and parameters, wrong content types, whole-document
// validation, the document limits, variables of the wrong type) is a clear
// 4xx naming the problem through the server's own composition, as a client
// sends it — never a 500, never data.
func TestGraphQLFrontEndThroughTheServer(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.GraphQLMaxDepth = 5
	cfg.GraphQLMaxAliases = 10
	cfg.GraphQLMaxDocumentBytes = 4 << 10
	app := testenv.NewServer(t, cfg)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{
			map[string]any{"name": "name", "type": "STRING"},
			map[string]any{"name": "stock", "type": "INTEGER"},
		}},
	}, "relationships": []any{map[string]any{"name": "RELATED", "from": "Product", "to": "Product", "fromField": "related", "toField": "relatedBy"}}})
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "a", "stock": 1})
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "big", "stock": int64(5_000_000_000)})
	path := "/api/v1/dynamic-gql/" + tenantID
	body := func(query string, rest ...string) string {
		q, _ := json.Marshal(query)
		return `{"query":` + string(q) + strings.Join(rest, "") + `}`
	}
	deep := "{ products { " + strings.Repeat("related { ", 6) + "id" + strings.Repeat(" }", 6) + " } }"
	aliases := "{ "
	for i := 0; i < 11; i++ {
		aliases += fmt.Sprintf("a%d: productsCount ", i)
	}
	aliases += "}"
	const intVar = "query($n: Int!) { products(limit: $n) { id } }"
	cases := []struct {
		name, method, ct, body, query string // query: GET's query string
		status                        int
		code, msg                     string
	}{
		{name: "truncated body", ct: "application/json", body: `{"query":`, status: 400, code: "BAD_REQUEST", msg: "truncated"},
		{name: "body not an object", ct: "application/json", body: `[1]`, status: 400, code: "BAD_REQUEST", msg: "the request body must be an object"},
		{name: "unknown member", ct: "application/json", body: body("{ productsCount }", `,"bogus":1`), status: 400, code: "VALIDATION_ERROR", msg: "bogus"},
		{name: "trailing data", ct: "application/json", body: body("{ productsCount }") + `{}`, status: 400, code: "BAD_REQUEST", msg: "single JSON value"},
		{name: "query not a string", ct: "application/json", body: `{"query":1}`, status: 400, code: "BAD_REQUEST", msg: "query must be a string"},
		{name: "variables an array", ct: "application/json", body: body("{ productsCount }", `,"variables":[1]`), status: 400, code: "BAD_REQUEST", msg: "variables must be a JSON object"},
		{name: "text/plain", ct: "text/plain", body: body("{ productsCount }"), status: 415, code: "BAD_REQUEST", msg: "Content-Type must be application/json"},
		{name: "application/graphql", ct: "application/graphql", body: "{ productsCount }", status: 415, code: "BAD_REQUEST", msg: "Content-Type"},
		{name: "GET variables with trailing data", method: "GET", query: "query=" + url.QueryEscape("{ productsCount }") + "&variables=" + url.QueryEscape(`{}x`), status: 400, code: "BAD_REQUEST", msg: "variables must be a single JSON object"},
		{name: "GET extensions with trailing data", method: "GET", query: "query=" + url.QueryEscape("{ productsCount }") + "&extensions=" + url.QueryEscape(`{} {}`), status: 400, code: "BAD_REQUEST", msg: "extensions must be a single JSON object"},
		{name: "GET without query", method: "GET", query: "variables=%7B%7D", status: 400, code: "BAD_REQUEST", msg: "query parameter is required"},
		{name: "GET mutation", method: "GET", query: "query=" + url.QueryEscape(`mutation { createProduct(input: {name: "x"}) { id } }`), status: 405, code: "BAD_REQUEST", msg: "use POST"},
		{name: "parse error", ct: "application/json", body: body("{ products { "), status: 400, code: "GRAPHQL_PARSE_FAILED", msg: "unexpected"},
		{name: "invalid sibling operation", ct: "application/json", body: body("query A { productsCount }\nquery B { nope }", `,"operationName":"A"`), status: 400, code: "GRAPHQL_VALIDATION_FAILED", msg: "nope"},
		{name: "several operations unnamed", ct: "application/json", body: body("query A { productsCount }\nquery B { productsCount }"), status: 400, code: "BAD_REQUEST", msg: "operationName is required"},
		{name: "too deep", ct: "application/json", body: body(deep), status: 400, code: "BAD_REQUEST", msg: "levels deep"},
		{name: "too many aliases", ct: "application/json", body: body(aliases), status: 400, code: "BAD_REQUEST", msg: "alias"},
		{name: "document too large", ct: "application/json", body: body("{ productsCount " + strings.Repeat("# pad\n", 1000) + "}"), status: 400, code: "PAYLOAD_TOO_LARGE", msg: "exceeds 4096 bytes"},
		{name: "Int variable 1.5", ct: "application/json", body: body(intVar, `,"variables":{"n":1.5}`), status: 400, code: "BAD_REQUEST", msg: "Int cannot represent non-integer value: 1.5"},
		{name: "Int in an input object 1.5", ct: "application/json", body: body("query($w: ProductWhere) { products(where: $w) { id } }", `,"variables":{"w":{"stock":{"equals":1.5}}}`), status: 200, code: "VALIDATION_ERROR", msg: "where.stock: $eq must be an integer"}, // an execution error: data null
		{name: "Int variable a string", ct: "application/json", body: body(intVar, `,"variables":{"n":"x"}`), status: 400, code: "BAD_REQUEST", msg: "Int cannot represent"},
		{name: "Int variable beyond 64 bits", ct: "application/json", body: body(intVar, `,"variables":{"n":9223372036854775808}`), status: 400, code: "BAD_REQUEST", msg: "non 64-bit signed integer value"},
		{name: "limit beyond its bound", ct: "application/json", body: body(intVar, `,"variables":{"n":3000000000}`), status: 400, code: "BAD_REQUEST", msg: "lower limit/first/last"}, // a valid Int, refused by the limits
	}
	for _, c := range cases {
		var r *testenv.Response
		if c.method == "GET" {
			r = app.Do(t, "GET", path+"?"+c.query, key, nil, "Accept", "application/graphql-response+json")
		} else {
			r = app.Do(t, "POST", path, key, c.body, "Content-Type", c.ct, "Accept", "application/graphql-response+json")
		}
		var got struct {
			Data   any `json:"data"`
			Errors []struct {
				Message    string         `json:"message"`
				Extensions map[string]any `json:"extensions"`
			} `json:"errors"`
		}
		if err := json.Unmarshal(r.Body, &got); err != nil {
			t.Errorf("%s: %d, not a GraphQL response: %s", c.name, r.Status, r.Body)
			continue
		}
		if r.Status != c.status || got.Data != nil || len(got.Errors) == 0 || got.Errors[0].Extensions["code"] != c.code || !strings.Contains(got.Errors[0].Message, c.msg) {
			t.Errorf("%s: want %d %s %q, got %d %.400s", c.name, c.status, c.code, c.msg, r.Status, r.Body)
		}
	}
	// What the refusals surround still works: the same shapes, well formed.
	r := app.Do(t, "POST", path, key, body(intVar, `,"variables":{"n":1e1}`), "Content-Type", "application/json; charset=utf-8")
	if r.Status != 200 || !strings.Contains(string(r.Body), `"products":[{"id":`) {
		t.Errorf("a valid request: %d %s", r.Status, r.Body)
	}
	r = app.Do(t, "GET", path+"?query="+url.QueryEscape(intVar)+"&variables="+url.QueryEscape(`{"n":1}`), key, nil)
	if r.Status != 200 || !strings.Contains(string(r.Body), `"products":[{"id":`) {
		t.Errorf("a valid GET: %d %s", r.Status, r.Body)
	}
	// INTEGER fields are 64-bit: a variable carries a value beyond 32 bits.
	r = app.Do(t, "POST", path, key, body(`query($n: Int!) { products(where: {stock: {gte: $n}}) { name stock } }`, `,"variables":{"n":4000000000}`), "Content-Type", "application/json")
	if r.Status != 200 || !strings.Contains(string(r.Body), `{"name":"big","stock":5000000000}`) || strings.Contains(string(r.Body), `"errors"`) {
		t.Errorf("an INTEGER filter beyond 32 bits: %d %s", r.Status, r.Body)
	}
}

package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

// Every JSON request body goes through one strict decoder: an unknown
// member is a 400 naming it, data after the JSON value is a 400, a body that
// is not UTF-8 is a 400 saying so, and a body over DDS_MAX_BODY_BYTES is a
// 413 — on every endpoint alike, and none of them writes anything.
func TestEveryJSONBodyIsDecodedStrictly(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.MaxBodyBytes = 8 << 10
	app := testenv.NewServer(t, cfg)
	tenantID, key := app.Tenant(t)
	shop := map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "emb", "type": "VECTOR", "vectorDimensions": 2},
		}},
	}, "relationships": []any{map[string]any{"name": "RELATED", "from": "Product", "to": "Product"}}}
	schemaID := app.Schema(t, key, shop)["id"].(string)
	a := app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "a"}).JSON(t)["id"].(string)
	b := app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "b"}).JSON(t)["id"].(string)
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product/"+a+"/relationships/RELATED", key, map[string]any{"targetId": b})
	wh := app.Must(t, 201, "POST", "/api/v1/webhooks", key, map[string]any{"targetUrl": "https://example.com/hook", "eventTypes": []string{"entity.created"}}).JSON(t)["id"].(string)
	rel := "/api/v1/dynamic/Product/" + a + "/relationships/RELATED"

	cases := []struct {
		method, path, key string
		body              string // a valid object body, without its closing brace
	}{
		{"POST", "/api/v1/tenants", testenv.OperatorToken, `{"name":"t"`},
		{"POST", "/api/v1/api-keys", key, `{"name":"k","scopes":["entity:*:read"]`},
		{"POST", "/api/v1/auth/token", key, `{"scopes":["entity:*:read"]`},
		{"POST", "/api/v1/schemas", key, `{"name":"s","entities":[{"name":"X","fields":[{"name":"n","type":"STRING"}]}]`},
		{"PUT", "/api/v1/schemas/" + schemaID + "?dryRun=true", key, `{"name":"shop","entities":[{"name":"Product","fields":[{"name":"name","type":"STRING","required":true}]}]`},
		{"POST", "/api/v1/dynamic/Product", key, `{"name":"c"`},
		{"PUT", "/api/v1/dynamic/Product/" + a, key, `{"name":"c"`},
		{"PATCH", "/api/v1/dynamic/Product/" + a, key, `{"name":"c"`},
		{"POST", "/api/v1/dynamic/Product/query", key, `{"limit":1`},
		{"POST", "/api/v1/dynamic/Product/vector-search", key, `{"field":"emb","vector":[1,0]`},
		{"POST", "/api/v1/dynamic/Product/batch", key, `{"items":[{"name":"d"}]`},
		{"PATCH", "/api/v1/dynamic/Product/batch", key, `{"items":[{"id":"` + a + `","name":"e"}]`},
		{"DELETE", "/api/v1/dynamic/Product/batch", key, `{"ids":["` + b + `"]`},
		{"POST", rel, key, `{"targetId":"` + b + `"`},
		{"PATCH", rel + "/" + b, key, `{"properties":{}`},
		{"POST", "/api/v1/files/upload-url", key, `{"fileName":"a.txt","mimeType":"text/plain","sizeBytes":1`},
		{"POST", "/api/v1/webhooks", key, `{"targetUrl":"https://example.com/x","eventTypes":["entity.created"]`},
		{"PATCH", "/api/v1/webhooks/" + wh, key, `{"isActive":true`},
		{"POST", "/api/v1/dynamic-gql/" + tenantID, key, `{"query":"{ __typename }"`},
		{"POST", "/api/v1/jobs", key, `{"type":"delete","entity":"Product","where":{"name":"none"}`},
	}
	count := func() any {
		return app.Must(t, 200, "GET", "/api/v1/dynamic/Product?includeCount=true&limit=1", key, nil).JSON(t)["count"]
	}
	before := count()
	t.Cleanup(func() {
		if after := count(); after != before {
			t.Errorf("refused bodies changed the records: %v products before, %v after", before, after)
		}
	})
	for _, c := range cases {
		path := c.path
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			r := app.Do(t, c.method, path, c.key, c.body+`,"bogusMember":1}`)
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "bogusMember") {
				t.Errorf("unknown member: status %d %s, want 400 naming bogusMember", r.Status, r.Body)
			}
			r = app.Do(t, c.method, path, c.key, c.body+`} {}`)
			if r.Status != http.StatusBadRequest {
				t.Errorf("trailing data: status %d %s, want 400", r.Status, r.Body)
			}
			// JSON must be UTF-8: bytes ff fe inside a string are refused, not
			// stored as U+FFFD.
			r = app.Do(t, c.method, path, c.key, c.body+",\"name2\":\"a\xff\xfe\"}")
			if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "not valid UTF-8") {
				t.Errorf("body not UTF-8: status %d %s, want 400 saying so", r.Status, r.Body)
			}
			big := c.body + `,"pad":"` + strings.Repeat("x", 70<<10) + `"}`
			r = app.Do(t, c.method, path, c.key, big)
			if r.Status != http.StatusRequestEntityTooLarge {
				t.Errorf("oversized body: status %d %.200s, want 413", r.Status, r.Body)
			}
		})
	}
}

// GraphQL over GET: a parameter that is not UTF-8 is a 400, not a query run
// with U+FFFD in place of its bytes.
func TestGraphQLGetRefusesParametersThatAreNotUTF8(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	for _, q := range []string{"query=%7B__typename%7D%FF", "query=%7B__typename%7D&variables=%7B%22a%22%3A%22%FE%22%7D"} {
		r := app.Do(t, "GET", "/api/v1/dynamic-gql/"+tenantID+"?"+q, key, nil)
		if r.Status != http.StatusBadRequest || !strings.Contains(string(r.Body), "not valid UTF-8") {
			t.Errorf("GET ?%s: status %d %s, want 400 saying the parameter is not UTF-8", q, r.Status, r.Body)
		}
	}
}

package rest_test

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

var catalog = map[string]any{"name": "catalog", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true, "maxLength": 20},
		map[string]any{"name": "price", "type": "NUMBER"},
		map[string]any{"name": "stock", "type": "INTEGER", "default": 0},
		map[string]any{"name": "active", "type": "BOOLEAN"},
		map[string]any{"name": "tags", "type": "STRING", "list": true},
		map[string]any{"name": "releasedAt", "type": "TIMESTAMP"},
		map[string]any{"name": "day", "type": "DATE"},
		map[string]any{"name": "attributes", "type": "JSON"},
		map[string]any{"name": "status", "type": "ENUM", "values": []string{"draft", "live"}},
		map[string]any{"name": "sku", "type": "STRING", "unique": true},
		map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 3},
	}},
}}

func setup(t *testing.T) (*testenv.App, string) {
	t.Helper()
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	app.Schema(t, key, catalog)
	return app, key
}

func TestCreateValidation(t *testing.T) {
	app, key := setup(t)
	cases := []struct {
		name   string
		body   string
		status int
		field  string
	}{
		{"missing required", `{"price": 1}`, 400, "name"},
		{"null required", `{"name": null}`, 400, "name"},
		{"too long", `{"name": "` + strings.Repeat("x", 21) + `"}`, 400, "name"},
		{"string for number", `{"name": "a", "price": "1"}`, 400, "price"},
		{"fraction for integer", `{"name": "a", "stock": 1.5}`, 400, "stock"},
		{"integer overflow", `{"name": "a", "stock": 99999999999999999999}`, 400, "stock"},
		{"string for boolean", `{"name": "a", "active": "yes"}`, 400, "active"},
		{"scalar for list", `{"name": "a", "tags": "x"}`, 400, "tags"},
		{"number in string list", `{"name": "a", "tags": ["x", 1]}`, 400, "tags"},
		{"bad timestamp", `{"name": "a", "releasedAt": "yesterday"}`, 400, "releasedAt"},
		{"bad date", `{"name": "a", "day": "2024-13-01"}`, 400, "day"},
		{"enum value", `{"name": "a", "status": "archived"}`, 400, "status"},
		{"vector length", `{"name": "a", "embedding": [1, 2]}`, 400, "embedding"},
		{"vector element", `{"name": "a", "embedding": [1, "x", 3]}`, 400, "embedding"},
		{"unknown field", `{"name": "a", "colour": "red"}`, 400, "colour"},
		{"sql as field name", `{"name": "a", "x\"; DROP TABLE \"Product\"; --": 1}`, 400, "x\\\"; DROP TABLE \\\"Product\\\"; --"},
		{"NUL in string", `{"name": "a\u0000b"}`, 400, "name"},
		{"NUL in json", `{"name": "a", "attributes": {"k": "\u0000"}}`, 400, "attributes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := app.Do(t, "POST", "/api/v1/dynamic/Product", key, c.body)
			if r.Status != c.status || !strings.Contains(string(r.Body), `"field":"`+c.field+`"`) {
				t.Fatalf("status %d, want %d naming %q: %s", r.Status, c.status, c.field, r.Body)
			}
		})
	}
	if n := app.Must(t, 200, "GET", "/api/v1/dynamic/Product?includeCount=true", key, nil).JSON(t)["count"].(float64); n != 0 {
		t.Fatalf("rejected writes left %v records", n)
	}
}

func TestBodyErrors(t *testing.T) {
	app, key := setup(t)
	cases := []struct {
		name, method, path, body string
		headers                  []string
		status                   int
		code                     string
	}{
		{"empty body", "POST", "/api/v1/dynamic/Product", "", nil, 400, "BAD_REQUEST"},
		{"malformed JSON", "POST", "/api/v1/dynamic/Product", `{"name":`, nil, 400, "BAD_REQUEST"},
		{"array body", "POST", "/api/v1/dynamic/Product", `[{"name": "a"}]`, nil, 400, "BAD_REQUEST"},
		{"two values", "POST", "/api/v1/dynamic/Product", `{"name": "a"} {}`, nil, 400, "BAD_REQUEST"},
		{"huge body", "POST", "/api/v1/dynamic/Product", `{"name": "` + strings.Repeat("x", 17<<20) + `"}`, nil, 413, "PAYLOAD_TOO_LARGE"},
		{"lower-case entity", "GET", "/api/v1/dynamic/product", "", nil, 404, "NOT_FOUND"},
		{"plural entity", "GET", "/api/v1/dynamic/Products", "", nil, 404, "NOT_FOUND"},
		{"malformed id", "GET", "/api/v1/dynamic/Product/not-a-uuid", "", nil, 404, "NOT_FOUND"},
		{"unknown id", "GET", "/api/v1/dynamic/Product/01a200ae-0000-7000-8000-000000000000", "", nil, 404, "NOT_FOUND"},
		{"DELETE with JSON content type and no body", "DELETE", "/api/v1/dynamic/Product/01a200ae-0000-7000-8000-000000000000", "", []string{"Content-Type", "application/json"}, 400, "BAD_REQUEST"},
		{"limit too large", "GET", "/api/v1/dynamic/Product?limit=1001", "", nil, 400, "VALIDATION_ERROR"},
		{"limit not a number", "GET", "/api/v1/dynamic/Product?limit=ten", "", nil, 400, "VALIDATION_ERROR"},
		{"negative offset", "GET", "/api/v1/dynamic/Product?offset=-1", "", nil, 400, "VALIDATION_ERROR"},
		{"order by unknown field", "GET", "/api/v1/dynamic/Product?orderBy=nope", "", nil, 400, "VALIDATION_ERROR"},
		{"order by sql", "GET", "/api/v1/dynamic/Product?orderBy=name%3BDROP", "", nil, 400, "VALIDATION_ERROR"},
		{"bad direction", "GET", "/api/v1/dynamic/Product?orderBy=name&orderDirection=SIDEWAYS", "", nil, 400, "VALIDATION_ERROR"},
		{"unknown route", "GET", "/api/v1/nothing", "", nil, 404, "NOT_FOUND"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" {
				body = c.body
			}
			r := app.Do(t, c.method, c.path, key, body, c.headers...)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, c.status, r.Body)
			}
			if got := r.JSON(t)["error"].(map[string]any)["code"]; got != c.code {
				t.Fatalf("code %v, want %s", got, c.code)
			}
			if r.Header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
		})
	}
}

func TestCRUD(t *testing.T) {
	app, key := setup(t)
	full := map[string]any{"name": "Lamp", "price": 19.5, "active": true, "tags": []string{"home", "light"},
		"releasedAt": "2024-05-01T10:00:00+02:00", "day": "2024-05-01", "attributes": map[string]any{"watts": 40},
		"status": "live", "sku": "L-1", "embedding": []float64{0.1, 0.2, 0.3}}
	c := app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, full).JSON(t)
	id := c["id"].(string)
	if c["createdAt"] == nil || c["updatedAt"] == nil || c["stock"].(float64) != 0 {
		t.Fatalf("create must return system fields and defaults: %v", c)
	}
	if !strings.HasPrefix(c["releasedAt"].(string), "2024-05-01T08:00:00") {
		t.Errorf("timestamps are stored as instants and returned in UTC: %v", c["releasedAt"])
	}
	if v := c["embedding"].([]any); len(v) != 3 {
		t.Errorf("vector not returned as an array: %v", c["embedding"])
	}
	got := app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+id, key, nil).JSON(t)
	if fmt.Sprint(got) != fmt.Sprint(c) {
		t.Errorf("GET differs from the create response:\n%v\n%v", got, c)
	}
	sel := app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+id+"?select=name,price", key, nil).JSON(t)
	if len(sel) != 3 || sel["name"] != "Lamp" || sel["id"] != id {
		t.Errorf("select=name,price must return id, name, price: %v", sel)
	}

	// PATCH merges.
	p := app.Must(t, 200, "PATCH", "/api/v1/dynamic/Product/"+id, key, map[string]any{"price": 21}).JSON(t)
	if p["price"].(float64) != 21 || p["name"] != "Lamp" || p["sku"] != "L-1" || p["updatedAt"] == c["updatedAt"] {
		t.Errorf("PATCH must merge and bump updatedAt: %v", p)
	}
	app.Must(t, 400, "PATCH", "/api/v1/dynamic/Product/"+id, key, map[string]any{"name": nil})

	// PUT replaces: absent fields become null, or their default.
	r := app.Must(t, 200, "PUT", "/api/v1/dynamic/Product/"+id, key, map[string]any{"name": "Lamp 2", "stock": 3}).JSON(t)
	if r["price"] != nil || r["sku"] != nil || r["stock"].(float64) != 3 || r["name"] != "Lamp 2" || r["createdAt"] != c["createdAt"] {
		t.Errorf("PUT must replace all fields: %v", r)
	}
	app.Must(t, 400, "PUT", "/api/v1/dynamic/Product/"+id, key, map[string]any{"price": 1})

	// unique → 409 naming the field
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "A", "sku": "U-1"})
	dup := app.Must(t, 409, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "B", "sku": "U-1"})
	if !strings.Contains(string(dup.Body), `"field":"sku"`) {
		t.Errorf("409 must name the field: %s", dup.Body)
	}

	app.Must(t, 204, "DELETE", "/api/v1/dynamic/Product/"+id, key, nil)
	app.Must(t, 404, "GET", "/api/v1/dynamic/Product/"+id, key, nil)
	app.Must(t, 404, "DELETE", "/api/v1/dynamic/Product/"+id, key, nil)

	// Every write left exactly its event in the outbox.
	var types []string
	if err := testenv.DB(t).Select(&types, `SELECT type FROM dds.events WHERE entity_id = $1 ORDER BY seq`, id); err != nil {
		t.Fatal(err)
	}
	want := "entity.created entity.updated entity.updated entity.deleted"
	if strings.Join(types, " ") != want {
		t.Errorf("outbox events %v, want %s", types, want)
	}
	var deleted map[string]any
	var rec []byte
	if err := testenv.DB(t).Get(&rec, `SELECT record FROM dds.events WHERE entity_id = $1 AND type = 'entity.deleted'`, id); err != nil {
		t.Fatalf("entity.deleted event: %v", err)
	}
	if err := jsonUnmarshal(rec, &deleted); err != nil || deleted["name"] != "Lamp 2" {
		t.Errorf("entity.deleted must carry the deleted record: %s", rec)
	}
}

func TestListPaging(t *testing.T) {
	app, key := setup(t)
	for i := range 7 {
		app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": fmt.Sprintf("p%d", i), "price": 10 - i})
	}
	l := app.Must(t, 200, "GET", "/api/v1/dynamic/Product?limit=3&offset=2&includeCount=true&orderBy=price&orderDirection=DESC", key, nil).JSON(t)
	items := l["items"].([]any)
	if l["count"].(float64) != 7 || len(items) != 3 || items[0].(map[string]any)["name"] != "p2" {
		t.Fatalf("page 2 by price desc: %v", l)
	}
	w := url.QueryEscape(`{"price": {"$lte": 6}, "name": {"$startsWith": "p"}}`)
	f := app.Must(t, 200, "GET", "/api/v1/dynamic/Product?includeCount=true&orderBy=price&where="+w, key, nil).JSON(t)
	if f["count"].(float64) != 3 || f["items"].([]any)[0].(map[string]any)["name"] != "p6" {
		t.Fatalf("GET list with where: %v", f)
	}
	app.Must(t, 400, "GET", "/api/v1/dynamic/Product?where="+url.QueryEscape(`{"price": {"$like": 1}}`), key, nil)
	app.Must(t, 400, "GET", "/api/v1/dynamic/Product?where=notjson", key, nil)
	if _, has := app.Must(t, 200, "GET", "/api/v1/dynamic/Product", key, nil).JSON(t)["count"]; has {
		t.Error("count must only be present with includeCount=true")
	}
	def := app.Must(t, 200, "GET", "/api/v1/dynamic/Product", key, nil).JSON(t)["items"].([]any)
	if len(def) != 7 || def[0].(map[string]any)["name"] != "p0" {
		t.Errorf("default order is creation order: %v", def)
	}
}

func TestTenantRateLimit(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.RateTenant = 3
	app := testenv.NewServer(t, cfg)
	_, key := app.Tenant(t)
	for i := range 3 {
		r := app.Must(t, 200, "GET", "/api/v1/api-keys", key, nil)
		if r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(2-i) || r.Header.Get("X-RateLimit-Reset") == "" {
			t.Fatalf("request %d: headers %v", i, r.Header)
		}
	}
	r := app.Must(t, http.StatusTooManyRequests, "GET", "/api/v1/api-keys", key, nil)
	if r.JSON(t)["error"].(map[string]any)["code"] != "RATE_LIMITED" || r.Header.Get("Retry-After") == "" {
		t.Fatalf("429 body or headers wrong: %v %s", r.Header, r.Body)
	}
	_, other := app.Tenant(t)
	app.Must(t, 200, "GET", "/api/v1/api-keys", other, nil) // another tenant has its own budget
}

func TestIPRateLimits(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.RateGlobal, cfg.RateAuth = 5, 2
	app := testenv.NewServer(t, cfg)
	_, key := app.Tenant(t)
	app.Must(t, 201, "POST", "/api/v1/auth/token", key, nil)
	app.Must(t, 201, "POST", "/api/v1/auth/token", key, nil)
	app.Must(t, 429, "POST", "/api/v1/auth/token", key, nil) // auth layer: 2 per minute
	app.Must(t, 200, "GET", "/api/v1/api-keys", key, nil)
	app.Must(t, 200, "GET", "/api/v1/api-keys", key, nil)
	app.Must(t, 429, "GET", "/api/v1/api-keys", key, nil) // global layer: 5 per minute per IP
}

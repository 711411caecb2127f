package admin_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/internal/testenv"
)

var shop = map[string]any{"name": "shop", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER"},
	}},
	map[string]any{"name": "Order", "fields": []any{map[string]any{"name": "total", "type": "NUMBER"}}},
}}

func TestTenantCreationNeedsOperatorToken(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	app.Must(t, 401, "POST", "/api/v1/tenants", "", map[string]any{"name": "x"})
	app.Must(t, 401, "POST", "/api/v1/tenants", "wrong-token", map[string]any{"name": "x"})
	app.Must(t, 400, "POST", "/api/v1/tenants", testenv.OperatorToken, map[string]any{"name": ""})
	r := app.Must(t, 201, "POST", "/api/v1/tenants", testenv.OperatorToken, map[string]any{"name": "acme"}).JSON(t)
	key := r["apiKey"].(string)
	if !strings.HasPrefix(key, "dds_test_") || r["tenantId"] == "" {
		t.Fatalf("unexpected tenant response %v", r)
	}
	keys := app.Must(t, 200, "GET", "/api/v1/api-keys", key, nil).JSON(t)["keys"].([]any)
	if len(keys) != 1 || keys[0].(map[string]any)["scopes"].([]any)[0] != "*:*:*" {
		t.Fatalf("the first key must be an admin key: %v", keys)
	}
}

func TestAPIKeyLifecycle(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, admin := app.Tenant(t)
	app.Schema(t, admin, shop)

	created := app.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "reader", "scopes": []string{"entity:Product:read"}}).JSON(t)
	key := created["key"].(string)
	id := created["id"].(string)
	for _, f := range []string{"id", "name", "key", "scopes", "createdAt"} {
		if created[f] == nil {
			t.Errorf("create response lacks %s: %v", f, created)
		}
	}
	list := app.Must(t, 200, "GET", "/api/v1/api-keys", admin, nil)
	if strings.Contains(string(list.Body), key) || strings.Contains(string(list.Body), `"key"`) {
		t.Fatalf("the list must never show a key: %s", list.Body)
	}
	app.Must(t, 200, "GET", "/api/v1/dynamic/Product", key, nil)
	app.Must(t, 403, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "x"})
	app.Must(t, 403, "GET", "/api/v1/dynamic/Order", key, nil)
	app.Must(t, 403, "GET", "/api/v1/api-keys", key, nil)

	// lastUsed is flushed in batches, not written per request.
	if err := app.Server.FlushAuth(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, k := range app.Must(t, 200, "GET", "/api/v1/api-keys", admin, nil).JSON(t)["keys"].([]any) {
		if m := k.(map[string]any); m["id"] == id && m["lastUsed"] == nil {
			t.Errorf("lastUsed not recorded: %v", m)
		}
	}

	app.Must(t, 204, "DELETE", "/api/v1/api-keys/"+id, admin, nil)
	r := app.Must(t, 401, "GET", "/api/v1/dynamic/Product", key, nil)
	if r.JSON(t)["error"].(map[string]any)["code"] != "UNAUTHORIZED" {
		t.Errorf("revoked key: %s", r.Body)
	}
	app.Must(t, 404, "DELETE", "/api/v1/api-keys/"+id, admin, nil)
}

func TestUnauthenticated(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, admin := app.Tenant(t)
	liveKey, _, _ := auth.NewKey("live")
	testKey, _, _ := auth.NewKey("test")
	cases := []struct{ name, header string }{
		{"missing", ""},
		{"not bearer", "Basic abc"},
		{"garbage", "Bearer nonsense"},
		{"unknown key", "Bearer " + testKey},
		{"other environment", "Bearer " + liveKey},
		{"tampered key", "Bearer " + admin[:len(admin)-1] + "x"},
		{"bad jwt", "Bearer eyJhbGciOiJIUzI1NiJ9.e30.x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := app.Do(t, "GET", "/api/v1/api-keys", "", nil, "Authorization", c.header)
			if r.Status != 401 || r.Header.Get("X-Request-Id") == "" {
				t.Fatalf("status %d (want 401), request id %q: %s", r.Status, r.Header.Get("X-Request-Id"), r.Body)
			}
		})
	}
	if r := app.Do(t, "GET", "/api/v1/api-keys", "", nil, "Authorization", "Bearer "+liveKey); !strings.Contains(string(r.Body), "environment") {
		t.Errorf("a wrong-environment key should say so: %s", r.Body)
	}
}

func TestKeysCannotEscalate(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, admin := app.Tenant(t)
	manager := app.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "m", "scopes": []string{"apikey:*:create", "entity:Product:read"}}).JSON(t)["key"].(string)
	app.Must(t, 403, "POST", "/api/v1/api-keys", manager, map[string]any{"name": "root", "scopes": []string{"*:*:*"}})
	app.Must(t, 201, "POST", "/api/v1/api-keys", manager, map[string]any{"name": "ok", "scopes": []string{"entity:Product:read"}})
	r := app.Must(t, 400, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "bad", "scopes": []string{"entity:Product:read", "entity:Product:drop"}})
	if !strings.Contains(string(r.Body), `"field":"scopes[1]"`) {
		t.Errorf("the bad scope must be named: %s", r.Body)
	}
	app.Must(t, 400, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "none", "scopes": []string{}})
	app.Must(t, 400, "POST", "/api/v1/api-keys", admin, map[string]any{"scopes": []string{"*:*:*"}})
}

func TestAccessTokens(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, admin := app.Tenant(t)
	app.Schema(t, admin, shop)
	tok := app.Must(t, 201, "POST", "/api/v1/auth/token", admin, map[string]any{"scopes": []string{"entity:Product:read"}, "expiresIn": 60}).JSON(t)
	jwt := tok["accessToken"].(string)
	app.Must(t, 200, "GET", "/api/v1/dynamic/Product", jwt, nil)
	app.Must(t, 403, "POST", "/api/v1/dynamic/Product", jwt, map[string]any{"name": "x"})
	app.Must(t, 400, "POST", "/api/v1/auth/token", admin, map[string]any{"expiresIn": 999999})

	reader := app.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "r", "scopes": []string{"entity:Product:read"}}).JSON(t)
	app.Must(t, 400, "POST", "/api/v1/auth/token", reader["key"].(string), map[string]any{"scopes": []string{"entity:Product:create"}})
	readerJWT := app.Must(t, 201, "POST", "/api/v1/auth/token", reader["key"].(string), nil).JSON(t)["accessToken"].(string)
	app.Must(t, 200, "GET", "/api/v1/dynamic/Product", readerJWT, nil)
	app.Must(t, 204, "DELETE", "/api/v1/api-keys/"+reader["id"].(string), admin, nil)
	app.Must(t, 401, "GET", "/api/v1/dynamic/Product", readerJWT, nil) // revoking a key revokes its tokens
}

func TestWhoami(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, admin := app.Tenant(t)
	app.Must(t, 401, "GET", "/api/v1/auth/whoami", "", nil)
	me := app.Must(t, 200, "GET", "/api/v1/auth/whoami", admin, nil).JSON(t)
	if me["tenantId"] != tenantID || me["credential"] != "apiKey" || fmt.Sprint(me["scopes"]) != "[*:*:*]" || me["keyId"] == "" {
		t.Fatalf("admin key: %v", me)
	}
	narrow := app.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "n", "scopes": []string{"entity:Product:read", "file:*:read"}}).JSON(t)
	me = app.Must(t, 200, "GET", "/api/v1/auth/whoami", narrow["key"].(string), nil).JSON(t)
	if me["keyId"] != narrow["id"] || fmt.Sprint(me["scopes"]) != "[entity:Product:read file:*:read]" {
		t.Fatalf("narrow key: %v", me)
	}
	tok := app.Must(t, 201, "POST", "/api/v1/auth/token", narrow["key"].(string), map[string]any{"scopes": []string{"file:*:read"}}).JSON(t)
	me = app.Must(t, 200, "GET", "/api/v1/auth/whoami", tok["accessToken"].(string), nil).JSON(t)
	if me["credential"] != "accessToken" || me["keyId"] != narrow["id"] || fmt.Sprint(me["scopes"]) != "[file:*:read]" {
		t.Fatalf("token: %v", me)
	}
}

// TestRevocationReachesEveryReplica revokes a key on one server and expects
// a second server, which had the key cached, to refuse it.
func TestRevocationReachesEveryReplica(t *testing.T) {
	t.Parallel()
	a := testenv.Server(t)
	b := testenv.NewServer(t, testenv.Config(t))
	_, admin := a.Tenant(t)
	k := a.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "k", "scopes": []string{"apikey:*:read"}}).JSON(t)
	b.Must(t, 200, "GET", "/api/v1/api-keys", k["key"].(string), nil) // now cached on b
	a.Must(t, 204, "DELETE", "/api/v1/api-keys/"+k["id"].(string), admin, nil)
	deadline := time.Now().Add(5 * time.Second)
	for {
		r := b.Do(t, "GET", "/api/v1/api-keys", k["key"].(string), nil)
		if r.Status == http.StatusUnauthorized {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("replica b still accepts the revoked key: %d", r.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCrossTenantIsolation(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, keyA := app.Tenant(t)
	_, keyB := app.Tenant(t)
	sA := app.Schema(t, keyA, shop)
	app.Schema(t, keyB, shop)
	rec := app.Must(t, 201, "POST", "/api/v1/dynamic/Product", keyA, map[string]any{"name": "secret"}).JSON(t)
	id := rec["id"].(string)
	app.Must(t, 404, "GET", "/api/v1/dynamic/Product/"+id, keyB, nil)
	app.Must(t, 404, "PATCH", "/api/v1/dynamic/Product/"+id, keyB, map[string]any{"name": "stolen"})
	app.Must(t, 404, "DELETE", "/api/v1/dynamic/Product/"+id, keyB, nil)
	if list := app.Must(t, 200, "GET", "/api/v1/dynamic/Product?includeCount=true", keyB, nil).JSON(t); list["count"].(float64) != 0 {
		t.Fatalf("tenant B sees A's records: %v", list)
	}
	app.Must(t, 404, "GET", "/api/v1/schemas/"+sA["id"].(string), keyB, nil)
	app.Must(t, 404, "PUT", "/api/v1/schemas/"+sA["id"].(string), keyB, shop)
	app.Must(t, 404, "POST", "/api/v1/schemas/"+sA["id"].(string)+"/activate", keyB, nil)
	keysA := app.Must(t, 200, "GET", "/api/v1/api-keys", keyA, nil).JSON(t)["keys"].([]any)
	app.Must(t, 404, "DELETE", "/api/v1/api-keys/"+keysA[0].(map[string]any)["id"].(string), keyB, nil)
	if got := app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+id, keyA, nil).JSON(t)["name"]; got != "secret" {
		t.Fatalf("A's record changed: %v", got)
	}
}

func TestSchemaLifecycle(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	app.Must(t, 404, "GET", "/api/v1/dynamic/Product", key, nil) // no active schema yet

	s := app.Schema(t, key, shop)
	id := s["id"].(string)
	if s["active"] != true || s["version"].(float64) != 1 {
		t.Fatalf("the first schema must be active at version 1: %v", s)
	}
	rec := app.Must(t, 201, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "kept", "price": 5}).JSON(t)

	// Additive change: online, data kept.
	v2 := map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "stock", "type": "INTEGER", "required": true, "default": 7},
		}},
		map[string]any{"name": "Order", "fields": []any{map[string]any{"name": "total", "type": "NUMBER"}}},
	}}
	up := app.Must(t, 200, "PUT", "/api/v1/schemas/"+id, key, v2).JSON(t)
	if up["version"].(float64) != 2 {
		t.Fatalf("version not bumped: %v", up)
	}
	got := app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+rec["id"].(string), key, nil).JSON(t)
	if got["name"] != "kept" || got["stock"].(float64) != 7 {
		t.Fatalf("additive change lost data or default: %v", got)
	}

	// Destructive change: refused with the plan, then applied on request.
	v3 := map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "stock", "type": "INTEGER", "required": true, "default": 7},
		}},
	}}
	refused := app.Must(t, 409, "PUT", "/api/v1/schemas/"+id, key, v3).JSON(t)
	plan := refused["error"].(map[string]any)["plan"].(map[string]any)["steps"].([]any)
	destructive := 0
	for _, st := range plan {
		if st.(map[string]any)["destructive"] == true {
			destructive++
		}
	}
	if destructive != 2 {
		t.Fatalf("want 2 destructive steps (drop Order, drop price): %v", plan)
	}
	if app.Must(t, 200, "GET", "/api/v1/schemas/"+id, key, nil).JSON(t)["version"].(float64) != 2 {
		t.Fatal("a refused change must not bump the version")
	}
	app.Must(t, 200, "GET", "/api/v1/dynamic/Order", key, nil)
	app.Must(t, 200, "PUT", "/api/v1/schemas/"+id+"?allowDataLoss=true", key, v3)
	app.Must(t, 404, "GET", "/api/v1/dynamic/Order", key, nil)
	if _, has := app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+rec["id"].(string), key, nil).JSON(t)["price"]; has {
		t.Fatal("dropped field still returned")
	}

	// A second schema is inactive until activated; activation switches the dynamic API.
	other := app.Schema(t, key, map[string]any{"name": "blog", "entities": []any{map[string]any{"name": "Post", "fields": []any{map[string]any{"name": "title", "type": "STRING"}}}}})
	if other["active"] != false {
		t.Fatal("a second schema must not become active by itself")
	}
	app.Must(t, 404, "GET", "/api/v1/dynamic/Post", key, nil)
	app.Must(t, 200, "POST", "/api/v1/schemas/"+other["id"].(string)+"/activate", key, nil)
	app.Must(t, 200, "GET", "/api/v1/dynamic/Post", key, nil)
	app.Must(t, 404, "GET", "/api/v1/dynamic/Product", key, nil)
	list := app.Must(t, 200, "GET", "/api/v1/schemas", key, nil).JSON(t)["schemas"].([]any)
	if len(list) != 2 {
		t.Fatalf("want 2 schemas, got %d", len(list))
	}
	app.Must(t, 400, "POST", "/api/v1/schemas", key, map[string]any{"name": "blog", "entities": []any{map[string]any{"name": "Post", "fields": []any{}}}})
}

func TestSchemaValidationErrors(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	cases := []struct {
		name  string
		body  string
		field string
	}{
		{"reserved field", `{"name":"s","entities":[{"name":"A","fields":[{"name":"id","type":"STRING"}]}]}`, "entities[0].fields[0].name"},
		{"sql in name", `{"name":"s","entities":[{"name":"A\"; DROP SCHEMA dds CASCADE; --","fields":[]}]}`, "entities[0].name"},
		{"bad type", `{"name":"s","entities":[{"name":"A","fields":[{"name":"x","type":"FLOAT"}]}]}`, "entities[0].fields[0].type"},
		{"vector dims", `{"name":"s","entities":[{"name":"A","fields":[{"name":"v","type":"VECTOR","vectorDimensions":0}]}]}`, "entities[0].fields[0].vectorDimensions"},
		{"wrong json type", `{"name":"s","entities":"A"}`, "entities"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := app.Must(t, 400, "POST", "/api/v1/schemas", key, c.body)
			if !strings.Contains(string(r.Body), `"field":"`+c.field+`"`) {
				t.Fatalf("error must name %s: %s", c.field, r.Body)
			}
		})
	}
	app.Must(t, 400, "POST", "/api/v1/schemas", key, `{"name":`)
	app.Must(t, 403, "POST", "/api/v1/schemas", app.Must(t, 201, "POST", "/api/v1/api-keys", key, map[string]any{"name": "r", "scopes": []string{"schema:*:read"}}).JSON(t)["key"].(string), shop)
}

func TestMetricsByRoutePattern(t *testing.T) {
	t.Parallel()
	app := testenv.NewServer(t, testenv.Config(t))
	_, key := app.Tenant(t)
	app.Must(t, 200, "GET", "/api/v1/api-keys", key, nil)
	app.Must(t, 200, "GET", "/api/v1/api-keys", key, nil) // a series seen before counts on
	app.Must(t, 404, "GET", "/api/v1/schemas/01a200ae-0000-7000-8000-000000000000", key, nil)
	body := string(app.Must(t, 200, "GET", "/metrics", "", nil).Body)
	for _, want := range []string{
		`dds_http_requests_total{route="GET /api/v1/api-keys",status="200"} 2`,
		`dds_http_requests_total{route="GET /api/v1/schemas/{id}",status="404"} 1`,
		`dds_http_request_duration_seconds_bucket{route="GET /api/v1/api-keys"`,
		`go_goroutines`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "01a200ae-0000") {
		t.Error("metrics must be labelled by route pattern, never by raw path")
	}
}

func TestConcurrentFirstSchemas(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	for round := range 5 {
		_, key := app.Tenant(t)
		statuses := make(chan int, 2)
		for i := range 2 {
			go func() {
				def := map[string]any{"name": fmt.Sprintf("s%d_%d", round, i), "entities": []any{map[string]any{"name": "A", "fields": []any{map[string]any{"name": "x", "type": "STRING"}}}}}
				statuses <- app.Do(t, "POST", "/api/v1/schemas", key, def).Status
			}()
		}
		for range 2 {
			if s := <-statuses; s != 201 && s != 409 {
				t.Fatalf("concurrent first schemas: status %d, want 201 or 409 (retry)", s)
			}
		}
		active := 0
		for _, s := range app.Must(t, 200, "GET", "/api/v1/schemas", key, nil).JSON(t)["schemas"].([]any) {
			if s.(map[string]any)["active"] == true {
				active++
			}
		}
		if active != 1 {
			t.Fatalf("round %d: %d active schemas, want exactly 1", round, active)
		}
	}
}

// A dry run is a preview: a destructive plan is shown with 200 (its steps
// marked destructive) and nothing changes; only applying it needs
// allowDataLoss.
func TestDryRunPreviewsDestructivePlan(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	id := app.Schema(t, key, shop)["id"].(string)
	drop := map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{map[string]any{"name": "name", "type": "STRING", "required": true}}},
	}}
	r := app.Must(t, 200, "PUT", "/api/v1/schemas/"+id+"?dryRun=true", key, drop).JSON(t)
	if r["version"].(float64) != 1 {
		t.Errorf("a dry run changed the version: %v", r["version"])
	}
	steps, _ := r["plan"].(map[string]any)["steps"].([]any)
	destructive := 0
	for _, s := range steps {
		if s.(map[string]any)["destructive"] == true {
			destructive++
		}
	}
	if destructive == 0 {
		t.Fatalf("the preview does not mark the destructive steps: %v", r["plan"])
	}
	app.Must(t, 201, "POST", "/api/v1/dynamic/Order", key, map[string]any{"total": 1}) // Order still exists
	app.Must(t, 409, "PUT", "/api/v1/schemas/"+id, key, drop)
}

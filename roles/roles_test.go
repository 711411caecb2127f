package roles_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

func TestMain(m *testing.M) { teststack.Main(m) }

// A todo app: users own todos and may be shared on them.
var todoSchema = map[string]any{
	"name": "todos",
	"entities": []any{
		map[string]any{"name": "User", "fields": []any{map[string]any{"name": "email", "type": "STRING"}}},
		map[string]any{"name": "Todo", "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "required": true},
			map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
			map[string]any{"name": "done", "type": "BOOLEAN"},
			map[string]any{"name": "priority", "type": "INTEGER"},
			map[string]any{"name": "org", "type": "STRING"},
		}},
	},
	"relationships": []any{map[string]any{"name": "sharedWith", "from": "Todo", "to": "User", "fromField": "sharedWith", "toField": "sharedTodos"}},
}

func member() map[string]any {
	return map[string]any{
		"scopes": []any{"entity:Todo:*", "entity:User:read"},
		"rules": map[string]any{"Todo": map[string]any{
			"read": map[string]any{"$or": []any{
				map[string]any{"ownerId": "$user.id"},
				map[string]any{"sharedWith_some": map[string]any{"id": map[string]any{"$eq": "$user.claims.userRecord"}}},
			}},
			"create": map[string]any{"check": map[string]any{"ownerId": "$user.id"}, "preset": map[string]any{"ownerId": "$user.id", "done": false}},
			"update": map[string]any{"where": map[string]any{"ownerId": "$user.id"}, "check": map[string]any{"ownerId": "$user.id"}},
			"delete": map[string]any{"ownerId": "$user.id", "org": map[string]any{"$in": "$user.roles"}},
		}},
		"fields": map[string]any{"Todo": map[string]any{"read": []any{"id", "title", "done", "ownerId"}, "write": []any{"title", "done"}}},
	}
}

func TestRolesAPI(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	// Scopes-only roles need no schema; rules do.
	app.Must(t, http.StatusCreated, "PUT", "/api/v1/roles/reader", key, map[string]any{"scopes": []any{"entity:*:read"}})
	r := app.Do(t, "PUT", "/api/v1/roles/member", key, member())
	if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"rules"`) {
		t.Fatalf("rules without a schema: %d %s", r.Status, r.Body)
	}
	app.Schema(t, key, todoSchema)
	got := app.Must(t, http.StatusCreated, "PUT", "/api/v1/roles/member", key, member()).JSON(t)
	if got["name"] != "member" || got["version"] != float64(1) {
		t.Fatalf("created %v", got)
	}
	got = app.Must(t, http.StatusOK, "PUT", "/api/v1/roles/member", key, member()).JSON(t)
	if got["version"] != float64(2) {
		t.Fatalf("replaced %v", got)
	}
	got = app.Must(t, http.StatusOK, "GET", "/api/v1/roles/member", key, nil).JSON(t)
	read, _ := json.Marshal(got["rules"].(map[string]any)["Todo"].(map[string]any)["read"])
	if !strings.Contains(string(read), `"sharedWith_some"`) || got["version"] != float64(2) {
		t.Fatalf("get: %v", got)
	}
	list := app.Must(t, http.StatusOK, "GET", "/api/v1/roles", key, nil).JSON(t)["roles"].([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "member" {
		t.Fatalf("list: %v", list)
	}
	app.Must(t, http.StatusNoContent, "DELETE", "/api/v1/roles/reader", key, nil)
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/roles/reader", key, nil)
	app.Must(t, http.StatusNotFound, "DELETE", "/api/v1/roles/reader", key, nil)

	// Another tenant sees none of them.
	_, other := app.Tenant(t)
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/roles/member", other, nil)

	// A key bound to a role holds the role until revoked.
	k := app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "bound", "scopes": []any{"*:*:*"}, "role": "member"}).JSON(t)
	if k["role"] != "member" {
		t.Fatalf("bound key %v", k)
	}
	who := app.Must(t, http.StatusOK, "GET", "/api/v1/auth/whoami", k["key"].(string), nil).JSON(t)
	if scopes, _ := json.Marshal(who["scopes"]); string(scopes) != `["entity:Todo:*","entity:User:read"]` || who["roles"].([]any)[0] != "member" {
		t.Fatalf("whoami of the bound key: %v", who)
	}
	app.Must(t, http.StatusForbidden, "GET", "/api/v1/api-keys", k["key"].(string), nil)
	if r := app.Do(t, "DELETE", "/api/v1/roles/member", key, nil); r.Status != 409 {
		t.Fatalf("deleting a bound role: %d %s", r.Status, r.Body)
	}
	app.Must(t, http.StatusNoContent, "DELETE", "/api/v1/api-keys/"+k["id"].(string), key, nil)
	app.Must(t, http.StatusNoContent, "DELETE", "/api/v1/roles/member", key, nil)
	if r := app.Do(t, "POST", "/api/v1/api-keys", key, map[string]any{"name": "b", "scopes": []any{"*:*:*"}, "role": "member"}); r.Status != 400 || !strings.Contains(string(r.Body), `"field":"role"`) {
		t.Fatalf("binding a missing role: %d %s", r.Status, r.Body)
	}
}

// Every bad role is a 400 naming the path, and nothing is stored.
func TestRoleValidation(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	app.Schema(t, key, todoSchema)
	rule := func(entity string, rules map[string]any) map[string]any {
		return map[string]any{"scopes": []any{"entity:*:read"}, "rules": map[string]any{entity: rules}}
	}
	for _, c := range []struct {
		name  string
		role  string
		body  any
		field string
	}{
		{"bad name", "1x", map[string]any{"scopes": []any{"entity:*:read"}}, "name"},
		{"no scopes", "r", map[string]any{}, "scopes"},
		{"bad scope", "r", map[string]any{"scopes": []any{"entity:*:read", "nope"}}, "scopes[1]"},
		{"unknown entity", "r", rule("Ghost", map[string]any{"read": map[string]any{}}), "rules.Ghost"},
		{"unknown field", "r", rule("Todo", map[string]any{"read": map[string]any{"owner": "$user.id"}}), "rules.Todo.read.owner"},
		{"unknown variable", "r", rule("Todo", map[string]any{"read": map[string]any{"ownerId": "$user.name"}}), "rules.Todo.read.ownerId"},
		{"bad operator", "r", rule("Todo", map[string]any{"read": map[string]any{"ownerId": map[string]any{"$like": "x"}}}), "rules.Todo.read.ownerId"},
		{"type mismatch", "r", rule("Todo", map[string]any{"read": map[string]any{"priority": map[string]any{"$gt": "high"}}}), "rules.Todo.read.priority"},
		{"operator on type", "r", rule("Todo", map[string]any{"update": map[string]any{"check": map[string]any{"done": map[string]any{"$startsWith": "$user.id"}}}}), "rules.Todo.update.check.done"},
		{"across a relationship", "r", rule("Todo", map[string]any{"read": map[string]any{"sharedWith_some": map[string]any{"name": "$user.id"}}}), "rules.Todo.read.sharedWith.name"}, // the compiler names the relationship,
		{"relationship not an object", "r", rule("Todo", map[string]any{"read": map[string]any{"sharedWith_every": "x"}}), "rules.Todo.read.sharedWith_every"},
		{"bad logical", "r", rule("Todo", map[string]any{"delete": map[string]any{"$or": "x"}}), "rules.Todo.delete.$or"},
		{"preset field", "r", rule("Todo", map[string]any{"create": map[string]any{"preset": map[string]any{"id": "x"}}}), "rules.Todo.create.preset.id"},
		{"preset type", "r", rule("Todo", map[string]any{"create": map[string]any{"preset": map[string]any{"priority": "high"}}}), "rules.Todo.create.preset.priority"},
		{"read field", "r", map[string]any{"scopes": []any{"entity:*:read"}, "fields": map[string]any{"Todo": map[string]any{"read": []any{"title", "secret"}}}}, "fields.Todo.read[1]"},
		{"write field", "r", map[string]any{"scopes": []any{"entity:*:read"}, "fields": map[string]any{"Todo": map[string]any{"write": []any{"id"}}}}, "fields.Todo.write[0]"},
		{"unknown member", "r", map[string]any{"scopes": []any{"entity:*:read"}, "rules": map[string]any{"Todo": map[string]any{"list": map[string]any{}}}}, "list"},
	} {
		r := app.Do(t, "PUT", "/api/v1/roles/"+c.role, key, c.body)
		var e struct {
			Error struct {
				Code    string
				Details []struct{ Field string }
			}
		}
		_ = json.Unmarshal(r.Body, &e)
		if r.Status != 400 || len(e.Error.Details) == 0 || e.Error.Details[0].Field != c.field {
			t.Errorf("%s: %d %s, want 400 naming %s", c.name, r.Status, r.Body, c.field)
		}
	}
	if r := app.Do(t, "PUT", "/api/v1/roles/r", key, "\xff\xfe{"); r.Status != 400 {
		t.Errorf("bytes: %d %s", r.Status, r.Body)
	}
	if list := app.Must(t, 200, "GET", "/api/v1/roles", key, nil).JSON(t)["roles"].([]any); len(list) != 0 {
		t.Errorf("a refused role was stored: %v", list)
	}
	// No escalation: a key cannot define a role beyond its own scopes.
	narrow := app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "n", "scopes": []any{"role:*:*", "entity:*:read"}}).JSON(t)["key"].(string)
	app.Must(t, http.StatusForbidden, "PUT", "/api/v1/roles/admin", narrow, map[string]any{"scopes": []any{"*:*:*"}})
	app.Must(t, http.StatusCreated, "PUT", "/api/v1/roles/viewer", narrow, map[string]any{"scopes": []any{"entity:Todo:read"}})
	reader := app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "x", "scopes": []any{"entity:*:read"}}).JSON(t)["key"].(string)
	app.Must(t, http.StatusForbidden, "PUT", "/api/v1/roles/viewer", reader, map[string]any{"scopes": []any{"entity:Todo:read"}})
	app.Must(t, http.StatusForbidden, "GET", "/api/v1/roles", reader, nil)
}

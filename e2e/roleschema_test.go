package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// secretTodos: todos with a field some roles may not see.
var secretTodos = map[string]any{
	"name": "secret_todos",
	"entities": []any{map[string]any{"name": "Todo", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true},
		map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
		map[string]any{"name": "secret", "type": "STRING"},
	}}},
}

// viewerRole reads its own todos without their secret, creates and
// renames them, never deletes.
var viewerRole = map[string]any{
	"scopes": []any{"entity:Todo:read", "entity:Todo:create", "entity:Todo:update"},
	"rules": map[string]any{"Todo": map[string]any{"read": map[string]any{"ownerId": "$user.id"},
		"create": map[string]any{"preset": map[string]any{"ownerId": "$user.id"}}}},
	"fields": map[string]any{"Todo": map[string]any{"read": []any{"title", "ownerId"}, "write": []any{"title"}}},
}

// keeperRole does everything to todos and reads their secret, not their owner.
var keeperRole = map[string]any{
	"scopes": []any{"entity:Todo:*"},
	"fields": map[string]any{"Todo": map[string]any{"read": []any{"title", "secret"}}},
}

// getText is a GET answering 200 with its body.
func (d *deployment) getText(t *testing.T, base, path, cred string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", base+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cred)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", path, res.StatusCode, b)
	}
	return string(b)
}

// introspected is what graphql-js rebuilds from a credential's
// introspection (the clients GraphiQL and codegen use).
func introspected(t *testing.T, d *deployment, tenantID, cred string) string {
	t.Helper()
	var got struct{ SDL string }
	if err := json.Unmarshal(node(t, nil, filepath.Join("clients", "introspect.mjs"), d.URL+"/api/v1/dynamic-gql/"+tenantID, cred), &got); err != nil {
		t.Fatal(err)
	}
	return got.SDL
}

// typeFields are the fields introspection lists for a type, sorted.
func typeFields(t *testing.T, d *deployment, tenantID, cred, typ string) []string {
	t.Helper()
	data, errs := gql(t, d, tenantID, cred, fmt.Sprintf(`{ __type(name: %q) { fields { name } inputFields { name } } }`, typ))
	if len(errs) > 0 {
		t.Fatalf("introspection of %s: %v", typ, errs)
	}
	ty, _ := data["__type"].(map[string]any)
	var out []string
	for _, k := range []string{"fields", "inputFields"} {
		fs, _ := ty[k].([]any)
		for _, f := range fs {
			out = append(out, f.(map[string]any)["name"].(string))
		}
	}
	slices.Sort(out)
	return out
}

// openAPIShape is a document's Todo record properties (as read:
// Todo.Selected), create body properties and whether a record can be
// deleted.
func openAPIShape(t *testing.T, doc string) (record, input []string, del bool) {
	t.Helper()
	var m struct {
		Paths      map[string]map[string]any
		Components struct {
			Schemas map[string]struct{ Properties map[string]any }
		}
	}
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	keys := func(p map[string]any) []string {
		var out []string
		for k := range p {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	_, del = m.Paths["/api/v1/dynamic/Todo/{id}"]["delete"]
	return keys(m.Components.Schemas["Todo.Selected"].Properties), keys(m.Components.Schemas["Todo.Input"].Properties), del
}

// A schema per role, through the binary: each role's SDL, introspection
// (raw and rebuilt by graphql-js), validation, graphql-ws subscriptions
// and OpenAPI show it only its fields and operations; the admin key sees
// the schema it saw before any role existed; a role edit shows on the next
// request, on this server and on a second one.
func TestSchemaPerRole(t *testing.T) {
	t.Parallel()
	d := local
	tenantID, admin := d.tenant(t)
	schemaID := d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", admin, secretTodos).body(t)["id"].(string)
	sdlPath := "/api/v1/dynamic-gql/" + tenantID + "/schema.graphql"
	adminSDL := d.getText(t, d.URL, sdlPath, admin)
	adminOpenAPI := d.getText(t, d.URL, "/api/v1/schemas/"+schemaID+"/openapi.json", admin)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/viewer", admin, viewerRole)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/keeper", admin, keeperRole)
	tok := func(user, role string) string {
		return d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", admin,
			map[string]any{"userId": user, "roles": []any{role}}).body(t)["accessToken"].(string)
	}
	viewer, keeper := tok("vera", "viewer"), tok("kim", "keeper")
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", admin, map[string]any{"title": "v1", "ownerId": "vera", "secret": "s1"})

	for _, c := range []struct {
		name, cred            string
		todo, create          []string // Todo's and TodoCreateInput's fields (introspection)
		sdlHas, sdlHasNot     []string
		apiRecord, apiInput   []string // OpenAPI Todo and Todo.Input properties
		apiDelete             bool
		selectSecret, deletes bool // what a query selecting secret, and deleteTodo, answer
	}{
		{"viewer", viewer,
			[]string{"createdAt", "id", "ownerId", "title", "updatedAt"}, []string{"title"},
			[]string{"createTodo(", "updateTodo(", "todoCreated("}, []string{"secret", "deleteTodo", "batchDeleteTodo"},
			[]string{"createdAt", "id", "ownerId", "title", "updatedAt"}, []string{"title"}, false, false, false},
		{"keeper", keeper,
			[]string{"createdAt", "id", "secret", "title", "updatedAt"}, []string{"ownerId", "secret", "title"},
			[]string{"secret: String", "deleteTodo(", "createTodo("}, []string{"ownerId: StringFilter"},
			[]string{"createdAt", "id", "secret", "title", "updatedAt"}, []string{"ownerId", "secret", "title"}, true, true, true},
		{"admin key", admin,
			[]string{"createdAt", "id", "ownerId", "secret", "title", "updatedAt"}, []string{"ownerId", "secret", "title"},
			[]string{"secret: String", "deleteTodo(", "ownerId: String"}, nil,
			[]string{"createdAt", "id", "ownerId", "secret", "title", "updatedAt"}, []string{"ownerId", "secret", "title"}, true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			sdl := d.getText(t, d.URL, sdlPath, c.cred)
			rebuilt := introspected(t, d, tenantID, c.cred)
			for _, s := range c.sdlHas {
				if !strings.Contains(sdl, s) || !strings.Contains(rebuilt, s) {
					t.Errorf("SDL or introspection lacks %q", s)
				}
			}
			for _, s := range c.sdlHasNot {
				if strings.Contains(sdl, s) || strings.Contains(rebuilt, s) {
					t.Errorf("SDL or introspection shows %q", s)
				}
			}
			if got := typeFields(t, d, tenantID, c.cred, "Todo"); !slices.Equal(got, c.todo) {
				t.Errorf("__type(Todo) fields %v, want %v", got, c.todo)
			}
			if got := typeFields(t, d, tenantID, c.cred, "TodoCreateInput"); !slices.Equal(got, c.create) {
				t.Errorf("__type(TodoCreateInput) fields %v, want %v", got, c.create)
			}
			doc := d.getText(t, d.URL, "/api/v1/openapi.json", c.cred)
			rec, in, del := openAPIShape(t, doc)
			if !slices.Equal(rec, c.apiRecord) || !slices.Equal(in, c.apiInput) || del != c.apiDelete {
				t.Errorf("OpenAPI: Todo %v, Todo.Input %v, delete %v; want %v %v %v", rec, in, del, c.apiRecord, c.apiInput, c.apiDelete)
			}
			if !c.selectSecret && strings.Contains(doc, `"secret"`) {
				t.Error("the OpenAPI document names the hidden field")
			}
			// Selecting the hidden field is a validation error naming it
			// (the schema the role sees has no such field).
			data, errs := gql(t, d, tenantID, c.cred, `{ todos { title secret } }`)
			if refused := len(errs) > 0; refused == c.selectSecret || refused && (!strings.Contains(fmt.Sprint(errs), `"secret"`) || data != nil) {
				t.Errorf("selecting secret: data %v errors %v", data, errs)
			}
			// deleteTodo: a validation error (no path) when not in the
			// role's schema, else executed (not found: an error at its path).
			_, errs = gql(t, d, tenantID, c.cred, `mutation { deleteTodo(id: "00000000-0000-7000-8000-000000000000") { id } }`)
			executed := false
			for _, e := range errs {
				if m, ok := e.(map[string]any); ok && m["path"] != nil {
					executed = true
				}
			}
			if len(errs) == 0 || executed != c.deletes || !executed && !strings.Contains(fmt.Sprint(errs), "deleteTodo") {
				t.Errorf("deleteTodo: %v", errs)
			}
		})
	}
	// The admin key's schema is the one it saw before any role existed.
	if got := d.getText(t, d.URL, sdlPath, admin); got != adminSDL {
		t.Error("roles changed the admin key's SDL")
	}
	if got := d.getText(t, d.URL, "/api/v1/schemas/"+schemaID+"/openapi.json", admin); got != adminOpenAPI {
		t.Error("roles changed the admin key's OpenAPI document")
	}
	// The document of the schema by id still needs schema:read, which the
	// viewer's role does not grant; a role that grants it gets its own view
	// there too. A key bound to the viewer role sees the viewer's schema.
	d.do(t, http.StatusForbidden, "GET", "/api/v1/schemas/"+schemaID+"/openapi.json", viewer, nil)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/auditor", admin, map[string]any{
		"scopes": []any{"entity:Todo:read", "schema:*:read"},
		"fields": map[string]any{"Todo": map[string]any{"read": []any{"title"}}}})
	auditor := tok("ada", "auditor")
	if rec, in, del := openAPIShape(t, d.getText(t, d.URL, "/api/v1/schemas/"+schemaID+"/openapi.json", auditor)); !slices.Equal(rec, []string{"createdAt", "id", "title", "updatedAt"}) || in != nil || del {
		t.Errorf("the auditor's document of the schema: Todo %v, Todo.Input %v, delete %v", rec, in, del)
	}
	bound := d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "backend", "scopes": []any{"entity:Todo:*"}, "role": "viewer"}).body(t)["key"].(string)
	if got := d.getText(t, d.URL, sdlPath, bound); got != d.getText(t, d.URL, sdlPath, viewer) {
		t.Errorf("the viewer-bound key's SDL differs from the viewer's:\n%s", got)
	}

	// graphql-ws: the viewer's subscription selecting secret is refused
	// naming it; one selecting title receives its todo without it.
	ws := "ws" + strings.TrimPrefix(d.URL, "http") + "/api/v1/dynamic-gql/ws"
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make test`")
	}
	sub := func(doc string) *lines {
		cmd := exec.CommandContext(t.Context(), nodeBin, filepath.Join(npmDir, "clients", "subscribe.mjs"), ws, viewer, doc)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return readLines(out)
	}
	refused := sub(`subscription { todoCreated { title secret } }`)
	refused.await(t, 30*time.Second, "the subscription selecting secret to be refused", func(m json.RawMessage) bool {
		return strings.Contains(string(m), "secret") && (strings.Contains(string(m), `"error"`) || strings.Contains(string(m), `"errors"`))
	})
	live := sub(`subscription { todoCreated { title ownerId } }`)
	live.await(t, 30*time.Second, "the subscription to connect", func(m json.RawMessage) bool { return strings.Contains(string(m), `"connected":true`) })
	// "connected" precedes the subscription's registration: probe until
	// one of the viewer's creates arrives.
	var ev json.RawMessage
	for attempt := 0; ev == nil; attempt++ {
		if attempt == 30 {
			t.Fatal("no todoCreated event for 30 probes on the viewer's socket")
		}
		data, errs := gql(t, d, tenantID, viewer, `mutation { createTodo(input: {title: "live"}) { id } }`)
		if len(errs) > 0 {
			t.Fatalf("the viewer's create: %v", errs)
		}
		if data["createTodo"] == nil {
			t.Fatalf("the viewer's create: %v", data)
		}
		if m, ok := live.find(time.Second, func(m json.RawMessage) bool { return strings.Contains(string(m), `"live"`) }); ok {
			ev = m
		}
	}
	if strings.Contains(string(ev), "secret") || !strings.Contains(string(ev), `"ownerId":"vera"`) {
		t.Errorf("event: %s", ev)
	}

	// A role edit shows on the next request here and, once the change
	// notification arrives, on a second server over the same database.
	replica := startReplica(t, d)
	if strings.Contains(d.getText(t, replica, sdlPath, viewer), "secret") {
		t.Fatal("the replica shows the viewer the secret before the edit")
	}
	edited := map[string]any{"scopes": viewerRole["scopes"], "rules": viewerRole["rules"],
		"fields": map[string]any{"Todo": map[string]any{"read": []any{"title", "ownerId", "secret"}, "write": []any{"title"}}}}
	d.do(t, http.StatusOK, "PUT", "/api/v1/roles/viewer", admin, edited)
	if !strings.Contains(d.getText(t, d.URL, sdlPath, viewer), "secret: String") {
		t.Error("the edited role's SDL lacks secret on the server that stored it")
	}
	if data, errs := gql(t, d, tenantID, viewer, `{ todos { secret } }`); len(errs) > 0 || !strings.Contains(fmt.Sprint(data), "s1") {
		t.Errorf("after the edit: %v %v", data, errs)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	for !strings.Contains(d.getText(t, replica, sdlPath, viewer), "secret: String") {
		if err := wait(ctx, "the replica to show the edited role's schema"); err != nil {
			t.Fatal(err)
		}
	}
	// keeper, unchanged, still has no ownerId on either server.
	for _, base := range []string{d.URL, replica} {
		if strings.Contains(d.getText(t, base, sdlPath, keeper), "ownerId: StringFilter") {
			t.Errorf("%s: the keeper's schema changed with the viewer's role", base)
		}
	}
}

// startReplica starts a second `dds serve` over d's database and returns
// its base URL once it is ready; it is stopped by PID when the test ends.
func startReplica(t *testing.T, d *deployment) string {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	probes, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	p, err := startProcess(bin, []string{"serve"}, append(slices.Clone(d.env),
		fmt.Sprintf("DDS_HTTP_ADDR=127.0.0.1:%d", port), fmt.Sprintf("DDS_WORKER_HTTP_ADDR=127.0.0.1:%d", probes), "DDS_PUBLIC_URL="+base),
		filepath.Join(t.TempDir(), "replica.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for {
		if p.exited() {
			t.Fatalf("the replica exited:\n%s", p.logTail())
		}
		if r, err := http.Get(base + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return base
			}
		}
		if err := wait(ctx, "the replica to answer /readyz"); err != nil {
			t.Fatal(err)
		}
	}
}

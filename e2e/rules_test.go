package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/google/uuid"

	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
)

// sharedTodos is the worked example of docs/auth.md: users own todos and
// share them with other users through a relationship.
var sharedTodos = map[string]any{
	"name": "shared_todos",
	"entities": []any{
		map[string]any{"name": "User", "fields": []any{map[string]any{"name": "uid", "type": "STRING", "indexed": true}}},
		map[string]any{"name": "Todo", "softDelete": true, "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "required": true},
			map[string]any{"name": "code", "type": "STRING", "unique": true},
			map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
			map[string]any{"name": "done", "type": "BOOLEAN"},
			map[string]any{"name": "priority", "type": "INTEGER"},
			map[string]any{"name": "org", "type": "STRING"},
			map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 2},
		}},
	},
	"relationships": []any{map[string]any{"name": "sharedWith", "from": "Todo", "to": "User", "fromField": "sharedWith", "toField": "sharedTodos",
		"properties": []any{map[string]any{"name": "note", "type": "STRING"}}}},
}

// memberRole: a user's own todos and those shared with them; creates are
// the user's (preset) and not already done (check); only the owner
// updates (and cannot give the todo away) or deletes; every field but
// priority may be written.
var memberRole = map[string]any{
	"scopes": []any{"entity:Todo:*", "entity:User:read", "entity:User:create", "relationship:sharedWith:*", "job:*:*", "file:*:create", "file:*:read"},
	"fields": map[string]any{"Todo": map[string]any{"write": []any{"title", "code", "ownerId", "done", "org", "embedding"}}},
	"rules": map[string]any{"Todo": map[string]any{
		"read": map[string]any{"$or": []any{
			map[string]any{"ownerId": "$user.id"},
			map[string]any{"sharedWith_some": map[string]any{"uid": "$user.id"}},
		}},
		"create": map[string]any{"check": map[string]any{"ownerId": "$user.id", "done": map[string]any{"$neq": true}}, "preset": map[string]any{"ownerId": "$user.id"}},
		"update": map[string]any{"where": map[string]any{"ownerId": "$user.id"}, "check": map[string]any{"ownerId": "$user.id"}},
		"delete": map[string]any{"ownerId": "$user.id"},
	}},
}

// readerRole: the todos of the user's organisation (a claim), without
// their owner or priority.
var readerRole = map[string]any{
	"scopes": []any{"entity:Todo:read"},
	"rules":  map[string]any{"Todo": map[string]any{"read": map[string]any{"org": "$user.claims.org"}}},
	"fields": map[string]any{"Todo": map[string]any{"read": []any{"title", "done", "org", "embedding"}}},
}

type rulesWorld struct {
	d          *deployment
	tenantID   string
	admin      string
	todo       map[string]string // title → id
	aliceU     string            // the User records
	bobU       string
	alice, bob string // member tokens
	dave, anon string // reader tokens: with org acme, without the claim
}

func newRulesWorld(t *testing.T) *rulesWorld {
	t.Helper()
	d := local
	w := &rulesWorld{d: d, todo: map[string]string{}}
	w.tenantID, w.admin = d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", w.admin, sharedTodos)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/member", w.admin, memberRole)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/reader", w.admin, readerRole)
	user := func(uid string) string {
		return d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/User", w.admin, map[string]any{"uid": uid}).body(t)["id"].(string)
	}
	w.aliceU, w.bobU = user("alice"), user("bob")
	todo := func(title, owner, org string, vec []any) {
		w.todo[title] = d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", w.admin,
			map[string]any{"title": title, "ownerId": owner, "org": org, "priority": 1, "embedding": vec}).body(t)["id"].(string)
	}
	// The query vector of the vector search is [1, 0]: carol's todos are
	// nearest, bob's visible ones farthest.
	todo("a1", "alice", "acme", []any{0, 1})
	todo("a2", "alice", "acme", []any{-1, 1})
	todo("b1", "bob", "other", []any{-1, 0.5})
	todo("c1", "carol", "acme", []any{1, 0.1})
	for i := range 20 {
		todo(fmt.Sprintf("c-near-%d", i), "carol", "other", []any{1, float64(i) / 100})
	}
	share := func(todo, userRec string) {
		d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo/"+w.todo[todo]+"/relationships/sharedWith", w.admin, map[string]any{"targetId": userRec})
	}
	share("a2", w.bobU)   // bob sees a2
	share("c1", w.aliceU) // alice sees c1
	tok := func(body map[string]any) string {
		return d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", w.admin, body).body(t)["accessToken"].(string)
	}
	w.alice = tok(map[string]any{"userId": "alice", "roles": []any{"member"}})
	w.bob = tok(map[string]any{"userId": "bob", "roles": []any{"member"}})
	w.dave = tok(map[string]any{"userId": "dave", "roles": []any{"reader"}, "claims": map[string]any{"org": "acme"}})
	w.anon = tok(map[string]any{"userId": "erin", "roles": []any{"reader"}})
	return w
}

// titles returns the sorted titles of items.
func titles(items []any) []string {
	var out []string
	for _, it := range items {
		if m, ok := it.(map[string]any); ok {
			if d, ok := m["data"].(map[string]any); ok { // vector search
				m = d
			}
			out = append(out, fmt.Sprint(m["title"]))
		}
	}
	sort.Strings(out)
	return out
}

func errorCode(t *testing.T, r *response) (code string, fields []string) {
	t.Helper()
	var e struct {
		Error struct {
			Code    string
			Details []struct{ Field string }
		}
	}
	_ = json.Unmarshal(r.Body, &e)
	for _, d := range e.Error.Details {
		fields = append(fields, d.Field)
	}
	return e.Error.Code, fields
}

// Two users, two roles, every read surface: who sees what, through the
// dds binary.
func TestRulesScenarioReads(t *testing.T) {
	t.Parallel()
	w := newRulesWorld(t)
	d := w.d
	list := func(cred string) []string {
		return titles(d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo?limit=100", cred, nil).body(t)["items"].([]any))
	}
	for _, c := range []struct {
		who, cred string
		want      []string
	}{
		{"alice (member: own + shared)", w.alice, []string{"a1", "a2", "c1"}},
		{"bob (member: own + shared)", w.bob, []string{"a2", "b1"}},
		{"dave (reader, org acme)", w.dave, []string{"a1", "a2", "c1"}},
		{"erin (reader without the org claim)", w.anon, nil},
	} {
		if got := list(c.cred); !slices.Equal(got, c.want) {
			t.Errorf("REST list as %s: %v, want %v", c.who, got, c.want)
		}
		// The query endpoint's count counts only the visible rows.
		q := d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/query", c.cred, map[string]any{"includeCount": true, "limit": 1}).body(t)
		if q["count"] != float64(len(c.want)) {
			t.Errorf("REST count as %s: %v, want %d", c.who, q["count"], len(c.want))
		}
	}
	// The change feed shows a user only the creations of the todos its
	// read rule admits now (bob: his own and the one shared with him).
	var feed struct {
		Events []struct{ Record struct{ Title string } }
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/events?entities=Todo&types=entity.created&limit=100", w.bob, nil).decode(t, &feed)
	var seen []string
	for _, ev := range feed.Events {
		seen = append(seen, ev.Record.Title)
	}
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"a2", "b1"}) {
		t.Errorf("change feed as bob: %v, want [a2 b1]", seen)
	}
	// Edges too: bob sees the sharing of a2 (his to read), not that of
	// carol's c1 with alice, whose id it would reveal.
	var edges struct {
		Events []struct {
			Record struct {
				SourceID string `json:"sourceId"`
			}
		}
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/events?types=relationship.created&limit=100", w.bob, nil).decode(t, &edges)
	if len(edges.Events) != 1 || edges.Events[0].Record.SourceID != w.todo["a2"] {
		t.Errorf("edge events as bob: %+v, want only a2's sharing", edges.Events)
	}
	// REST get: a hidden row is 404, a shared one 200.
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.bob, nil)
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.bob, nil)
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+w.todo["b1"], w.anon, nil)
	// A filter cannot probe hidden rows: bob filtering on alice's title finds nothing.
	if got := titles(d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/query", w.bob, map[string]any{"where": map[string]any{"ownerId": "alice"}}).body(t)["items"].([]any)); !slices.Equal(got, []string{"a2"}) {
		t.Errorf("bob's todos of alice: %v, want only the shared a2", got)
	}

	// GraphQL: lists, counts, connections, nested selections and _some.
	data, errs := gql(t, d, w.tenantID, w.bob, `{ todos { title } todosCount todosConnection(first: 1) { totalCount edges { node { title } } }
		users(orderBy: [{field: "uid"}]) { uid sharedTodos { title } } }`)
	if len(errs) > 0 {
		t.Fatalf("GraphQL as bob: %v", errs)
	}
	if got := titles(data["todos"].([]any)); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Errorf("GraphQL todos as bob: %v", got)
	}
	if data["todosCount"] != float64(2) || data["todosConnection"].(map[string]any)["totalCount"] != float64(2) {
		t.Errorf("GraphQL counts as bob: %v %v", data["todosCount"], data["todosConnection"])
	}
	users := data["users"].([]any)
	if len(users) != 2 || len(users[0].(map[string]any)["sharedTodos"].([]any)) != 0 || !slices.Equal(titles(users[1].(map[string]any)["sharedTodos"].([]any)), []string{"a2"}) {
		t.Errorf("GraphQL nested sharedTodos as bob (alice's c1 must stay hidden): %v", users)
	}
	for _, c := range []struct {
		cred string
		want int
	}{{w.bob, 0}, {w.alice, 1}} {
		data, errs = gql(t, d, w.tenantID, c.cred, `{ users(where: {sharedTodos_some: {title: {equals: "c1"}}}) { uid } }`)
		if len(errs) > 0 || len(data["users"].([]any)) != c.want {
			t.Errorf("_some on a hidden todo: %v %v, want %d users", data, errs, c.want)
		}
	}

	// Connect.
	auth := func(cred string) connect.ClientOption {
		return connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
			return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
				req.Header().Set("Authorization", "Bearer "+cred)
				return next(ctx, req)
			}
		}))
	}
	rc := ddsv1connect.NewRecordServiceClient(http.DefaultClient, d.URL, auth(w.bob))
	res, err := rc.List(t.Context(), connect.NewRequest(&ddsv1.ListRequest{Entity: "Todo", Select: []string{"title"}}))
	if err != nil || len(res.Msg.Items) != 2 {
		t.Errorf("Connect List as bob: %v %v", res, err)
	}
	if _, err := rc.Get(t.Context(), connect.NewRequest(&ddsv1.GetRequest{Entity: "Todo", Id: w.todo["a1"]})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("Connect Get of a hidden todo: %v", err)
	}

	// Vector search: still topK visible records, though 21 hidden ones
	// are nearer.
	vs := func(cred string, topK int) []string {
		var out []any
		d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/vector-search", cred, map[string]any{"field": "embedding", "vector": []any{1, 0}, "topK": topK, "select": []any{"title"}}).decode(t, &out)
		return titles(out)
	}
	if got := vs(w.bob, 2); !slices.Equal(got, []string{"a2", "b1"}) {
		t.Errorf("vector search as bob: %v, want his 2 visible todos", got)
	}
	if got := vs(w.alice, 3); !slices.Equal(got, []string{"a1", "a2", "c1"}) {
		t.Errorf("vector search as alice: %v", got)
	}

	// The reader's field list: other fields are left out; naming one is
	// 403 naming it.
	items := d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo", w.dave, nil).body(t)["items"].([]any)
	for _, it := range items {
		if _, ok := it.(map[string]any)["ownerId"]; ok {
			t.Fatalf("the reader got ownerId: %v", it)
		}
	}
	for name, r := range map[string]*response{
		"select":  d.send(t, "GET", "/api/v1/dynamic/Todo/"+w.todo["a1"]+"?select=title,ownerId", w.dave, nil),
		"where":   d.send(t, "POST", "/api/v1/dynamic/Todo/query", w.dave, map[string]any{"where": map[string]any{"ownerId": "alice"}}),
		"orderBy": d.send(t, "POST", "/api/v1/dynamic/Todo/query", w.dave, map[string]any{"orderBy": "priority"}),
	} {
		if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || len(fields) == 0 || !strings.HasSuffix(fields[0], "ownerId") && !strings.HasSuffix(fields[0], "priority") {
			t.Errorf("reader %s on a forbidden field: %d %s", name, r.Status, r.Body)
		}
	}
	if _, errs := gql(t, d, w.tenantID, w.dave, `{ todos { title ownerId } }`); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "ownerId") {
		t.Errorf("GraphQL selection of a forbidden field: %v", errs)
	}
	if data, errs := gql(t, d, w.tenantID, w.dave, `{ todos { title } }`); len(errs) > 0 || len(data["todos"].([]any)) != 3 {
		t.Errorf("GraphQL as the reader: %v %v", data, errs)
	}
}

// Writes: presets, checks naming the rule, another user's rows not found,
// and nothing written when a rule refuses.
func TestRulesScenarioWrites(t *testing.T) {
	t.Parallel()
	w := newRulesWorld(t)
	d := w.d
	owner := func(title string) string {
		return d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo[title], w.admin, nil).body(t)["ownerId"].(string)
	}
	// Another user's todo (hidden, or shared but not theirs to change): 404.
	d.do(t, http.StatusNotFound, "PATCH", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.bob, map[string]any{"title": "mine now"})
	d.do(t, http.StatusNotFound, "PATCH", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.bob, map[string]any{"title": "mine now"})
	d.do(t, http.StatusNotFound, "DELETE", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.bob, nil)
	if got := d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.admin, nil).body(t)["title"]; got != "a2" {
		t.Fatalf("a refused update wrote: title %v", got)
	}
	// Giving a todo away fails update.check, and is rolled back.
	r := d.send(t, "PATCH", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.alice, map[string]any{"ownerId": "bob", "title": "gift"})
	if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Contains(fields, "rules.Todo.update.check") {
		t.Fatalf("changing ownerId: %d %s", r.Status, r.Body)
	}
	if owner("a1") != "alice" {
		t.Fatal("the failed check was not rolled back")
	}
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.alice, map[string]any{"title": "a1 renamed"})
	// Create: the preset wins over what the client sent; the check holds.
	c := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", w.bob, map[string]any{"title": "b2", "ownerId": "mallory"}).body(t)
	if c["ownerId"] != "bob" {
		t.Fatalf("preset ownerId: %v", c)
	}
	r = d.send(t, "POST", "/api/v1/dynamic/Todo", w.bob, map[string]any{"title": "born done", "done": true})
	if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Contains(fields, "rules.Todo.create.check") {
		t.Fatalf("create failing its check: %d %s", r.Status, r.Body)
	}
	if n := d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/query", w.admin, map[string]any{"where": map[string]any{"title": "born done"}, "includeCount": true}).body(t)["count"]; n != float64(0) {
		t.Fatalf("a refused create wrote %v records", n)
	}
	// GraphQL mutations go through the same rules.
	if _, errs := gql(t, d, w.tenantID, w.bob, fmt.Sprintf(`mutation { updateTodo(id: %q, input: {title: "x"}) { id } }`, w.todo["a1"])); len(errs) == 0 {
		t.Error("GraphQL update of a hidden todo succeeded")
	}
	// The owner deletes their own.
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Todo/"+c["id"].(string), w.bob, nil)
	// The reader may not read ownerId, so writing is forbidden by scope too.
	d.do(t, http.StatusForbidden, "POST", "/api/v1/dynamic/Todo", w.dave, map[string]any{"title": "x"})
}

// A token of the stack's Ory Hydra, mapped to member by the provider's
// defaultRole, is under the same rules.
func TestRulesScenarioHydra(t *testing.T) {
	t.Parallel()
	h := newHydra(t)
	w := newRulesWorld(t)
	d := w.d
	aud := "dds-" + uuid.NewString()
	clientID, secret := "c-"+uuid.NewString(), "secret-"+uuid.NewString()
	h.call(t, 201, "POST", h.admin+"/admin/clients", map[string]any{"client_id": clientID, "client_secret": secret,
		"grant_types": []any{"client_credentials"}, "audience": []any{aud}, "token_endpoint_auth_method": "client_secret_post"}, nil)
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/providers", w.admin, map[string]any{"name": "hydra", "issuer": h.public,
		"audience": aud, "claims": map[string]any{"userId": "client_id"}, "defaultRole": "member"})
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", w.admin, map[string]any{"title": "hydra's", "ownerId": clientID})
	tok := h.clientToken(t, clientID, secret, aud)
	if got := titles(d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo", tok, nil).body(t)["items"].([]any)); !slices.Equal(got, []string{"hydra's"}) {
		t.Fatalf("a Hydra token's todos: %v", got)
	}
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+w.todo["a1"], tok, nil)
	if data, errs := gql(t, d, w.tenantID, tok, `{ todosCount }`); len(errs) > 0 || data["todosCount"] != float64(1) {
		t.Fatalf("GraphQL count with a Hydra token: %v %v", data, errs)
	}
}

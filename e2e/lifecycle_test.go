package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// library is the schema of the soft-delete and history tests: at first
// without either option, which they switch on for existing entities.
func library(soft bool) map[string]any {
	return map[string]any{"name": "library", "entities": []any{
		map[string]any{"name": "Author", "softDelete": soft, "history": soft, "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "born", "type": "INTEGER"},
		}},
		map[string]any{"name": "Book", "softDelete": soft, "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "required": true},
			map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 3},
		}},
	}, "relationships": []any{
		map[string]any{"name": "WROTE", "from": "Author", "to": "Book", "fromField": "books", "toField": "authors"},
	}}
}

// gql posts a GraphQL operation for the tenant and returns its data
// (failing on errors unless wantErr, which then returns the first error's
// message as data["error"]).
func (d *deployment) gql(t *testing.T, tenant, key, q string, wantErr bool) map[string]any {
	t.Helper()
	var res struct {
		Data   map[string]any
		Errors []struct{ Message string }
	}
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic-gql/"+tenant, key, map[string]any{"query": q}).decode(t, &res)
	if wantErr {
		if len(res.Errors) == 0 {
			t.Fatalf("%s: no error, data %v", q, res.Data)
		}
		return map[string]any{"error": res.Errors[0].Message}
	}
	if len(res.Errors) > 0 {
		t.Fatalf("%s: %v", q, res.Errors)
	}
	return res.Data
}

// ids lists the "id" members of a JSON array of records.
func ids(v any) []string {
	var out []string
	items, _ := v.([]any)
	for _, it := range items {
		m, _ := it.(map[string]any)
		if n, ok := m["node"].(map[string]any); ok { // a connection edge
			m = n
		}
		if d, ok := m["data"].(map[string]any); ok { // a vector search hit
			m = d
		}
		id, _ := m["id"].(string)
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string { slices.Sort(s); return s }

// Soft delete switched on for an existing entity, through the binary: a
// deleted record is gone from every read surface (REST get, list, query,
// count, relationship lists and traversals, vector search; GraphQL lists,
// connections and totalCount, counts, nested lists and _some), 404 to
// writes, shown with withDeleted to a key with delete scope (403 to one
// without), and restored; webhooks and subscriptions see entity.deleted
// for the delete and entity.updated for the restore.
func TestSoftDeleteOnEverySurface(t *testing.T) {
	t.Parallel()
	d := local
	tenant, key := d.tenant(t)
	var s struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, library(false)).decode(t, &s)
	var author, kept, gone struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Author", key, map[string]any{"name": "Le Guin"}).decode(t, &author)
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Book", key, map[string]any{"title": "Earthsea", "embedding": []float64{1, 0, 0}}).decode(t, &kept)
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Book", key, map[string]any{"title": "Lathe", "embedding": []float64{0.9, 0.1, 0}}).decode(t, &gone)
	for _, b := range []string{kept.ID, gone.ID} {
		d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Author/"+author.ID+"/relationships/WROTE", key, map[string]any{"targetId": b})
	}

	// The dry-run plan says what switching the options on does; nothing
	// in it is destructive, and the existing records stay live.
	var plan struct {
		Plan struct {
			Steps []struct {
				Description string
				Destructive bool
			}
		}
	}
	d.do(t, http.StatusOK, "PUT", "/api/v1/schemas/"+s.ID+"?dryRun=true", key, library(true)).decode(t, &plan)
	var descs []string
	for _, st := range plan.Plan.Steps {
		if st.Destructive {
			t.Fatalf("switching soft delete and history on is destructive: %+v", plan.Plan.Steps)
		}
		descs = append(descs, st.Description)
	}
	if all := strings.Join(descs, "\n"); !strings.Contains(all, "turn soft delete on for Book") || !strings.Contains(all, "existing records stay live") ||
		!strings.Contains(all, "turn history on for Author") {
		t.Fatalf("plan descriptions:\n%s", all)
	}
	d.do(t, http.StatusOK, "PUT", "/api/v1/schemas/"+s.ID, key, library(true))

	// Webhook and subscriptions, before the delete.
	var mu sync.Mutex
	var hooked []string
	recv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p struct {
			Type string
			Data struct{ EntityID string }
		}
		_ = json.Unmarshal(b, &p)
		if p.Data.EntityID == gone.ID {
			mu.Lock()
			hooked = append(hooked, p.Type)
			mu.Unlock()
		}
	}))
	defer recv.Close()
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": recv.URL + "/hooks", "eventTypes": []string{"entity.updated", "entity.deleted"}})
	events := subscribe(t, d, key, `subscription { bookDeleted { id title deletedAt } }`, `subscription { bookUpdated { id title deletedAt } }`)
	// Probe until the subscriptions are live (an update of the kept book).
	for attempt := 0; ; attempt++ {
		if attempt == 30 {
			t.Fatal("the subscriptions never became live")
		}
		d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Book/"+kept.ID, key, map[string]any{"title": fmt.Sprint("Earthsea ", attempt)})
		if _, ok := events.find(time.Second, func(l json.RawMessage) bool { return bytes.Contains(l, []byte(kept.ID)) }); ok {
			break
		}
	}

	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Book/"+gone.ID, key, nil)

	// Every read hides it.
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Book/"+gone.ID, key, nil)
	d.do(t, http.StatusNotFound, "PATCH", "/api/v1/dynamic/Book/"+gone.ID, key, map[string]any{"title": "x"})
	d.do(t, http.StatusNotFound, "DELETE", "/api/v1/dynamic/Book/"+gone.ID, key, nil)
	d.do(t, http.StatusNotFound, "POST", "/api/v1/dynamic/Author/"+author.ID+"/relationships/WROTE", key, map[string]any{"targetId": gone.ID})
	var list struct {
		Items []map[string]any
		Count int
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Book?includeCount=true", key, nil).decode(t, &list)
	if len(list.Items) != 1 || list.Items[0]["id"] != kept.ID || list.Count != 1 || list.Items[0]["deletedAt"] != nil {
		t.Fatalf("list after delete: %+v", list)
	}
	var q map[string]any
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Book/query", key, map[string]any{"where": map[string]any{"title": map[string]any{"$eq": "Lathe"}}, "includeCount": true}).decode(t, &q)
	if q["count"] != float64(0) {
		t.Fatalf("query for the deleted title: %v", q)
	}
	var rel map[string]any
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Author/"+author.ID+"/relationships/WROTE", key, nil).decode(t, &rel)
	if got := ids(rel["items"]); !slices.Equal(got, []string{kept.ID}) {
		t.Fatalf("relationship list after delete: %v", got)
	}
	var trav map[string]any
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Author/query", key, map[string]any{"traverse": []any{map[string]any{"relationship": "WROTE"}}}).decode(t, &trav)
	if got := ids(trav["items"].([]any)[0].(map[string]any)["WROTE"]); !slices.Equal(got, []string{kept.ID}) {
		t.Fatalf("traversal after delete: %v", got)
	}
	var hits []any
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Book/vector-search", key, map[string]any{"field": "embedding", "vector": []float64{1, 0, 0}, "topK": 5}).decode(t, &hits)
	if got := ids(hits); !slices.Equal(got, []string{kept.ID}) {
		t.Fatalf("vector search after delete: %v", got)
	}
	g := d.gql(t, tenant, key, `{ books { id } booksConnection { totalCount edges { node { id } } } booksCount
		book(id: "`+gone.ID+`") { id } author(id: "`+author.ID+`") { books { id } }
		writers: authors(where: {books_some: {title: {equals: "Lathe"}}}) { id } }`, false)
	if !slices.Equal(ids(g["books"]), []string{kept.ID}) || g["booksCount"] != float64(1) || g["book"] != nil ||
		g["booksConnection"].(map[string]any)["totalCount"] != float64(1) || !slices.Equal(ids(g["booksConnection"].(map[string]any)["edges"]), []string{kept.ID}) ||
		!slices.Equal(ids(g["author"].(map[string]any)["books"]), []string{kept.ID}) || len(g["writers"].([]any)) != 0 {
		t.Fatalf("GraphQL after delete: %v", g)
	}

	// withDeleted: shown to the admin key, 403 to a reader.
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Book?withDeleted=true", key, nil).decode(t, &list)
	if got := ids(anySlice(list.Items)); !slices.Equal(got, sorted(kept.ID, gone.ID)) {
		t.Fatalf("withDeleted list: %v", got)
	}
	var rec map[string]any
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Book/"+gone.ID+"?withDeleted=true", key, nil).decode(t, &rec)
	if rec["deletedAt"] == nil {
		t.Fatalf("a deleted record read withDeleted has no deletedAt: %v", rec)
	}
	d.do(t, http.StatusBadRequest, "GET", "/api/v1/dynamic/Book?withDeleted=maybe", key, nil)
	var reader struct{ Key string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "reader", "scopes": []string{"entity:*:read"}}).decode(t, &reader)
	d.do(t, http.StatusForbidden, "GET", "/api/v1/dynamic/Book?withDeleted=true", reader.Key, nil)
	d.do(t, http.StatusForbidden, "POST", "/api/v1/dynamic/Book/"+gone.ID+"/restore", reader.Key, nil)
	g = d.gql(t, tenant, key, `{ books(withDeleted: true) { id deletedAt } booksCount(withDeleted: true) }`, false)
	if !slices.Equal(ids(g["books"]), sorted(kept.ID, gone.ID)) || g["booksCount"] != float64(2) {
		t.Fatalf("GraphQL withDeleted: %v", g)
	}
	if e := d.gql(t, tenant, reader.Key, `{ books(withDeleted: true) { id } }`, true)["error"].(string); !strings.Contains(e, "withDeleted") {
		t.Fatalf("a reader's withDeleted: %q", e)
	}

	// Restore (GraphQL's restoreBook on the second try: a restore of a live record changes nothing).
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Book/"+gone.ID+"/restore", key, nil).decode(t, &rec)
	if rec["deletedAt"] != nil || rec["title"] != "Lathe" {
		t.Fatalf("restored: %v", rec)
	}
	if g = d.gql(t, tenant, key, `mutation { restoreBook(id: "`+gone.ID+`") { id deletedAt } }`, false); g["restoreBook"].(map[string]any)["id"] != gone.ID {
		t.Fatalf("restoreBook: %v", g)
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Author/"+author.ID+"/relationships/WROTE", key, nil).decode(t, &rel)
	if got := ids(rel["items"]); !slices.Equal(got, sorted(kept.ID, gone.ID)) {
		t.Fatalf("the restored record's edges: %v", got)
	}
	d.do(t, http.StatusNotFound, "POST", "/api/v1/dynamic/Book/0190f0e0-0000-7000-8000-000000000000/restore", key, nil)

	// Subscriptions: bookDeleted for the delete, bookUpdated for the restore.
	events.await(t, 15*time.Second, "bookDeleted for the soft delete", func(l json.RawMessage) bool {
		return bytes.Contains(l, []byte(`"bookDeleted"`)) && bytes.Contains(l, []byte(gone.ID)) && !bytes.Contains(l, []byte(`"deletedAt":null`))
	})
	events.await(t, 15*time.Second, "bookUpdated for the restore", func(l json.RawMessage) bool {
		return bytes.Contains(l, []byte(`"bookUpdated"`)) && bytes.Contains(l, []byte(gone.ID)) && bytes.Contains(l, []byte(`"deletedAt":null`))
	})
	// Webhooks: entity.deleted, then entity.updated (one restore: the second changed nothing).
	deadline := time.Now().Add(60 * time.Second)
	for {
		mu.Lock()
		got := slices.Clone(hooked)
		mu.Unlock()
		if len(got) >= 2 {
			slices.Sort(got)
			if !slices.Equal(got, []string{"entity.deleted", "entity.updated"}) {
				t.Fatalf("webhook deliveries for the deleted record: %v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("webhook deliveries after 60 s: %v", got)
		}
		if err := wait(t.Context(), "webhook deliveries"); err != nil {
			t.Fatal(err)
		}
	}
}

func anySlice(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

// subscribe starts the graphql-ws client on the deployment with the
// subscriptions and waits until it is connected.
func subscribe(t *testing.T, d *deployment, key string, subs ...string) *lines {
	t.Helper()
	ws := "ws" + strings.TrimPrefix(d.URL, "http") + "/api/v1/dynamic-gql/ws"
	cmd := exec.CommandContext(t.Context(), "node", append([]string{filepath.Join(npmDir, "clients", "subscribe.mjs"), ws, key}, subs...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	events := readLines(out)
	events.await(t, 30*time.Second, "the graphql-ws client to connect", func(l json.RawMessage) bool {
		return bytes.Contains(l, []byte(`"connected":true`))
	})
	return events
}

// History switched on for an existing entity, through the binary: every
// write (create, update, soft delete, restore; REST and GraphQL) is a
// version with its time, the key that wrote it and the fields it
// changed, read newest first in pages; reading it needs the read scope.
func TestHistoryThroughTheBinary(t *testing.T) {
	t.Parallel()
	d := local
	tenant, key := d.tenant(t)
	var s struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, library(false)).decode(t, &s)
	var before struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Author", key, map[string]any{"name": "Before"}).decode(t, &before)
	d.do(t, http.StatusOK, "PUT", "/api/v1/schemas/"+s.ID, key, library(true))
	var keys struct {
		Items []struct{ ID, Name string }
	}
	var writer struct{ ID, Key string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "writer", "scopes": []string{"entity:Author:*"}}).decode(t, &writer)
	_ = keys

	var a struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Author", writer.Key, map[string]any{"name": "Octavia", "born": 1947}).decode(t, &a)
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Author/"+a.ID, writer.Key, map[string]any{"name": "Octavia E. Butler", "born": 1947})
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Author/"+a.ID, writer.Key, map[string]any{"born": 1947}) // no change: no version
	d.gql(t, tenant, writer.Key, `mutation { updateAuthor(id: "`+a.ID+`", input: {born: 1946}) { id } }`, false)
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Author/"+a.ID, writer.Key, nil)
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Author/"+a.ID+"/restore", writer.Key, nil)

	type version struct {
		ID, Op, At, KeyID, UserID string
		Changed                   []string
		Record                    map[string]any
	}
	type page struct {
		Items      []version
		NextCursor string
	}
	var all []version
	cursor := ""
	for range 10 {
		var p page
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Author/"+a.ID+"/history?limit=2&cursor="+cursor, key, nil).decode(t, &p)
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			break
		}
		cursor = p.NextCursor
	}
	want := []struct {
		op      string
		changed []string
	}{
		{"restore", []string{"deletedAt"}},
		{"delete", []string{"deletedAt"}},
		{"update", []string{"born"}},
		{"update", []string{"name"}},
		{"create", []string{"born", "name"}},
	}
	if len(all) != len(want) {
		t.Fatalf("history has %d versions, want %d: %+v", len(all), len(want), all)
	}
	for i, w := range want {
		v := all[i]
		if v.Op != w.op || !slices.Equal(v.Changed, w.changed) || v.KeyID != writer.ID || v.At == "" || v.Record["id"] != a.ID {
			t.Fatalf("version %d is %+v, want op %s changing %v by key %s", i, v, w.op, w.changed, writer.ID)
		}
	}
	if all[2].Record["born"] != float64(1946) || all[3].Record["name"] != "Octavia E. Butler" {
		t.Fatalf("versions do not hold the records as written: %+v", all)
	}

	// GraphQL: the same versions, paged with first and after.
	gh := d.gql(t, tenant, key, `{ authorHistory(id: "`+a.ID+`", first: 3) { __typename nextCursor items { op changed keyId at record } } }`, false)
	h1 := gh["authorHistory"].(map[string]any)
	cur, _ := h1["nextCursor"].(string)
	if h1["__typename"] != "AuthorHistory" || cur == "" {
		t.Fatalf("authorHistory first page: %v", h1)
	}
	gh = d.gql(t, tenant, key, `{ authorHistory(id: "`+a.ID+`", first: 3, after: "`+cur+`") { nextCursor items { op changed keyId record } } }`, false)
	h2 := gh["authorHistory"].(map[string]any)
	if h2["nextCursor"] != nil {
		t.Fatalf("authorHistory last page has a next cursor: %v", h2)
	}
	gv := append(h1["items"].([]any), h2["items"].([]any)...)
	if len(gv) != len(want) {
		t.Fatalf("GraphQL history has %d versions, want %d: %v", len(gv), len(want), gv)
	}
	for i, w := range want {
		v := gv[i].(map[string]any)
		var changed []string
		for _, c := range v["changed"].([]any) {
			changed = append(changed, c.(string))
		}
		if v["op"] != w.op || !slices.Equal(changed, w.changed) || v["keyId"] != writer.ID || v["record"].(map[string]any)["id"] != a.ID {
			t.Fatalf("GraphQL version %d is %v, want op %s changing %v", i, v, w.op, w.changed)
		}
	}
	if e := d.gql(t, tenant, key, `{ authorHistory(id: "`+a.ID+`", first: 0) { nextCursor } }`, true)["error"].(string); !strings.Contains(e, "first") {
		t.Fatalf("first: 0 answered %q", e)
	}
	if e := d.gql(t, tenant, key, `{ authorHistory(id: "`+a.ID+`", after: "\u0000\u00ff") { nextCursor } }`, true)["error"].(string); !strings.Contains(e, "cursor") {
		t.Fatalf("a bad cursor answered %q", e)
	}

	// A record from before history was switched on has none until its next write.
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Author/"+before.ID+"/history", key, nil)
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Author/"+before.ID, key, map[string]any{"born": 1900})
	var p page
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Author/"+before.ID+"/history", key, nil).decode(t, &p)
	if len(p.Items) != 1 || p.Items[0].Op != "update" || !slices.Equal(p.Items[0].Changed, []string{"born"}) {
		t.Fatalf("history of a record written before history was on: %+v", p)
	}

	// Scopes and bad input.
	var noRead struct{ Key string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "w", "scopes": []string{"entity:Author:create"}}).decode(t, &noRead)
	d.do(t, http.StatusForbidden, "GET", "/api/v1/dynamic/Author/"+a.ID+"/history", noRead.Key, nil)
	d.do(t, http.StatusBadRequest, "GET", "/api/v1/dynamic/Author/"+a.ID+"/history?limit=0", key, nil)
	d.do(t, http.StatusBadRequest, "GET", "/api/v1/dynamic/Author/"+a.ID+"/history?cursor=%00%ff", key, nil)
	d.do(t, http.StatusBadRequest, "GET", "/api/v1/dynamic/Book/"+a.ID+"/history", key, nil)
}

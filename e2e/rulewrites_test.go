package e2e

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// runJob submits a batch job as cred and awaits its end.
func runJob(t *testing.T, d *deployment, cred string, body map[string]any) map[string]any {
	t.Helper()
	id := d.do(t, http.StatusAccepted, "POST", "/api/v1/jobs", cred, body).body(t)["id"].(string)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		j := d.do(t, http.StatusOK, "GET", "/api/v1/jobs/"+id, cred, nil).body(t)
		switch j["status"] {
		case "succeeded", "failed", "cancelled":
			return j
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("job %s still %v after 2 minutes", id, j["status"])
		}
	}
}

// batchFailures returns "index:code:field" of a rejected batch's failures.
func batchFailures(t *testing.T, r *response) []string {
	t.Helper()
	var res struct {
		Failed []struct {
			Index int
			Error struct{ Code, Field string }
		}
		SuccessCount int
	}
	r.decode(t, &res)
	var out []string
	for _, f := range res.Failed {
		out = append(out, fmt.Sprintf("%d:%s:%s", f.Index, f.Error.Code, f.Error.Field))
	}
	return out
}

// Every write path under the member role's rules, through the dds binary
// with user tokens: batches, upserts, nested creates, edge writes and
// restores apply presets, checks and field lists; a forbidden item writes
// nothing; hidden records are not found and never revealed.
func TestRulesScenarioWritePaths(t *testing.T) {
	t.Parallel()
	w := newRulesWorld(t)
	d := w.d
	rec := func(title string) map[string]any {
		return d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo[title], w.admin, nil).body(t)
	}
	count := func(where map[string]any) float64 {
		return d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/query", w.admin, map[string]any{"where": where, "includeCount": true, "limit": 1}).body(t)["count"].(float64)
	}
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.admin, map[string]any{"code": "A1"})

	t.Run("batch create", func(t *testing.T) {
		var ok struct {
			Successful []map[string]any
		}
		d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"items": []any{
			map[string]any{"title": "bb1", "ownerId": "mallory"}, map[string]any{"title": "bb2"}}}).decode(t, &ok)
		if len(ok.Successful) != 2 || ok.Successful[0]["ownerId"] != "bob" || ok.Successful[1]["ownerId"] != "bob" {
			t.Fatalf("batch create presets: %v", ok.Successful)
		}
		// One item writing a field outside fields.write, or failing
		// create.check: the item is named, nothing is written.
		r := d.send(t, "POST", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"items": []any{
			map[string]any{"title": "bx1"}, map[string]any{"title": "bx2", "priority": 9}}})
		if got := batchFailures(t, r); r.Status != 400 || !slices.Equal(got, []string{"1:FORBIDDEN:priority"}) {
			t.Fatalf("batch writing a forbidden field: %d %v %s", r.Status, got, r.Body)
		}
		r = d.send(t, "POST", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"items": []any{
			map[string]any{"title": "bx1"}, map[string]any{"title": "bx2"}, map[string]any{"title": "bx3", "done": true}}})
		if got := batchFailures(t, r); r.Status != 400 || !slices.Equal(got, []string{"2:FORBIDDEN:rules.Todo.create.check"}) {
			t.Fatalf("batch with an item failing create.check: %d %v %s", r.Status, got, r.Body)
		}
		if n := count(map[string]any{"title": map[string]any{"$in": []any{"bx1", "bx2", "bx3"}}}); n != 0 {
			t.Fatalf("a rejected batch wrote %v records", n)
		}
		// GraphQL's batch create is the same door.
		data, errs := gql(t, d, w.tenantID, w.bob, `mutation { batchCreateTodo(input: [{title: "gx1"}, {title: "gx2", done: true}]) { successCount failed { index error { code field } } } }`)
		if len(errs) > 0 || fmt.Sprint(data["batchCreateTodo"]) != "map[failed:[map[error:map[code:FORBIDDEN field:rules.Todo.create.check] index:1]] successCount:0]" {
			t.Fatalf("GraphQL batch create with a failing check: %v %v", data, errs)
		}
		if n := count(map[string]any{"title": "gx1"}); n != 0 {
			t.Fatalf("a rejected GraphQL batch wrote %v records", n)
		}
	})

	t.Run("batch update and delete", func(t *testing.T) {
		// b1 is bob's; a2 is shared with him (readable, not his to change);
		// a1 is hidden: every item but the first fails, nothing is written.
		r := d.send(t, "PATCH", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"items": []any{
			map[string]any{"id": w.todo["b1"], "data": map[string]any{"title": "b1!"}},
			map[string]any{"id": w.todo["a2"], "data": map[string]any{"title": "mine"}},
			map[string]any{"id": w.todo["a1"], "data": map[string]any{"title": "mine"}}}})
		if got := batchFailures(t, r); r.Status != 400 || !slices.Equal(got, []string{"1:NOT_FOUND:", "2:NOT_FOUND:"}) {
			t.Fatalf("batch update of others' todos: %d %v", r.Status, got)
		}
		if rec("b1")["title"] != "b1" || rec("a2")["title"] != "a2" {
			t.Fatal("a rejected batch update wrote")
		}
		r = d.send(t, "PATCH", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"items": []any{
			map[string]any{"id": w.todo["b1"], "data": map[string]any{"ownerId": "alice"}}}})
		if got := batchFailures(t, r); !slices.Equal(got, []string{"0:FORBIDDEN:rules.Todo.update.check"}) || rec("b1")["ownerId"] != "bob" {
			t.Fatalf("batch update giving a todo away: %v", got)
		}
		r = d.send(t, "DELETE", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"ids": []any{w.todo["b1"], w.todo["a2"]}})
		if got := batchFailures(t, r); !slices.Equal(got, []string{"1:NOT_FOUND:"}) {
			t.Fatalf("batch delete of a shared todo: %d %v", r.Status, got)
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["b1"], w.bob, nil)
	})

	t.Run("GraphQL batch update and delete", func(t *testing.T) {
		// b1 is bob's, a1 hidden from him, a2 shared with him (readable,
		// not his to change): the batch names each refused item by its
		// index and writes nothing, not even bob's own.
		res := func(data map[string]any, op string) string {
			return fmt.Sprint(data[op])
		}
		data, errs := gql(t, d, w.tenantID, w.bob, fmt.Sprintf(`mutation { batchUpdateTodo(input: [
			{id: %q, data: {title: "b1 by gql"}}, {id: %q, data: {title: "mine"}}, {id: %q, data: {title: "mine"}}]) {
			successCount failed { index error { code } } } }`, w.todo["b1"], w.todo["a1"], w.todo["a2"]))
		if len(errs) > 0 || res(data, "batchUpdateTodo") != "map[failed:[map[error:map[code:NOT_FOUND] index:1] map[error:map[code:NOT_FOUND] index:2]] successCount:0]" {
			t.Fatalf("GraphQL batch update of others' todos: %v %v", data, errs)
		}
		if rec("b1")["title"] != "b1" || rec("a1")["title"] != "a1" || rec("a2")["title"] != "a2" {
			t.Fatal("a refused GraphQL batch update wrote")
		}
		// update.check per item: giving b1 away fails, named by its rule.
		data, errs = gql(t, d, w.tenantID, w.bob, fmt.Sprintf(`mutation { batchUpdateTodo(input: [{id: %q, data: {ownerId: "alice"}}]) {
			successCount failed { index error { code field } } } }`, w.todo["b1"]))
		if len(errs) > 0 || res(data, "batchUpdateTodo") != "map[failed:[map[error:map[code:FORBIDDEN field:rules.Todo.update.check] index:0]] successCount:0]" || rec("b1")["ownerId"] != "bob" {
			t.Fatalf("GraphQL batch update giving a todo away: %v %v", data, errs)
		}
		data, errs = gql(t, d, w.tenantID, w.bob, fmt.Sprintf(`mutation { batchDeleteTodo(ids: [%q, %q]) { successCount failed { index error { code } } } }`, w.todo["b1"], w.todo["a2"]))
		if len(errs) > 0 || res(data, "batchDeleteTodo") != "map[failed:[map[error:map[code:NOT_FOUND] index:1]] successCount:0]" {
			t.Fatalf("GraphQL batch delete of a shared todo: %v %v", data, errs)
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["b1"], w.bob, nil)
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.admin, nil)
	})

	t.Run("upsert", func(t *testing.T) {
		up := func(cred string, items ...any) *response {
			return d.send(t, "POST", "/api/v1/dynamic/Todo/upsert", cred, map[string]any{"onConflict": "code", "items": items})
		}
		// Insert side: preset and check.
		r := up(w.bob, map[string]any{"code": "B9", "title": "new", "ownerId": "mallory"})
		var res struct {
			Successful   []map[string]any
			CreatedCount int
		}
		r.decode(t, &res)
		if r.Status != 200 || res.CreatedCount != 1 || res.Successful[0]["ownerId"] != "bob" {
			t.Fatalf("upsert insert as bob: %d %s", r.Status, r.Body)
		}
		if got := batchFailures(t, up(w.bob, map[string]any{"code": "B10", "title": "done", "done": true})); !slices.Equal(got, []string{"0:FORBIDDEN:rules.Todo.create.check"}) {
			t.Fatalf("upsert insert failing create.check: %v", got)
		}
		// Update side: bob's own record is updated.
		r = up(w.bob, map[string]any{"code": "B9", "title": "newer"})
		if r.decode(t, &res); r.Status != 200 || res.CreatedCount != 0 || res.Successful[0]["title"] != "newer" {
			t.Fatalf("upsert update of his own: %d %s", r.Status, r.Body)
		}
		// Probing: alice's hidden A1 is neither updated nor revealed, and
		// the batch around it writes nothing.
		r = up(w.bob, map[string]any{"code": "B11", "title": "fine"}, map[string]any{"code": "A1", "title": "stolen"})
		if got := batchFailures(t, r); r.Status != 400 || !slices.Equal(got, []string{"1:CONFLICT:code"}) {
			t.Fatalf("upsert onto a hidden record: %d %v", r.Status, got)
		}
		if strings.Contains(string(r.Body), w.todo["a1"]) || strings.Contains(string(r.Body), "a1") {
			t.Fatalf("the upsert revealed the hidden record: %s", r.Body)
		}
		if rec("a1")["title"] != "a1" || count(map[string]any{"code": "B11"}) != 0 {
			t.Fatal("an upsert onto a hidden record wrote")
		}
		// GraphQL upsert: the same answer.
		if _, errs := gql(t, d, w.tenantID, w.bob, `mutation { upsertTodo(input: {code: "A1", title: "stolen"}, onConflict: {field: "code"}) { id title } }`); len(errs) == 0 || !strings.Contains(fmt.Sprint(errs), "CONFLICT") {
			t.Fatalf("GraphQL upsert onto a hidden record: %v", errs)
		}
		data, errs := gql(t, d, w.tenantID, w.alice, `mutation { batchUpsertTodo(input: [{code: "A1", title: "a1 by upsert"}], onConflict: {field: "code"}) { successCount } }`)
		if len(errs) > 0 || fmt.Sprint(data) != "map[batchUpsertTodo:map[successCount:1]]" || rec("a1")["title"] != "a1 by upsert" {
			t.Fatalf("GraphQL batch upsert of her own: %v %v", data, errs)
		}
		d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.admin, map[string]any{"title": "a1"})
	})

	t.Run("nested create", func(t *testing.T) {
		// Alice creates a todo shared with bob: preset owner, edge written.
		c := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", w.alice, map[string]any{"title": "n1", "ownerId": "bob",
			"sharedWith": map[string]any{"connect": []any{map[string]any{"id": w.bobU}}}}).body(t)
		if c["ownerId"] != "alice" {
			t.Fatalf("nested create preset: %v", c)
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+c["id"].(string), w.bob, nil) // shared with him
		// Connecting a todo bob cannot see (a1) or may not change (a2, shared
		// with him) from the User side: 404 naming the path, nothing written.
		for _, title := range []string{"a1", "a2"} {
			r := d.send(t, "POST", "/api/v1/dynamic/User", w.bob, map[string]any{"uid": "probe-" + title,
				"sharedTodos": map[string]any{"connect": []any{map[string]any{"id": w.todo[title]}}}})
			if code, fields := errorCode(t, r); r.Status != 404 || code != "NOT_FOUND" || !slices.Equal(fields, []string{"sharedTodos.connect[0].id"}) {
				t.Fatalf("connecting %s: %d %s", title, r.Status, r.Body)
			}
		}
		// A nested todo gets its entity's preset and check.
		r := d.send(t, "POST", "/api/v1/dynamic/User", w.bob, map[string]any{"uid": "nested-done",
			"sharedTodos": map[string]any{"create": []any{map[string]any{"title": "nd", "done": true}}}})
		if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Equal(fields, []string{"sharedTodos.create[0]"}) || !strings.Contains(string(r.Body), "rules.Todo.create.check") {
			t.Fatalf("nested create failing create.check: %d %s", r.Status, r.Body)
		}
		u := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/User", w.bob, map[string]any{"uid": "nested-ok",
			"sharedTodos": map[string]any{"create": []any{map[string]any{"title": "nok", "ownerId": "alice"}}}}).body(t)
		var users []map[string]any
		d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/User/query", w.admin, map[string]any{"where": map[string]any{"uid": map[string]any{"$in": []any{"probe-a1", "probe-a2", "nested-done"}}}}).decode(t, &struct{ Items *[]map[string]any }{&users})
		if len(users) != 0 || count(map[string]any{"title": "nd"}) != 0 {
			t.Fatalf("refused nested creates wrote: %v", users)
		}
		if got := d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/query", w.admin, map[string]any{"where": map[string]any{"title": "nok"}}).body(t)["items"].([]any); len(got) != 1 || got[0].(map[string]any)["ownerId"] != "bob" {
			t.Fatalf("nested todo preset: %v (user %v)", got, u["id"])
		}
		// A batch whose second item connects a hidden todo: items[1] named, nothing written.
		r = d.send(t, "POST", "/api/v1/dynamic/Todo/batch", w.bob, map[string]any{"items": []any{
			map[string]any{"title": "nb1"}, map[string]any{"title": "nb2", "sharedWith": map[string]any{"connect": []any{map[string]any{"id": "00000000-0000-0000-0000-000000000001"}}}}}})
		if got := batchFailures(t, r); !slices.Equal(got, []string{"1:NOT_FOUND:sharedWith.connect[0].id"}) || count(map[string]any{"title": "nb1"}) != 0 {
			t.Fatalf("batch nested create with a missing connect: %v", got)
		}
	})

	t.Run("edges", func(t *testing.T) {
		edge := func(todo string) string {
			return "/api/v1/dynamic/Todo/" + w.todo[todo] + "/relationships/sharedWith"
		}
		// Adding an edge from a hidden todo, or from one shared with him
		// (readable, outside update.where): 404.
		d.do(t, http.StatusNotFound, "POST", edge("a1"), w.bob, map[string]any{"targetId": w.bobU})
		d.do(t, http.StatusNotFound, "POST", edge("a2"), w.bob, map[string]any{"targetId": w.aliceU})
		// Removing himself from a2 is changing alice's todo: 404, kept.
		d.do(t, http.StatusNotFound, "DELETE", edge("a2")+"/"+w.bobU, w.bob, nil)
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.bob, nil)
		// The owner shares and unshares.
		d.do(t, http.StatusCreated, "POST", edge("b1"), w.bob, map[string]any{"targetId": w.aliceU})
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["b1"], w.alice, nil)
		// Updating an edge's properties changes its source's relationships:
		// only the source's owner may; a hidden or shared source is 404.
		note := func(todo, user string) any { // the admin's PATCH merging nothing reads the edge
			items := d.do(t, http.StatusOK, "PATCH", edge(todo)+"/"+user, w.admin, map[string]any{"properties": map[string]any{}}).body(t)["items"].([]any)
			if len(items) != 1 {
				t.Fatalf("edges %s → %s: %v", todo, user, items)
			}
			p, _ := items[0].(map[string]any)["properties"].(map[string]any)
			return p["note"]
		}
		d.do(t, http.StatusNotFound, "PATCH", edge("a2")+"/"+w.bobU, w.bob, map[string]any{"properties": map[string]any{"note": "bob's"}})
		d.do(t, http.StatusNotFound, "PATCH", edge("c1")+"/"+w.aliceU, w.alice, map[string]any{"properties": map[string]any{"note": "alice's"}})
		d.do(t, http.StatusNotFound, "PATCH", edge("c1")+"/"+w.aliceU, w.bob, map[string]any{"properties": map[string]any{"note": "bob's"}})
		if note("a2", w.bobU) != nil || note("c1", w.aliceU) != nil {
			t.Fatal("a refused edge PATCH wrote")
		}
		d.do(t, http.StatusOK, "PATCH", edge("a2")+"/"+w.bobU, w.alice, map[string]any{"properties": map[string]any{"note": "read this"}})
		if got := note("a2", w.bobU); got != "read this" {
			t.Fatalf("the owner's edge PATCH: note %v", got)
		}
		d.do(t, http.StatusNoContent, "DELETE", edge("a2")+"/"+w.bobU, w.alice, nil)
		d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+w.todo["a2"], w.bob, nil)
	})

	t.Run("restore", func(t *testing.T) {
		d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.alice, nil)
		// Bob cannot restore alice's todo, nor learn it exists.
		d.do(t, http.StatusNotFound, "POST", "/api/v1/dynamic/Todo/"+w.todo["a1"]+"/restore", w.bob, nil)
		d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.alice, nil)
		got := d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Todo/"+w.todo["a1"]+"/restore", w.alice, nil).body(t)
		if got["title"] != "a1" {
			t.Fatalf("restore: %v", got)
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.alice, nil)
	})

	t.Run("jobs", func(t *testing.T) {
		// A bulk update as bob touches only the todos he may update.
		bobs := count(map[string]any{"ownerId": "bob"})
		j := runJob(t, d, w.bob, map[string]any{"type": "update", "entity": "Todo", "all": true, "set": map[string]any{"org": "bulk"}})
		if j["status"] != "succeeded" || count(map[string]any{"org": "bulk"}) != bobs || rec("a2")["org"] != "acme" {
			t.Fatalf("bulk update as bob: %v (bob owns %v)", j, bobs)
		}
		// One record failing update.check fails the job; nothing is written.
		j = runJob(t, d, w.bob, map[string]any{"type": "update", "entity": "Todo", "all": true, "set": map[string]any{"ownerId": "alice"}})
		if j["status"] != "failed" || !strings.Contains(fmt.Sprint(j["error"]), "rules.Todo.update.check") || count(map[string]any{"ownerId": "bob"}) != bobs {
			t.Fatalf("bulk update giving todos away: %v", j)
		}
		// A field outside fields.write is refused when the job is created.
		r := d.send(t, "POST", "/api/v1/jobs", w.bob, map[string]any{"type": "update", "entity": "Todo", "all": true, "set": map[string]any{"priority": 1}})
		if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Equal(fields, []string{"priority"}) {
			t.Fatalf("bulk update of a forbidden field: %d %s", r.Status, r.Body)
		}
		// A bulk delete as bob cannot reach alice's todos, nor count them.
		j = runJob(t, d, w.bob, map[string]any{"type": "delete", "entity": "Todo", "where": map[string]any{"ownerId": "alice"}})
		if j["status"] != "succeeded" || fmt.Sprint(j["progress"]) != "map[processed:0 total:0]" {
			t.Fatalf("bulk delete of alice's todos as bob: %v", j)
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+w.todo["a1"], w.admin, nil)
	})

	t.Run("imports", func(t *testing.T) {
		ndjson := func(rows ...string) []byte { return []byte(strings.Join(rows, "\n") + "\n") }
		imp := func(cred, file string) map[string]any {
			return runJob(t, d, cred, map[string]any{"type": "import", "entity": "Todo", "fileId": file, "format": "ndjson"})
		}
		// failed is "index:code:field:title" of each item a job's result
		// lists, and its failureCount.
		failed := func(j map[string]any) (string, any) {
			res, _ := j["result"].(map[string]any)
			var out []string
			list, _ := res["failed"].([]any)
			for _, f := range list {
				f := f.(map[string]any)
				e, _ := f["error"].(map[string]any)
				item, _ := f["item"].(map[string]any)
				out = append(out, fmt.Sprintf("%v:%v:%v:%v", f["index"], e["code"], e["field"], item["title"]))
			}
			return strings.Join(out, " "), res["failureCount"]
		}
		// Rows failing create.check: the job fails naming the rule and the
		// rows (by index, with the item, as a batch names its items), and
		// writes nothing, not even the good rows before them.
		bad := upload(t, d, w.bob, ndjson(`{"title": "i1"}`, `{"title": "i2", "ownerId": "mallory"}`, `{"title": "i3", "done": true}`, `{"title": "i3b", "done": true}`), nil)
		j := imp(w.bob, bad)
		if e, _ := j["error"].(map[string]any); j["status"] != "failed" || e["code"] != "FORBIDDEN" || e["field"] != "rules.Todo.create.check" || !strings.Contains(fmt.Sprint(e["message"]), "index 2") {
			t.Fatalf("import with rows failing create.check: %v", j)
		}
		if got, n := failed(j); got != "2:FORBIDDEN:rules.Todo.create.check:i3 3:FORBIDDEN:rules.Todo.create.check:i3b" || fmt.Sprint(n) != "2" {
			t.Fatalf("import with rows failing create.check: failed %s (%v of them), want items 2 and 3", got, n)
		}
		// A row writing a field outside fields.write: the field and the row
		// are named.
		bad = upload(t, d, w.bob, ndjson(`{"title": "i4"}`, `{"title": "i5", "priority": 3}`), nil)
		j = imp(w.bob, bad)
		if e, _ := j["error"].(map[string]any); j["status"] != "failed" || e["code"] != "FORBIDDEN" || e["field"] != "priority" || !strings.Contains(fmt.Sprint(e["message"]), "index 1") {
			t.Fatalf("import with a row writing a forbidden field: %v", j)
		}
		if got, n := failed(j); got != "1:FORBIDDEN:priority:i5" || fmt.Sprint(n) != "1" {
			t.Fatalf("import with a row writing a forbidden field: failed %s (%v of them), want item 1", got, n)
		}
		if n := count(map[string]any{"title": map[string]any{"$in": []any{"i1", "i2", "i3", "i3b", "i4", "i5"}}}); n != 0 {
			t.Fatalf("refused imports wrote %v records", n)
		}
		// A clean file: the preset makes every row bob's.
		good := upload(t, d, w.bob, ndjson(`{"title": "i6"}`, `{"title": "i7", "ownerId": "mallory"}`), nil)
		if j := imp(w.bob, good); j["status"] != "succeeded" || count(map[string]any{"title": map[string]any{"$in": []any{"i6", "i7"}}, "ownerId": "bob"}) != 2 {
			t.Fatalf("import as bob: %v", j)
		}
		// Alice cannot import from bob's file: it is not hers to read.
		d.do(t, http.StatusNotFound, "POST", "/api/v1/jobs", w.alice, map[string]any{"type": "import", "entity": "Todo", "fileId": good, "format": "ndjson"})
	})
}

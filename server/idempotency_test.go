package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/dds-project/dds/idempotency"
	"github.com/dds-project/dds/internal/testenv"
)

// A write sent with an Idempotency-Key runs once: the same key with the
// same body answers the first answer again (Idempotency-Replayed: true)
// and writes nothing; another body is 422; a key still running is 409;
// a key whose write committed but whose answer was lost says so; a key
// whose first request died before committing runs again. The key is
// marked committed in the write's own transaction.
func TestIdempotencyKey(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{
		map[string]any{"name": "Note", "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "unique": true},
		}},
	}})
	d := testenv.DB(t)
	count := func() string {
		return fmt.Sprint(app.Must(t, 200, "GET", "/api/v1/dynamic/Note?includeCount=true&limit=1", key, nil).JSON(t)["count"])
	}
	row := func(k string) (committed bool, status *int) {
		if err := d.QueryRow(`SELECT committed, status FROM dds.idempotency_keys WHERE tenant_id = $1 AND key = $2`, tenantID, k).Scan(&committed, &status); err != nil {
			t.Fatalf("key %s: %v", k, err)
		}
		return committed, status
	}

	first := app.Do(t, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "once"}, "Idempotency-Key", "create-1")
	if first.Status != http.StatusCreated {
		t.Fatalf("first create: %d %s", first.Status, first.Body)
	}
	again := app.Do(t, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "once"}, "Idempotency-Key", "create-1")
	if again.Status != http.StatusCreated || string(again.Body) != string(first.Body) || again.Header.Get("Idempotency-Replayed") != "true" {
		t.Fatalf("retry: %d %q (replayed %q), want the first answer %s", again.Status, again.Body, again.Header.Get("Idempotency-Replayed"), first.Body)
	}
	if n := count(); n != "1" {
		t.Fatalf("a retried create wrote %s records", n)
	}
	if committed, _ := row("create-1"); !committed {
		t.Fatal("the create's key is not marked committed")
	}

	cases := []struct {
		name, key, body string
		status          int
		want            string
	}{
		{"same key, another body", "create-1", `{"title":"other"}`, 422, "IDEMPOTENCY_KEY_REUSED"},
		{"a key too long", strings.Repeat("k", 256), `{"title":"x"}`, 400, "Idempotency-Key"},
		{"a key with a control byte", "a\tb", `{"title":"x"}`, 400, "Idempotency-Key"},
	}
	for _, c := range cases {
		r := app.Do(t, "POST", "/api/v1/dynamic/Note", key, c.body, "Idempotency-Key", c.key)
		if r.Status != c.status || !strings.Contains(string(r.Body), c.want) {
			t.Errorf("%s: %d %s, want %d naming %s", c.name, r.Status, r.Body, c.status, c.want)
		}
	}

	// A write that fails in the database commits nothing: its answer is
	// kept, its key not committed.
	dup := app.Do(t, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "once"}, "Idempotency-Key", "dup-1")
	if dup.Status != http.StatusConflict {
		t.Fatalf("duplicate title: %d %s", dup.Status, dup.Body)
	}
	if committed, status := row("dup-1"); committed || status == nil || *status != http.StatusConflict {
		t.Fatalf("a failed write's key: committed %v, status %v", committed, status)
	}

	// The states a crash leaves, written as the server would have left them.
	body := `{"title":"crash"}`
	hash := idempotency.Hash("POST", "/api/v1/dynamic/Note", []byte(body))
	for _, s := range []struct{ key, state string }{
		{"running", "now() + interval '1 minute', false"},
		{"committed-lost", "NULL, true"},
		{"died-before-commit", "now() - interval '1 second', false"},
	} {
		if _, err := d.Exec(`INSERT INTO dds.idempotency_keys (tenant_id, key, request_hash, lease_until, committed, expires_at)
			VALUES ($1, $2, $3, `+s.state+`, now() + interval '1 day')`, tenantID, s.key, hash); err != nil {
			t.Fatal(err)
		}
	}
	if r := app.Do(t, "POST", "/api/v1/dynamic/Note", key, body, "Idempotency-Key", "running"); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "still running") {
		t.Errorf("a key in flight: %d %s, want 409", r.Status, r.Body)
	}
	if r := app.Do(t, "POST", "/api/v1/dynamic/Note", key, body, "Idempotency-Key", "committed-lost"); r.Status != http.StatusConflict || !strings.Contains(string(r.Body), "committed") {
		t.Errorf("a committed key without its answer: %d %s, want 409 saying it committed", r.Status, r.Body)
	}
	if r := app.Do(t, "POST", "/api/v1/dynamic/Note", key, body, "Idempotency-Key", "died-before-commit"); r.Status != http.StatusCreated {
		t.Errorf("a key whose first request died before committing: %d %s, want the write to run", r.Status, r.Body)
	}

	// GraphQL mutations and batches alike.
	gql := `{"query":"mutation { createNote(input: {title: \"gql\"}) { id } }"}`
	g1 := app.Do(t, "POST", "/api/v1/dynamic-gql/"+tenantID, key, gql, "Idempotency-Key", "gql-1")
	g2 := app.Do(t, "POST", "/api/v1/dynamic-gql/"+tenantID, key, gql, "Idempotency-Key", "gql-1")
	if g1.Status != 200 || string(g1.Body) != string(g2.Body) || g2.Header.Get("Idempotency-Replayed") != "true" {
		t.Errorf("GraphQL mutation retried: %s then %s", g1.Body, g2.Body)
	}
	batch := map[string]any{"items": []any{map[string]any{"title": "b1"}, map[string]any{"title": "b2"}}}
	app.Do(t, "POST", "/api/v1/dynamic/Note/batch", key, batch, "Idempotency-Key", "batch-1")
	if r := app.Do(t, "POST", "/api/v1/dynamic/Note/batch", key, batch, "Idempotency-Key", "batch-1"); r.Header.Get("Idempotency-Replayed") != "true" {
		t.Errorf("batch retried: %d %s", r.Status, r.Body)
	}
	var titles []string
	var list struct{ Data []struct{ Title string } }
	_ = json.Unmarshal(app.Must(t, 200, "GET", "/api/v1/dynamic/Note?limit=100", key, nil).Body, &list)
	for _, n := range list.Data {
		titles = append(titles, n.Title)
	}
	if n := count(); n != "5" {
		t.Fatalf("after every retry: %s records %v, want 5 (once, crash, gql, b1, b2)", n, titles)
	}
}

package rest_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

var articles = map[string]any{"name": "articles", "entities": []any{
	map[string]any{"name": "Article", "fields": []any{
		map[string]any{"name": "slug", "type": "STRING", "unique": true},
		map[string]any{"name": "author", "type": "STRING", "indexed": true},
		map[string]any{"name": "labels", "type": "STRING", "list": true},
		map[string]any{"name": "body", "type": "TEXT", "searchable": true},
	}},
}}

// distinctWords is text of n different five-letter words: small as text,
// large as a tsvector (each distinct word is stored with its position).
func distinctWords(n int) string {
	var b strings.Builder
	w := []byte("aaaaa")
	for range n {
		b.Write(w)
		b.WriteByte(' ')
		for i := len(w) - 1; i >= 0; i-- {
			if w[i] < 'z' {
				w[i]++
				break
			}
			w[i] = 'a'
		}
	}
	return b.String()
}

func randomHex(t *testing.T, bytes int) string {
	t.Helper()
	b := make([]byte, bytes/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// Values Postgres cannot index are refused with a 400 naming the field,
// never a 500; values at the documented limits are stored.
func TestValuesBeyondIndexLimitsAre400(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	app.Schema(t, key, articles)

	cases := []struct {
		name  string
		body  map[string]any
		field string
	}{
		{"10 KB unique string", map[string]any{"slug": randomHex(t, 10_000)}, "slug"},
		{"10 KB indexed string", map[string]any{"author": randomHex(t, 10_000)}, "author"},
		{"10 KB list item", map[string]any{"labels": []string{"ok", randomHex(t, 10_000)}}, "labels"},
		{"2.7 MB searchable text", map[string]any{"body": strings.Repeat("lorem ipsum ", 225_000)}, "body"},
		// Under the byte cap, but its tsvector outgrows 1 MB: Postgres' own
		// refusal (54000) is mapped to the field.
		{"searchable text of 150,000 distinct words", map[string]any{"body": distinctWords(150_000)}, "body"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := app.Do(t, "POST", "/api/v1/dynamic/Article", key, c.body)
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %.300s", r.Status, r.Body)
			}
			details, _ := r.JSON(t)["error"].(map[string]any)["details"].([]any)
			if len(details) == 0 || details[0].(map[string]any)["field"] != c.field {
				t.Fatalf("want the error to name %q: %.300s", c.field, r.Body)
			}
		})
	}
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Article", key, map[string]any{
		"slug": randomHex(t, schema.MaxIndexedBytes), "author": randomHex(t, schema.MaxIndexedBytes),
		"labels": []string{randomHex(t, schema.MaxIndexedBytes)}, "body": distinctWords(50_000),
	})
	if n := app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Article", key, nil).JSON(t)["items"].([]any); len(n) != 1 {
		t.Fatalf("want exactly the one valid record stored, got %d", len(n))
	}
}

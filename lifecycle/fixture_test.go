package lifecycle_test

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/worker"
)

// stack is a DDS server and a worker in this process, on their own task
// queue and local file store.
type stack struct {
	app   *testenv.App
	cfg   *config.Config
	db    *sqlx.DB
	store storage.Driver
}

func newStack(t *testing.T) *stack {
	t.Helper()
	teststack.Need(t, "TEMPORAL_ADDRESS")
	cfg := testenv.Config(t)
	cfg.TemporalTaskQueue = "lifecycle-" + uuid.NewString()
	cfg.FileStorageDriver, cfg.FileStorageLocalDir = "local", t.TempDir()
	cfg.WebhookAllowPrivate = true
	app := testenv.NewServer(t, cfg) // sets cfg.PublicURL to the server's URL
	ctx, cancel := context.WithCancel(context.Background())
	w, err := worker.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; w.Close() })
	store, err := storage.Open(ctx, storage.FromConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	return &stack{app: app, cfg: cfg, db: testenv.DB(t), store: store}
}

// populate gives a tenant a schema with an entity, a relationship, a FILE
// field and a vector, records, an edge, files, a webhook (whose failed
// deliveries start retry workflows) and so events.
func (s *stack) populate(t *testing.T, key string, n int) {
	t.Helper()
	a := s.app
	a.Schema(t, key, map[string]any{"name": "docs", "entities": []any{map[string]any{"name": "Doc", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true, "searchable": true},
		map[string]any{"name": "pages", "type": "INTEGER"},
		map[string]any{"name": "tags", "type": "STRING", "list": true},
		map[string]any{"name": "meta", "type": "JSON"},
		map[string]any{"name": "at", "type": "TIMESTAMP"},
		map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 3},
		map[string]any{"name": "attachment", "type": "FILE"}}}},
		"relationships": []any{map[string]any{"name": "CITES", "from": "Doc", "to": "Doc",
			"properties": []any{map[string]any{"name": "weight", "type": "NUMBER"}}}}})
	a.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{"targetUrl": "https://127.0.0.1:9/hook",
		"eventTypes": []string{"entity.created"}})
	file := a.Upload(t, key, "a.txt", "text/plain", []byte("attachment of "+key[:16]))
	items := []any{}
	for i := range n {
		items = append(items, map[string]any{"title": fmt.Sprintf("doc %d", i), "pages": i, "tags": []string{"a", "b"},
			"meta": map[string]any{"i": i}, "at": "2026-01-02T03:04:05Z", "embedding": []float64{float64(i), 1, 0.5}, "attachment": file})
	}
	var created struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"successful"`
	}
	a.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Doc/batch", key, map[string]any{"items": items}).Decode(t, &created)
	if len(created.Items) < 2 {
		t.Fatalf("batch created %d docs", len(created.Items))
	}
	a.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Doc/"+created.Items[0].ID+"/relationships/CITES", key,
		map[string]any{"targetId": created.Items[1].ID, "properties": map[string]any{"weight": 0.5}})
}

// snapshot is a checksum of everything a tenant holds: each data table's
// rows, its control-plane rows, and its files' bytes.
func (s *stack) snapshot(t *testing.T, tenant string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var tables []struct {
		Schema string `db:"table_schema"`
		Name   string `db:"table_name"`
	}
	if err := s.db.Select(&tables, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema IN (SELECT 's_' || replace(id::text, '-', '') FROM dds.schemas WHERE tenant_id = $1)`, tenant); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		var sum string
		if err := s.db.Get(&sum, fmt.Sprintf(`SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t.id)), '') FROM %q.%q t`, tb.Schema, tb.Name)); err != nil {
			t.Fatal(err)
		}
		out["table "+tb.Name] = sum
	}
	for name, q := range map[string]string{
		"events":   `SELECT count(*) || ':' || coalesce(md5(string_agg(e.id::text || e.record::text, '|' ORDER BY e.seq)), '') FROM dds.events e WHERE tenant_id = $1`,
		"keys":     `SELECT count(*) || ':' || coalesce(md5(string_agg(k.id::text || coalesce(k.revoked_at::text, ''), '|' ORDER BY k.id)), '') FROM dds.api_keys k WHERE tenant_id = $1`,
		"webhooks": `SELECT count(*) || ':' || coalesce(md5(string_agg(w.id::text || w.target_url, '|' ORDER BY w.id)), '') FROM dds.webhooks w WHERE tenant_id = $1`,
		"schemas":  `SELECT count(*) || ':' || coalesce(md5(string_agg(x.id::text || x.definition::text, '|' ORDER BY x.id)), '') FROM dds.schemas x WHERE tenant_id = $1`,
		"tenant":   `SELECT count(*) || ':' || coalesce(md5(string_agg(x.name || coalesce(x.deleted_at::text, ''), '|')), '') FROM dds.tenants x WHERE id = $1`,
	} {
		var sum string
		if err := s.db.Get(&sum, q, tenant); err != nil {
			t.Fatal(err)
		}
		out[name] = sum
	}
	var keys []string
	if err := s.db.Select(&keys, `SELECT storage_key FROM dds.files WHERE tenant_id = $1 ORDER BY id`, tenant); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		out["file "+k] = s.object(t, k)
	}
	if len(out) < 8 {
		t.Fatalf("snapshot of tenant %s holds too little to compare: %v", tenant, out)
	}
	return out
}

// object is the SHA-256 of a stored object, or "missing".
func (s *stack) object(t *testing.T, key string) string {
	t.Helper()
	r, err := s.store.Open(context.Background(), key)
	if errors.Is(err, storage.ErrNotFound) {
		return "missing"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := sha256.New()
	if _, err := io.Copy(h, r); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// gone fails unless nothing of tenant is left: no data schema, no
// control-plane row, no stored object of those listed in keys.
func (s *stack) gone(t *testing.T, tenant string, pgSchemas, objects []string) {
	t.Helper()
	for _, pg := range pgSchemas {
		var n int
		if err := s.db.Get(&n, `SELECT count(*) FROM pg_namespace WHERE nspname = $1`, pg); err != nil || n != 0 {
			t.Errorf("data schema %s is still there (%v)", pg, err)
		}
	}
	for _, table := range []string{"tenants", "api_keys", "schemas", "webhooks", "webhook_deliveries", "events", "files", "jobs", "tenant_archives"} {
		col := "tenant_id"
		if table == "tenants" {
			col = "id"
		}
		var n int
		if err := s.db.Get(&n, fmt.Sprintf(`SELECT count(*) FROM dds.%s WHERE %s = $1`, table, col), tenant); err != nil || n != 0 {
			t.Errorf("dds.%s still has %d rows of the tenant (%v)", table, n, err)
		}
	}
	for _, k := range objects {
		if got := s.object(t, k); got != "missing" {
			t.Errorf("object %s is still stored", k)
		}
	}
}

func (s *stack) pgSchemas(t *testing.T, tenant string) []string {
	t.Helper()
	var out []string
	if err := s.db.Select(&out, `SELECT 's_' || replace(id::text, '-', '') FROM dds.schemas WHERE tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	return out
}

func (s *stack) objects(t *testing.T, tenant string) []string {
	t.Helper()
	var out []string
	if err := s.db.Select(&out, `SELECT storage_key FROM dds.files WHERE tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatal("the tenant has no files to delete")
	}
	return out
}

// operator sends a request with the operator token.
func (s *stack) operator(t *testing.T, want int, method, path string, body any) *testenv.Response {
	t.Helper()
	return s.app.Must(t, want, method, path, testenv.OperatorToken, body)
}

// waitJob polls a tenant job until it ends.
func (s *stack) waitJob(t *testing.T, id string) *lifecycle.Job {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var j lifecycle.Job
		s.operator(t, http.StatusOK, "GET", "/api/v1/tenant-jobs/"+id, nil).Decode(t, &j)
		if j.Status != lifecycle.StatusQueued && j.Status != lifecycle.StatusRunning {
			return &j
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenant job %s did not end: %+v", id, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func diff(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if after[k] != v {
			d = append(d, fmt.Sprintf("%s: %s -> %s", k, v, after[k]))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "new "+k)
		}
	}
	sort.Strings(d)
	return strings.Join(d, "\n")
}

// zipOf is a zip archive of the named entries.
func zipOf(t *testing.T, entries map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for name, body := range entries {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(w, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

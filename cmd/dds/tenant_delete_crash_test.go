package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/schema"
)

// TestTenantDeleteSurvivesWorkerKill deletes a tenant on `dds worker`
// processes: the first worker is killed with SIGKILL in the middle of
// the delete (while it removes the tenant's events), a second one resumes
// the job, and the tenant is gone while another tenant keeps everything:
// its tables, control-plane rows and stored files checksum the same
// before and after.
func TestTenantDeleteSurvivesWorkerKill(t *testing.T) {
	t.Parallel() // its own task queue, processes, tenants and file store; most of its time is waits
	rig := newWorkerRig(t, "tenant-delete-crash")
	d, cfg, app := rig.d, rig.cfg, rig.app
	startWorker := func() *exec.Cmd { return rig.startWorker(t) }
	first := startWorker()

	def := map[string]any{"name": "shop", "entities": []any{map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true}}}}}
	gone, goneKey := app.Tenant(t)
	kept, keptKey := app.Tenant(t)
	schemaID := app.Schema(t, goneKey, def)["id"].(string)
	app.Schema(t, keptKey, def)
	for _, key := range []string{goneKey, keptKey} {
		app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "p"})
		app.Upload(t, key, "f.txt", "text/plain", []byte("bytes of "+key))
	}
	// A long outbox, so the delete is still at work when the worker dies.
	const events = 200_000
	d.MustExec(`INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record, relayed_at)
		SELECT $1, $2, 'shop', 'entity.created', 'Product', gen_random_uuid(), jsonb_build_object('n', g), now()
		FROM generate_series(1, $3) g`, gone, schemaID, events)
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := d.Get(&n, q, args...); err != nil {
			t.Fatal(err)
		}
		return n
	}
	keptBefore := tenantChecksums(t, d, kept, cfg.FileStorageLocalDir)
	goneFiles := tenantChecksums(t, d, gone, cfg.FileStorageLocalDir)

	var j lifecycle.Job
	app.Must(t, http.StatusAccepted, "DELETE", "/api/v1/tenants/"+gone, testenv.OperatorToken, nil).Decode(t, &j)
	if r := app.Do(t, "GET", "/api/v1/dynamic/Product", goneKey, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("the deleted tenant's key answered %d", r.Status)
	}
	poll := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			app.Must(t, http.StatusOK, "GET", "/api/v1/tenant-jobs/"+j.ID, testenv.OperatorToken, nil).Decode(t, &j)
			if done() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s; job %+v", what, j)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	goneBefore := count(`SELECT count(*) FROM dds.events WHERE tenant_id = $1`, gone)
	poll("the worker has removed some of the events", func() bool {
		return j.Step != nil && *j.Step == lifecycle.StepEvents && count(`SELECT count(*) FROM dds.events WHERE tenant_id = $1`, gone) < goneBefore ||
			j.Status != "queued" && j.Status != "running"
	})
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	left := count(`SELECT count(*) FROM dds.events WHERE tenant_id = $1`, gone)
	if j.Status != "running" || left == 0 {
		t.Fatalf("the delete got past its events (%s, %d left) before the worker could be killed; make the outbox longer", j.Status, left)
	}
	t.Logf("killed the worker with %d of %d events left", left, events)
	startWorker()
	poll("the delete ends", func() bool { return j.Status != "queued" && j.Status != "running" })
	if j.Status != "succeeded" {
		t.Fatalf("delete after the crash: %+v", j)
	}
	for _, q := range []string{
		`SELECT count(*) FROM dds.events WHERE tenant_id = $1`,
		`SELECT count(*) FROM dds.tenants WHERE id = $1`,
		`SELECT count(*) FROM dds.files WHERE tenant_id = $1`,
		`SELECT count(*) FROM dds.api_keys WHERE tenant_id = $1`,
	} {
		if got := count(q, gone); got != 0 {
			t.Errorf("%s = %d, want 0", q, got)
		}
	}
	if got := count(`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, schema.PgSchemaName(schemaID)); got != 0 {
		t.Errorf("the deleted tenant's data schema is still there")
	}
	for k := range goneFiles {
		if key, ok := strings.CutPrefix(k, "file "); ok {
			if _, err := os.Stat(filepath.Join(cfg.FileStorageLocalDir, filepath.FromSlash(key))); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the deleted tenant's file %s is still stored (%v)", key, err)
			}
		}
	}
	if after := tenantChecksums(t, d, kept, cfg.FileStorageLocalDir); !maps.Equal(after, keptBefore) {
		t.Errorf("the other tenant changed:\nbefore %v\nafter  %v", keptBefore, after)
	}
	app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Product", keptKey, nil)
}

// tenantChecksums is a checksum of everything a tenant holds: each table
// of its data schemas, its control-plane rows, and the bytes of its files
// in the local storage directory dir.
func tenantChecksums(t *testing.T, d *sqlx.DB, tenant, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var tables []struct {
		Schema string `db:"table_schema"`
		Name   string `db:"table_name"`
	}
	if err := d.Select(&tables, `SELECT table_schema, table_name FROM information_schema.tables
		WHERE table_schema IN (SELECT 's_' || replace(id::text, '-', '') FROM dds.schemas WHERE tenant_id = $1)`, tenant); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		var sum string
		if err := d.Get(&sum, fmt.Sprintf(`SELECT count(*) || ':' || coalesce(md5(string_agg(t::text, '|' ORDER BY t.id)), '') FROM %q.%q t`, tb.Schema, tb.Name)); err != nil {
			t.Fatal(err)
		}
		out["table "+tb.Name] = sum
	}
	for name, q := range map[string]string{
		"events":  `SELECT count(*) || ':' || coalesce(md5(string_agg(e.id::text || e.record::text, '|' ORDER BY e.seq)), '') FROM dds.events e WHERE tenant_id = $1`,
		"keys":    `SELECT count(*) || ':' || coalesce(md5(string_agg(k.id::text || coalesce(k.revoked_at::text, ''), '|' ORDER BY k.id)), '') FROM dds.api_keys k WHERE tenant_id = $1`,
		"schemas": `SELECT count(*) || ':' || coalesce(md5(string_agg(x.id::text || x.definition::text, '|' ORDER BY x.id)), '') FROM dds.schemas x WHERE tenant_id = $1`,
		"files":   `SELECT count(*) || ':' || coalesce(md5(string_agg(f.id::text || f.storage_key, '|' ORDER BY f.id)), '') FROM dds.files f WHERE tenant_id = $1`,
		"tenant":  `SELECT count(*) || ':' || coalesce(md5(string_agg(x.name || coalesce(x.deleted_at::text, ''), '|')), '') FROM dds.tenants x WHERE id = $1`,
	} {
		var sum string
		if err := d.Get(&sum, q, tenant); err != nil {
			t.Fatal(err)
		}
		out[name] = sum
	}
	var keys []string
	if err := d.Select(&keys, `SELECT storage_key FROM dds.files WHERE tenant_id = $1 ORDER BY id`, tenant); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(k)))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		out["file "+k] = hex.EncodeToString(sum[:])
	}
	if len(keys) == 0 || len(tables) == 0 {
		t.Fatalf("tenant %s holds too little to compare: %v", tenant, out)
	}
	return out
}

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/server"
)

// TestTenantDeleteSurvivesWorkerKill deletes a tenant on `dds worker`
// processes: the first worker is killed with SIGKILL in the middle of
// the delete (while it removes the tenant's events), a second one resumes
// the job, and the tenant is gone while another tenant keeps everything.
func TestTenantDeleteSurvivesWorkerKill(t *testing.T) {
	teststack.Need(t, "TEMPORAL_ADDRESS")
	hostPort := os.Getenv("TEMPORAL_ADDRESS")
	d := testenv.DB(t)
	bin := filepath.Join(t.TempDir(), "dds")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testenv.Config(t)
	cfg.PublicURL = "http://" + ln.Addr().String()
	cfg.TemporalAddress = hostPort
	cfg.TemporalTaskQueue = "tenant-delete-crash-" + uuid.NewString()
	cfg.FileStorageDriver, cfg.FileStorageLocalDir = "local", t.TempDir()
	ctx := context.Background()
	s, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Start(ctx, ln))
	app := &testenv.App{URL: cfg.PublicURL, Server: s, Client: &http.Client{Timeout: time.Minute}}
	workerEnv := append(os.Environ(), "DATABASE_URL="+cfg.DatabaseURL, "DDS_ENV=test", "DDS_JWT_SECRET="+cfg.JWTSecret,
		"TEMPORAL_ADDRESS="+hostPort, "DDS_TASK_QUEUE="+cfg.TemporalTaskQueue, "DDS_PUBLIC_URL="+cfg.PublicURL,
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+cfg.FileStorageLocalDir, "DDS_LOG_LEVEL=warn",
		"DDS_WORKER_HTTP_ADDR=127.0.0.1:0")
	startWorker := func() *exec.Cmd {
		cmd := exec.Command(bin, "worker")
		cmd.Env = workerEnv
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		return cmd
	}
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
	keptEvents := count(`SELECT count(*) FROM dds.events WHERE tenant_id = $1`, kept)

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
	if got := count(`SELECT count(*) FROM dds.events WHERE tenant_id = $1`, kept); got != keptEvents {
		t.Errorf("the other tenant has %d events, had %d", got, keptEvents)
	}
	app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Product", keptKey, nil)
}

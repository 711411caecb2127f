package worker_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/tcpproxy"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/worker"
)

// The worker is ready only while both Postgres and Temporal answer.
func TestWorkerProbes(t *testing.T) {
	testenv.DB(t)
	cfg := testenv.Config(t)
	cfg.FileStorageDriver, cfg.FileStorageLocalDir = "local", t.TempDir()
	cfg.TemporalTaskQueue = "worker-probes-test"
	cfg.PublicURL = "http://127.0.0.1:1" // the local driver needs one; this worker signs no URL
	teststack.Need(t, "TEMPORAL_ADDRESS")
	temporal := tcpproxy.Start(t, os.Getenv("TEMPORAL_ADDRESS"))
	cfg.TemporalAddress = temporal.Addr()
	w, err := worker.New(context.Background(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	srv := httptest.NewServer(w.Handler())
	defer srv.Close()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != http.StatusOK {
		t.Fatalf("readyz with everything up: %d %s", code, body)
	}
	w.JobProgress.Set("import", "job-1", 3, 10)
	if code, body := get("/metrics"); code != http.StatusOK || !strings.Contains(body, `go_sql_in_use_connections{db_name="dds"}`) ||
		!strings.Contains(body, `dds_job_items_done{job="job-1",kind="import"} 3`) {
		t.Fatalf("metrics: %d, want the pool and job gauges:\n%s", code, body)
	}

	temporal.Close()
	code, body := get("/readyz")
	var got map[string]string
	if err := json.Unmarshal([]byte(body), &got); err != nil || code != http.StatusServiceUnavailable || got["temporal"] != "down" || got["database"] != "" {
		t.Fatalf("readyz with Temporal down: %d %s, want 503 naming temporal only", code, body)
	}
	if code, _ := get("/livez"); code != http.StatusOK {
		t.Fatalf("livez: %d", code)
	}
}

package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/server"
)

// workerRig is what the tests that kill a `dds worker` mid-job share: a
// server in this process, and worker processes built from this tree, on
// one Temporal task queue (named after queue) and one local file store.
type workerRig struct {
	d         *sqlx.DB
	cfg       *config.Config
	app       *testenv.App
	bin       string // the dds binary
	workerEnv []string
}

func newWorkerRig(t *testing.T, queue string) *workerRig {
	t.Helper()
	teststack.Need(t, "TEMPORAL_ADDRESS")
	r := &workerRig{d: testenv.DB(t), bin: ddsBinary(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := testenv.Config(t)
	cfg.PublicURL = "http://" + ln.Addr().String()
	cfg.TemporalAddress = os.Getenv("TEMPORAL_ADDRESS")
	cfg.TemporalTaskQueue = queue + "-" + uuid.NewString()
	cfg.FileStorageDriver, cfg.FileStorageLocalDir = "local", t.TempDir()
	ctx := context.Background()
	s, err := server.New(ctx, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Start(ctx, ln))
	r.cfg = cfg
	r.app = &testenv.App{URL: cfg.PublicURL, Server: s, Client: &http.Client{Timeout: time.Minute}}
	r.workerEnv = append(os.Environ(), "DATABASE_URL="+cfg.DatabaseURL, "DDS_ENV=test", "DDS_JWT_SECRET="+cfg.JWTSecret,
		"TEMPORAL_ADDRESS="+cfg.TemporalAddress, "DDS_TASK_QUEUE="+cfg.TemporalTaskQueue, "DDS_PUBLIC_URL="+cfg.PublicURL,
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+cfg.FileStorageLocalDir, "DDS_LOG_LEVEL=warn",
		"DDS_WORKER_HTTP_ADDR=127.0.0.1:0") // probes on a free port: the default 8081 may be taken
	return r
}

// startWorker starts a `dds worker`; the test's end kills it.
func (r *workerRig) startWorker(t *testing.T) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(r.bin, "worker")
	cmd.Env = r.workerEnv
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

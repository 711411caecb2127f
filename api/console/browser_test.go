package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/server"
	"github.com/dds-project/dds/webhook/webhooktest"
	"github.com/dds-project/dds/worker"
)

// TestConsoleInBrowser drives the console in headless Chromium through a real
// server and worker (testdata/browser.mjs, with playwright-core from
// deploy/npm): sign in, build a schema, write and filter records, upload a
// file, see a webhook delivery, run GraphQL, meet a narrow key's 403, and,
// as the operator, export the tenant, delete it and import the archive.
// Any error in the browser's console fails it. Screenshots go to
// test-output/console/ at the repository root.
func TestConsoleInBrowser(t *testing.T) {
	b := needBrowser(t)

	// Its own database (the worker's relay delivers every tenant's events
	// there) and task queue; the Temporal dev server of `make test`.
	teststack.Need(t, "DATABASE_URL", "DDS_TEMPORAL_CLI")
	dbURL, err := webhooktest.IsolatedURL()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d, err := db.Open(ctx, dbURL, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := schema.Migrate(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}

	// The webhook receiver: TLS on 127.0.0.1, its certificate trusted by the worker.
	var delivered atomic.Int32
	receiver := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		delivered.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer receiver.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := webhooktest.WriteCertPEM(caFile, receiver.Certificate()); err != nil {
		t.Fatal(err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cfg := testenv.Config(t)
	cfg.DatabaseURL = dbURL
	cfg.PublicURL = base // presigned upload URLs point back at this server
	cfg.FileStorageLocalDir = t.TempDir()
	cfg.WebhookAllowPrivate = true
	cfg.WebhookCAFile = caFile
	cfg.TemporalTaskQueue = "console-" + randomHex()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	stopServer := srv.Start(ctx, ln)
	defer stopServer()
	wk, err := worker.New(ctx, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	defer wk.Close()
	workerDone := make(chan error, 1)
	go func() { workerDone <- wk.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-workerDone; err != nil {
			t.Errorf("worker: %v", err)
		}
	}()

	tenant, err := srv.Tenants.Create(ctx, "console-browser")
	if err != nil {
		t.Fatal(err)
	}

	b.run(t, "browser.mjs", "console", 8*time.Minute,
		"DDS_URL="+base, "DDS_KEY="+tenant.APIKey, "DDS_TENANT="+tenant.TenantID, "DDS_OPERATOR="+cfg.OperatorToken,
		"RECEIVER_URL="+receiver.URL+"/hooks/dds")
	if delivered.Load() == 0 {
		t.Fatal("the receiver got no webhook delivery, yet the console showed one")
	}
}

func randomHex() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

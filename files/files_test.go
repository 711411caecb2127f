package files_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	tworker "go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/storage/storagetest"
)

type env struct {
	tc     client.Client
	svc    *files.Service
	store  *storage.Local
	tenant string
}

// newEnv builds the service against the real database, the local driver
// and a Temporal dev server with a worker for the file workflows.
func newEnv(t *testing.T) *env {
	t.Helper()
	teststack.Need(t, "DDS_TEMPORAL_CLI")
	cli := os.Getenv("DDS_TEMPORAL_CLI")
	d := testenv.DB(t)
	tenant := testenv.TenantRow(t, "files-service")
	store := storagetest.Local(t)

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	hostPort := ln.Addr().String()
	ln.Close()
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	dev, err := testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{ExistingPath: cli,
		ClientOptions: &client.Options{HostPort: hostPort, Logger: quiet}, LogLevel: "error",
		Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	// Best effort: Stop interrupts the dev server and reports how it exited; the test is over.
	t.Cleanup(func() { dev.Stop() }) //nolint:errcheck // best-effort shutdown of the test's dev server
	w := tworker.New(dev.Client(), "files-service-test", tworker.Options{})
	files.Register(w, d, store)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	svc := files.New(d, store, dev.Client(), files.Options{TaskQueue: "files-service-test"})
	return &env{tc: dev.Client(), svc: svc, store: store, tenant: tenant}
}

func (e *env) confirmed(t *testing.T, body string) *files.File {
	t.Helper()
	ctx := context.Background()
	size := int64(len(body))
	tk, err := e.svc.RequestUpload(ctx, e.tenant, files.UploadRequest{FileName: "f.txt", MimeType: "text/plain", SizeBytes: &size})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("PUT", tk.UploadURL, bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT: %v %v", err, resp)
	}
	resp.Body.Close()
	f, err := e.svc.Confirm(ctx, e.tenant, tk.FileID)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestService(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	d := testenv.DB(t)

	t.Run("VerifyConfirmed accepts only confirmed files of the tenant", func(t *testing.T) {
		good := e.confirmed(t, "ok")
		size := int64(3)
		pending, err := e.svc.RequestUpload(ctx, e.tenant, files.UploadRequest{FileName: "p.txt", MimeType: "text/plain", SizeBytes: &size})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.svc.VerifyConfirmed(ctx, e.tenant, []string{good.ID, ""}); err != nil {
			t.Fatalf("confirmed file refused: %v", err)
		}
		if err := e.svc.VerifyConfirmed(ctx, e.tenant, nil); err != nil {
			t.Fatalf("no ids: %v", err)
		}
		for name, c := range map[string]struct{ tenant, id string }{
			"pending":      {e.tenant, pending.FileID},
			"unknown":      {e.tenant, uuid.NewString()},
			"not a uuid":   {e.tenant, "nope"},
			"other tenant": {uuid.NewString(), good.ID},
		} {
			err := e.svc.VerifyConfirmed(ctx, c.tenant, []string{good.ID, c.id})
			if c.tenant != e.tenant {
				err = e.svc.VerifyConfirmed(ctx, c.tenant, []string{c.id})
			}
			var ae *apperr.Error
			if !errors.As(err, &ae) || ae.Code != apperr.Validation || len(ae.Details) != 1 || ae.Details[0].Field != c.id {
				t.Errorf("%s: err %v, want VALIDATION_ERROR naming %s", name, err, c.id)
			}
		}
	})

	t.Run("GetMany returns the tenant's live files", func(t *testing.T) {
		f := e.confirmed(t, "many")
		m, err := e.svc.GetMany(ctx, e.tenant, []string{f.ID, uuid.NewString(), "x"})
		if err != nil || len(m) != 1 || m[f.ID].FileName != "f.txt" {
			t.Fatalf("GetMany = %v, %v", m, err)
		}
		if m, _ := e.svc.GetMany(ctx, uuid.NewString(), []string{f.ID}); len(m) != 0 {
			t.Fatal("GetMany crossed tenants")
		}
	})

	t.Run("MarkDeleted in a transaction, then the sweeper removes the object", func(t *testing.T) {
		f := e.confirmed(t, "entity file")
		key := e.tenant + "/" + f.ID
		tx := d.MustBegin()
		if err := files.MarkDeleted(ctx, tx, e.tenant, []string{f.ID, "junk"}); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.svc.Get(ctx, e.tenant, f.ID); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Get after MarkDeleted: %v", err)
		}
		if err := e.svc.VerifyConfirmed(ctx, e.tenant, []string{f.ID}); err == nil {
			t.Fatal("a deleted file still verifies")
		}
		// Simulate a crash before PurgeDeleted: only the sweeper is left.
		d.MustExec(`UPDATE dds.files SET deleted_at = now() - interval '2 minutes' WHERE id = $1`, f.ID)
		if _, err := e.svc.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			var purged *time.Time
			if err := d.Get(&purged, `SELECT purged_at FROM dds.files WHERE id = $1`, f.ID); err != nil {
				t.Fatal(err)
			}
			if _, err := e.store.Head(ctx, key); err != nil && purged != nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the sweeper did not remove the deleted file's object")
			}
			time.Sleep(50 * time.Millisecond)
		}
	})

	t.Run("confirm restarts a lost lifecycle workflow", func(t *testing.T) {
		size := int64(4)
		tk, err := e.svc.RequestUpload(ctx, e.tenant, files.UploadRequest{FileName: "l.txt", MimeType: "text/plain", SizeBytes: &size})
		if err != nil {
			t.Fatal(err)
		}
		if err := e.tc.TerminateWorkflow(ctx, tk.FileID, "", "simulate a lost workflow"); err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest("PUT", tk.UploadURL, bytes.NewReader([]byte("lost")))
		req.Header.Set("Content-Type", "text/plain")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("PUT: %v %v", err, resp)
		}
		resp.Body.Close()
		f, err := e.svc.Confirm(ctx, e.tenant, tk.FileID)
		if err != nil || f.Status != "confirmed" {
			t.Fatalf("Confirm = %+v, %v", f, err)
		}
	})

	t.Run("Delete is tenant-scoped", func(t *testing.T) {
		f := e.confirmed(t, "mine")
		if err := e.svc.Delete(ctx, uuid.NewString(), f.ID); !apperr.Is(err, apperr.NotFound) {
			t.Fatalf("Delete by another tenant: %v", err)
		}
		if _, err := e.svc.Get(ctx, e.tenant, f.ID); err != nil {
			t.Fatalf("file gone after a foreign delete: %v", err)
		}
	})
}

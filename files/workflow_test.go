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
	"github.com/jmoiron/sqlx"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/storage/storagetest"
)

var quietLogger = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

type fixture struct {
	db     *sqlx.DB
	store  *storage.Local
	tenant string
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	teststack.Need(t, "DATABASE_URL")
	url := os.Getenv("DATABASE_URL")
	ctx := context.Background()
	d, err := db.Open(ctx, url, 4)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := schema.Migrate(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	tenant := testenv.TenantRow(t, "upload-wf-test")
	l := storagetest.Local(t)
	return &fixture{db: d, store: l, tenant: tenant}
}

// pending inserts a pending file row and returns its id and storage key.
func (f *fixture) pending(t *testing.T, size int64, expires time.Time) (string, string) {
	t.Helper()
	id := uuid.NewString()
	key := f.tenant + "/" + id
	_, err := f.db.Exec(`INSERT INTO dds.files (id, tenant_id, file_name, mime_type, size_bytes, storage_key, upload_expires_at)
		VALUES ($1, $2, 'a.txt', 'text/plain', $3, $4, $5)`, id, f.tenant, size, key, expires)
	if err != nil {
		t.Fatal(err)
	}
	return id, key
}

func (f *fixture) upload(t *testing.T, key string, body []byte) {
	t.Helper()
	u, err := f.store.PresignPut(context.Background(), key, "text/plain", int64(len(body)), time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	req.Header.Set("Content-Type", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("upload: status %d", resp.StatusCode)
	}
}

func (f *fixture) status(t *testing.T, id string) string {
	t.Helper()
	var s string
	if err := f.db.Get(&s, `SELECT status FROM dds.files WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) exists(t *testing.T, key string) bool {
	t.Helper()
	_, err := f.store.Head(context.Background(), key)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func (f *fixture) env(t *testing.T) *testsuite.TestWorkflowEnvironment {
	var s testsuite.WorkflowTestSuite
	s.SetLogger(quietLogger)
	env := s.NewTestWorkflowEnvironment()
	files.Register(env, f.db, f.store)
	return env
}

type updateResult struct {
	rejected, err error
	done          bool
}

func (r *updateResult) callbacks() *testsuite.TestUpdateCallback {
	return &testsuite.TestUpdateCallback{
		OnAccept:   func() {},
		OnReject:   func(err error) { r.rejected, r.done = err, true },
		OnComplete: func(_ any, err error) { r.err, r.done = err, true },
	}
}

func errType(err error) string {
	var ae *temporal.ApplicationError
	if errors.As(err, &ae) {
		return ae.Type()
	}
	return ""
}

func TestUploadWorkflow(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	body := []byte("hello, files")

	t.Run("unconfirmed upload expires and its object is deleted", func(t *testing.T) {
		env := f.env(t)
		expires := env.Now().Add(15 * time.Minute)
		id, key := f.pending(t, int64(len(body)), expires)
		f.upload(t, key, body) // uploaded but never confirmed: an orphan
		env.ExecuteWorkflow(files.FileUpload, files.UploadInput{
			TenantID: f.tenant, FileID: id, ExpiresAt: expires, Grace: 10 * time.Minute})
		if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil {
			t.Fatalf("workflow completed=%v err=%v", env.IsWorkflowCompleted(), env.GetWorkflowError())
		}
		var res string
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if res != files.UploadExpired || f.status(t, id) != "expired" {
			t.Fatalf("result %q, status %q; want expired", res, f.status(t, id))
		}
		if f.exists(t, key) {
			t.Fatal("the orphan object still exists after expiry")
		}
	})

	t.Run("confirm after upload confirms and keeps the object", func(t *testing.T) {
		env := f.env(t)
		expires := env.Now().Add(15 * time.Minute)
		id, key := f.pending(t, int64(len(body)), expires)
		f.upload(t, key, body)
		var r updateResult
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(files.ConfirmUpdate, "c1", r.callbacks())
		}, time.Minute)
		env.ExecuteWorkflow(files.FileUpload, files.UploadInput{
			TenantID: f.tenant, FileID: id, ExpiresAt: expires, Grace: 10 * time.Minute})
		if !r.done || r.rejected != nil || r.err != nil {
			t.Fatalf("confirm: done=%v rejected=%v err=%v", r.done, r.rejected, r.err)
		}
		var res string
		if err := env.GetWorkflowResult(&res); err != nil {
			t.Fatal(err)
		}
		if res != files.UploadConfirmed || f.status(t, id) != "confirmed" {
			t.Fatalf("result %q, status %q; want confirmed", res, f.status(t, id))
		}
		var created *time.Time
		if err := f.db.Get(&created, `SELECT created_at FROM dds.files WHERE id = $1`, id); err != nil {
			t.Fatal(err)
		}
		if created == nil {
			t.Fatal("createdAt not set at confirmation")
		}
		if !f.exists(t, key) {
			t.Fatal("confirmed object was deleted")
		}
	})

	t.Run("confirm before upload fails and the upload stays open", func(t *testing.T) {
		env := f.env(t)
		expires := env.Now().Add(15 * time.Minute)
		id, key := f.pending(t, int64(len(body)), expires)
		var early, late updateResult
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(files.ConfirmUpdate, "c1", early.callbacks())
		}, time.Minute)
		env.RegisterDelayedCallback(func() { f.upload(t, key, body) }, 2*time.Minute)
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(files.ConfirmUpdate, "c2", late.callbacks())
		}, 3*time.Minute)
		env.ExecuteWorkflow(files.FileUpload, files.UploadInput{
			TenantID: f.tenant, FileID: id, ExpiresAt: expires, Grace: 10 * time.Minute})
		if errType(early.err) != files.ErrTypeNotUploaded {
			t.Fatalf("confirm before upload: err=%v rejected=%v, want %s", early.err, early.rejected, files.ErrTypeNotUploaded)
		}
		if late.err != nil || late.rejected != nil || f.status(t, id) != "confirmed" {
			t.Fatalf("confirm after upload: err=%v rejected=%v status=%s", late.err, late.rejected, f.status(t, id))
		}
	})

	t.Run("size mismatch is refused", func(t *testing.T) {
		env := f.env(t)
		expires := env.Now().Add(15 * time.Minute)
		id, key := f.pending(t, 999, expires)
		f.upload(t, key, body) // a different size than announced
		var r updateResult
		env.RegisterDelayedCallback(func() {
			env.UpdateWorkflow(files.ConfirmUpdate, "c1", r.callbacks())
		}, time.Minute)
		env.ExecuteWorkflow(files.FileUpload, files.UploadInput{
			TenantID: f.tenant, FileID: id, ExpiresAt: expires, Grace: 10 * time.Minute})
		if errType(r.err) != files.ErrTypeMismatch {
			t.Fatalf("confirm with wrong size: err=%v, want %s", r.err, files.ErrTypeMismatch)
		}
		if f.status(t, id) != "expired" || f.exists(t, key) {
			t.Fatalf("mismatched upload: status %s exists %v; want expired and deleted", f.status(t, id), f.exists(t, key))
		}
	})

	t.Run("delete removes the object", func(t *testing.T) {
		env := f.env(t)
		id, key := f.pending(t, int64(len(body)), env.Now().Add(time.Minute))
		f.upload(t, key, body)
		env.ExecuteWorkflow(files.FileDelete, files.DeleteInput{TenantID: f.tenant, FileID: id})
		if err := env.GetWorkflowError(); err != nil {
			t.Fatal(err)
		}
		if f.status(t, id) != "deleted" || f.exists(t, key) {
			t.Fatalf("after delete: status %s exists %v", f.status(t, id), f.exists(t, key))
		}
	})
}

// TestUploadWorkflowDevServer runs the lifecycle on a real Temporal dev
// server: a confirmed upload, and an unconfirmed one that expires on its
// own and loses its object.
func TestUploadWorkflowDevServer(t *testing.T) {
	t.Parallel()
	teststack.Need(t, "DDS_TEMPORAL_CLI")
	cli := os.Getenv("DDS_TEMPORAL_CLI")
	f := newFixture(t)
	ctx := context.Background()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: cli, ClientOptions: &client.Options{HostPort: freeHostPort(t), Logger: quietLogger}, LogLevel: "error",
		Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() }) //nolint:errcheck // best-effort shutdown of the test's Temporal dev server; its exit status is not under test
	c := srv.Client()
	w := worker.New(c, "dds-files-test", worker.Options{})
	files.Register(w, f.db, f.store)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	body := []byte("end to end")
	start := func(id string, expires time.Time) {
		_, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: "dds-files-test"},
			files.FileUpload, files.UploadInput{TenantID: f.tenant, FileID: id, ExpiresAt: expires, Grace: time.Second})
		if err != nil {
			t.Fatal(err)
		}
	}
	confirm := func(id string) error {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: files.ConfirmUpdate, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}

	// Confirmed: before upload the Update fails with FILE_NOT_UPLOADED,
	// after upload it confirms.
	id1, key1 := f.pending(t, int64(len(body)), time.Now().Add(time.Hour))
	start(id1, time.Now().Add(time.Hour))
	if err := confirm(id1); errType(err) != files.ErrTypeNotUploaded {
		t.Fatalf("confirm before upload: %v", err)
	}
	f.upload(t, key1, body)
	if err := confirm(id1); err != nil {
		t.Fatalf("confirm: %v", err)
	}
	if f.status(t, id1) != "confirmed" {
		t.Fatalf("status %s, want confirmed", f.status(t, id1))
	}
	var res string
	if err := c.GetWorkflow(ctx, id1, "").Get(ctx, &res); err != nil || res != files.UploadConfirmed {
		t.Fatalf("workflow result %q err %v", res, err)
	}

	// Expired: nobody confirms; the durable timer fires 1s after the URL
	// expiry and the orphan object is removed.
	expires := time.Now().Add(time.Second)
	id2, key2 := f.pending(t, int64(len(body)), expires)
	f.upload(t, key2, body)
	start(id2, expires)
	if err := c.GetWorkflow(ctx, id2, "").Get(ctx, &res); err != nil || res != files.UploadExpired {
		t.Fatalf("workflow result %q err %v", res, err)
	}
	if f.status(t, id2) != "expired" || f.exists(t, key2) {
		t.Fatalf("status %s exists %v; want expired and deleted", f.status(t, id2), f.exists(t, key2))
	}
	if err := confirm(id2); err == nil {
		t.Fatal("confirm after expiry succeeded")
	}
}

func freeHostPort(t *testing.T) string {
	l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

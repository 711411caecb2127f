package files_test

import (
	"context"
	"flag"
	"io"
	"os"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv/replay"
)

var update = flag.Bool("update", false, "re-record the workflow histories in testdata on a Temporal dev server")

// The recorded histories: an upload confirmed after a confirm that came
// before the bytes, an upload that expired, a durable delete.
var histories = []string{"upload_confirmed", "upload_expired", "delete"}

func historyFile(name string) string { return "testdata/" + name + "_history.json" }

// TestFileWorkflowReplay replays recorded runs of the file workflows
// against the current code, registered as the worker registers them: a
// change that breaks determinism, or renames a workflow or activity, for
// uploads and deletes in flight fails here.
func TestFileWorkflowReplay(t *testing.T) {
	if *update {
		recordFileHistories(t)
	}
	for _, name := range histories {
		t.Run(name, func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			files.Register(replay.Registry{WorkflowReplayer: r}, nil, nil)
			if err := r.ReplayWorkflowHistoryFromJSONFile(nil, historyFile(name)); err != nil {
				t.Fatalf("replay %s: %v", historyFile(name), err)
			}
		})
	}
}

// recordFileHistories runs each recorded scenario on a Temporal dev server
// and writes its history to testdata.
func recordFileHistories(t *testing.T) {
	cli := os.Getenv("DDS_TEMPORAL_CLI")
	if cli == "" {
		t.Fatal("DDS_TEMPORAL_CLI is not set: run the tests with `make test`")
	}
	f := newFixture(t)
	ctx := context.Background()
	srv, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{
		ExistingPath: cli, ClientOptions: &client.Options{HostPort: freeHostPort(t), Logger: quietLogger}, LogLevel: "error",
		Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop() //nolint:errcheck // best-effort shutdown of the test's Temporal dev server; its exit status is not under test
	c := srv.Client()
	const queue = "record"
	w := worker.New(c, queue, worker.Options{})
	files.Register(w, f.db, f.store)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	body := []byte("recorded")
	run := func(id, name string, in any) client.WorkflowRun {
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: id, TaskQueue: queue}, name, in)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Confirmed: a confirm before the upload fails, the one after it confirms.
	id, key := f.pending(t, int64(len(body)), time.Now().Add(time.Hour))
	confirmed := run(id, files.UploadWorkflowName, files.UploadInput{TenantID: f.tenant, FileID: id, ExpiresAt: time.Now().Add(time.Hour), Grace: time.Minute})
	confirm := func() error {
		h, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
			WorkflowID: id, UpdateName: files.ConfirmUpdate, WaitForStage: client.WorkflowUpdateStageCompleted})
		if err != nil {
			return err
		}
		return h.Get(ctx, nil)
	}
	if err := confirm(); errType(err) != files.ErrTypeNotUploaded {
		t.Fatalf("confirm before upload: %v", err)
	}
	f.upload(t, key, body)
	if err := confirm(); err != nil {
		t.Fatal(err)
	}
	wait(t, confirmed, files.UploadConfirmed)
	writeHistory(t, c, confirmed, "upload_confirmed")

	// Expired: nobody confirms; the orphan object is deleted.
	expires := time.Now().Add(time.Second)
	id, key = f.pending(t, int64(len(body)), expires)
	f.upload(t, key, body)
	expired := run(id, files.UploadWorkflowName, files.UploadInput{TenantID: f.tenant, FileID: id, ExpiresAt: expires, Grace: time.Second})
	wait(t, expired, files.UploadExpired)
	writeHistory(t, c, expired, "upload_expired")

	// Delete.
	id, key = f.pending(t, int64(len(body)), time.Now().Add(time.Hour))
	f.upload(t, key, body)
	deleted := run(files.DeleteWorkflowID(id), files.DeleteWorkflowName, files.DeleteInput{TenantID: f.tenant, FileID: id})
	if err := deleted.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	writeHistory(t, c, deleted, "delete")
}

func wait(t *testing.T, r client.WorkflowRun, want string) {
	t.Helper()
	var got string
	if err := r.Get(context.Background(), &got); err != nil || got != want {
		t.Fatalf("recorded run ended %q %v, want %q", got, err, want)
	}
}

func writeHistory(t *testing.T, c client.Client, r client.WorkflowRun, name string) {
	t.Helper()
	replay.WriteHistory(t, c, r.GetID(), r.GetRunID(), historyFile(name))
}

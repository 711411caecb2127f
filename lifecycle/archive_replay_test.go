package lifecycle_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/internal/testenv/replay"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/tenant"
	"github.com/dds-project/dds/webhook"
)

var archiveHistories = []string{"testdata/export_history.json", "testdata/import_history.json"}

// TestExportImportReplay replays recorded runs of the export and import
// workflows against the current code, registered as the worker registers
// them.
func TestExportImportReplay(t *testing.T) {
	if *update {
		recordExportImport(t)
	}
	for _, h := range archiveHistories {
		r := worker.NewWorkflowReplayer()
		lifecycle.Register(replay.Registry{WorkflowReplayer: r}, nil)
		if err := r.ReplayWorkflowHistoryFromJSONFile(nil, h); err != nil {
			t.Fatalf("replay %s: %v", h, err)
		}
	}
}

// recordExportImport exports a tenant and imports the archive on a worker
// of its own queue, and writes both histories.
func recordExportImport(t *testing.T) {
	_, deps, _, _, _ := deleteFixture(t) // a Temporal client and the real deps; that tenant is not used
	s := newStack(t)
	tenantID, key := s.app.Tenant(t)
	s.populate(t, key, 5)
	keys := auth.NewKeys(s.db, "test")
	deps.Records, deps.Storage = records.NewStore(s.db, schema.NewService(s.db), nil), s.store
	deps.Schemas, deps.Tenants = schema.NewService(s.db), tenant.NewService(s.db, keys)
	deps.Sections = lifecycle.DefaultSections(keys, webhook.NewStore(s.db), true)
	queue := "record-tenant-archive-" + uuid.NewString()
	w := worker.New(deps.Temporal, queue, worker.Options{})
	lifecycle.Register(w, deps)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	svc := lifecycle.NewService(s.db, keys, func(string) {}, noRun{}, s.store)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(j *lifecycle.Job, name, file string) {
		r, err := deps.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: lifecycle.WorkflowID(j.ID), TaskQueue: queue}, name,
			lifecycle.Input{JobID: j.ID, TenantID: *j.TenantID})
		if err != nil {
			t.Fatal(err)
		}
		var out string
		if err := r.Get(ctx, &out); err != nil || out != "succeeded" {
			t.Fatalf("recorded %s ended %q %v", name, out, err)
		}
		replay.WriteHistory(t, deps.Temporal, r.GetID(), r.GetRunID(), file)
	}
	exp, err := svc.Export(ctx, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	run(exp, lifecycle.ExportWorkflowName, archiveHistories[0])
	// Import that archive after deleting the tenant (its files keep their
	// ids); the delete removes the tenant's archives, so a copy is
	// downloaded first and imported as an upload.
	var got struct {
		Result struct {
			Archive struct {
				DownloadURL string `json:"downloadUrl"`
			} `json:"archive"`
		} `json:"result"`
	}
	s.operator(t, http.StatusOK, "GET", "/api/v1/tenant-jobs/"+exp.ID, nil).Decode(t, &got)
	resp, err := http.Get(got.Result.Archive.DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	archive, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("download: %d %v", resp.StatusCode, err)
	}
	var del lifecycle.Job
	s.operator(t, http.StatusAccepted, "DELETE", "/api/v1/tenants/"+tenantID, nil).Decode(t, &del)
	if end := s.waitJob(t, del.ID); end.Status != "succeeded" {
		t.Fatalf("delete: %+v", end)
	}
	j := s.importArchive(t, archive, "") // through the stack's own worker, to have an uploaded archive
	var spec struct {
		FileID string
	}
	if err := s.db.Get(&spec.FileID, `SELECT spec->>'fileId' FROM dds.tenant_jobs WHERE id = $1`, j.ID); err != nil {
		t.Fatal(err)
	}
	s.operator(t, http.StatusAccepted, "DELETE", "/api/v1/tenants/"+*j.TenantID, nil).Decode(t, &del)
	if end := s.waitJob(t, del.ID); end.Status != "succeeded" {
		t.Fatalf("delete: %+v", end)
	}
	imp, err := svc.Import(ctx, lifecycle.ImportSpec{FileID: spec.FileID})
	if err != nil {
		t.Fatal(err)
	}
	run(imp, lifecycle.ImportWorkflowName, archiveHistories[1])
}

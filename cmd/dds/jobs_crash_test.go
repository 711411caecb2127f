package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestJobSurvivesWorkerKill runs an import on `dds worker` processes: the
// first worker is killed with SIGKILL while it stages the file, a second
// one takes the job over, and the records and their events are written
// exactly once.
func TestJobSurvivesWorkerKill(t *testing.T) {
	t.Parallel() // its own task queue, processes, tenants and file store; most of its time is waits
	rig := newWorkerRig(t, "jobs-crash")
	d, app, bin := rig.d, rig.app, rig.bin
	startWorker := func() *exec.Cmd { return rig.startWorker(t) }
	first := startWorker()

	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "shop", "entities": []any{map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "sku", "type": "STRING", "unique": true},
		map[string]any{"name": "price", "type": "NUMBER"}}}}})
	const n = 300_000
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"name": "Product %d", "sku": "SKU-%d", "price": %d.25}`+"\n", i, i, i%1000)
	}
	file := app.Upload(t, key, "products.ndjson", "application/x-ndjson", []byte(b.String()))

	var j struct {
		ID       string `json:"id"`
		Status   string `json:"status"`
		Progress struct {
			Processed int64 `json:"processed"`
		} `json:"progress"`
		Result *struct {
			SuccessCount int64 `json:"successCount"`
		} `json:"result"`
	}
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/jobs", key,
		map[string]any{"type": "import", "entity": "Product", "fileId": file, "format": "ndjson"}).Decode(t, &j)
	// `dds job watch` follows the job through the crash.
	var watchOut strings.Builder
	watch := exec.Command(bin, "job", "watch", j.ID, "--url", app.URL, "--every", "100ms")
	watch.Env = append(os.Environ(), "DDS_API_KEY="+key)
	watch.Stdout = &watchOut
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	poll := func(what string, done func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			app.Must(t, http.StatusOK, "GET", "/api/v1/jobs/"+j.ID, key, nil).Decode(t, &j)
			if done() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting until %s; job %+v", what, j)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	poll("the first worker stages rows", func() bool { return j.Progress.Processed > 0 || j.Status != "queued" && j.Status != "running" })
	if j.Status != "running" {
		t.Fatalf("the job ended (%s) before the worker could be killed mid-file; make the file larger", j.Status)
	}
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	t.Logf("killed the worker at %d of %d rows", j.Progress.Processed, n)
	startWorker()
	poll("the job ends", func() bool { return j.Status != "queued" && j.Status != "running" })
	if j.Status != "succeeded" || j.Result == nil || j.Result.SuccessCount != n {
		t.Fatalf("job after the crash: %+v", j)
	}
	if err := watch.Wait(); err != nil {
		t.Fatalf("dds job watch of a succeeded job: %v\n%s", err, watchOut.String())
	}
	frames := strings.Split(watchOut.String(), "\r")
	last := frames[len(frames)-1]
	if len(frames) < 3 || !strings.Contains(last, "100%") || !strings.Contains(last, fmt.Sprintf("%d records written", n)) ||
		!strings.Contains(watchOut.String(), "running") {
		t.Fatalf("dds job watch printed %d frames, ending %q; want a moving bar ending at 100%%", len(frames), last)
	}
	var pg string
	if err := d.Get(&pg, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1 AND active`, tenant); err != nil {
		t.Fatal(err)
	}
	var records, distinct, events int
	if err := d.Get(&records, fmt.Sprintf(`SELECT count(*) FROM %q."Product"`, pg)); err != nil {
		t.Fatal(err)
	}
	if err := d.Get(&distinct, fmt.Sprintf(`SELECT count(DISTINCT sku) FROM %q."Product"`, pg)); err != nil {
		t.Fatal(err)
	}
	if err := d.Get(&events, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND type = 'entity.created'`, tenant); err != nil {
		t.Fatal(err)
	}
	if records != n || distinct != n || events != n {
		t.Fatalf("%d records (%d distinct skus), %d events; want exactly %d of each", records, distinct, events, n)
	}
	var staged int
	if err := d.Get(&staged, `SELECT count(*) FROM pg_tables WHERE schemaname = 'dds_jobs' AND tablename = $1`,
		"stage_"+strings.ReplaceAll(j.ID, "-", "")); err != nil || staged != 0 {
		t.Fatalf("staging table left behind (%d, %v)", staged, err)
	}
}

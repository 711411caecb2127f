package jobs_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// startNothing is the test seam for the durable run: the test runs the
// steps itself, as a worker's activities would.
type startNothing struct{}

func (startNothing) Start(context.Context, *jobs.Job) error { return nil }
func (startNothing) Cancel(context.Context, string) error   { return nil }

// Running a step again — what a worker crash after the commit leads to —
// never applies a job twice.
func TestApplyIsIdempotent(t *testing.T) {
	app := testenv.Server(t)
	d := testenv.DB(t)
	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{map[string]any{"name": "Item",
		"fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}})
	var items []any
	for i := range 20 {
		items = append(items, map[string]any{"n": i})
	}
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Item/batch", key, map[string]any{"items": items})

	rs := records.NewStore(d, schema.NewService(d), nil)
	ctx := context.Background()
	j, err := jobs.NewService(d, rs, startNothing{}).Create(ctx, records.SystemPrincipal(tenant), &jobs.Request{Type: jobs.TypeUpdate, Entity: "Item",
		Spec: jobs.Spec{Where: map[string]any{"n": map[string]any{"$lt": json.Number("5")}}, Set: map[string]any{"n": json.Number("100")}, EmitEvents: true}})
	if err != nil {
		t.Fatal(err)
	}
	x := jobs.NewExecutor(d, rs, nil, nil, nil)
	for _, step := range []func() (jobs.Outcome, error){
		func() (jobs.Outcome, error) { return x.Begin(ctx, j.ID) },
		func() (jobs.Outcome, error) { return x.Prepare(ctx, j.ID, func(int64) error { return nil }) },
	} {
		if o, err := step(); err != nil || o != jobs.Continue {
			t.Fatalf("step: %s %v", o, err)
		}
	}
	for i := range 3 {
		if o, err := x.Apply(ctx, j.ID); err != nil || o != jobs.Succeeded {
			t.Fatalf("apply #%d: %s %v", i+1, o, err)
		}
	}
	// A late cancel or failure does not undo the outcome either.
	if o, err := x.Finish(ctx, j.ID, jobs.Cancelled, ""); err != nil || o != jobs.Succeeded {
		t.Fatalf("finish after apply: %s %v, want succeeded", o, err)
	}
	var events int
	if err := d.Get(&events, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND type = 'entity.updated'`, tenant); err != nil {
		t.Fatal(err)
	}
	r := app.Must(t, http.StatusOK, "GET", fmt.Sprintf("/api/v1/dynamic/Item?where=%s&includeCount=true", `{"n":100}`), key, nil).JSON(t)
	if events != 5 || r["count"] != float64(5) {
		t.Fatalf("%d events, %v records updated; want 5 and 5 after three applies", events, r["count"])
	}
}

// A cancellation asked before the apply wins: nothing is written.
func TestCancelBeforeApplyWritesNothing(t *testing.T) {
	app := testenv.Server(t)
	d := testenv.DB(t)
	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{map[string]any{"name": "Item",
		"fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}})
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Item", key, map[string]any{"n": 1})
	rs := records.NewStore(d, schema.NewService(d), nil)
	ctx := context.Background()
	svc := jobs.NewService(d, rs, startNothing{})
	j, err := svc.Create(ctx, records.SystemPrincipal(tenant), &jobs.Request{Type: jobs.TypeDelete, Entity: "Item", Spec: jobs.Spec{All: true, EmitEvents: true}})
	if err != nil {
		t.Fatal(err)
	}
	x := jobs.NewExecutor(d, rs, nil, nil, nil)
	if o, err := x.Begin(ctx, j.ID); err != nil || o != jobs.Continue {
		t.Fatalf("begin: %s %v", o, err)
	}
	if _, err := svc.Cancel(ctx, tenant, j.ID); err != nil {
		t.Fatal(err)
	}
	if o, err := x.Apply(ctx, j.ID); err != nil || o != jobs.Cancelled {
		t.Fatalf("apply after cancel: %s %v, want cancelled", o, err)
	}
	got, err := svc.Get(ctx, tenant, j.ID)
	if err != nil || got.Status != jobs.StatusCancelled || got.FinishedAt == nil {
		t.Fatalf("job %+v %v, want cancelled", got, err)
	}
	r := app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Item?includeCount=true", key, nil).JSON(t)
	if r["count"] != float64(1) {
		t.Fatalf("%v records after a cancelled delete, want 1", r["count"])
	}
}

// A job whose tenant was deleted ends its run instead of retrying forever.
func TestStepsOfADeletedJobEnd(t *testing.T) {
	d := testenv.DB(t)
	x := jobs.NewExecutor(d, records.NewStore(d, schema.NewService(d), nil), nil, nil, nil)
	ctx := context.Background()
	id := "01a21300-0000-7000-8000-000000000000"
	if o, err := x.Begin(ctx, id); err != nil || o != jobs.Cancelled {
		t.Fatalf("begin of a missing job: %s %v, want cancelled", o, err)
	}
	if o, err := x.Finish(ctx, id, jobs.Failed, "x"); err != nil || o != jobs.Failed {
		t.Fatalf("finish of a missing job: %s %v", o, err)
	}
}

// A running job's progress is on the process's /metrics, and its series
// goes away when the job ends.
func TestProgressGauges(t *testing.T) {
	app := testenv.Server(t)
	d := testenv.DB(t)
	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{map[string]any{"name": "Item",
		"fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}})
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Item/batch", key, map[string]any{"items": []any{
		map[string]any{"n": 1}, map[string]any{"n": 2}, map[string]any{"n": 3}}})
	rs := records.NewStore(d, schema.NewService(d), nil)
	ctx := context.Background()
	j, err := jobs.NewService(d, rs, startNothing{}).Create(ctx, records.SystemPrincipal(tenant), &jobs.Request{Type: jobs.TypeDelete, Entity: "Item",
		Spec: jobs.Spec{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	x := jobs.NewExecutor(d, rs, nil, obs.NewJobProgress(reg), nil)
	gauge := func(name string) (float64, bool) {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if mf.GetName() == name && l.GetName() == "job" && l.GetValue() == j.ID {
						return m.GetGauge().GetValue(), true
					}
				}
			}
		}
		return 0, false
	}
	if o, err := x.Begin(ctx, j.ID); err != nil || o != jobs.Continue {
		t.Fatalf("begin: %s %v", o, err)
	}
	if o, err := x.Prepare(ctx, j.ID, func(int64) error { return nil }); err != nil || o != jobs.Continue {
		t.Fatalf("prepare: %s %v", o, err)
	}
	if v, ok := gauge("dds_job_items_total"); !ok || v != 3 {
		t.Fatalf("dds_job_items_total for the running job = %v (present %v), want 3", v, ok)
	}
	if o, err := x.Apply(ctx, j.ID); err != nil || o != jobs.Succeeded {
		t.Fatalf("apply: %s %v", o, err)
	}
	if _, ok := gauge("dds_job_items_total"); ok {
		t.Fatal("the finished job still has a progress series")
	}
}

package jobs_test

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/mock"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/replay"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

var update = flag.Bool("update", false, "re-record testdata/job_history.json on the Temporal dev server of make test")

const jobHistoryFile = "testdata/job_history.json"

// noRun is the seam for starting the durable run: these tests run the
// workflow themselves.
type noRun struct{}

func (noRun) Start(context.Context, *jobs.Job) error { return nil }
func (noRun) Cancel(context.Context, string) error   { return nil }

type jobFixture struct {
	acts   *jobs.Activities
	svc    *jobs.Service
	app    *testenv.App
	key    string
	tenant string
}

// newJobFixture is a tenant with 30 Items and the real job activities.
func newJobFixture(t *testing.T) *jobFixture {
	t.Helper()
	app := testenv.Server(t)
	d := testenv.DB(t)
	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{map[string]any{"name": "Item",
		"fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}})
	var items []any
	for i := range 30 {
		items = append(items, map[string]any{"n": i})
	}
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Item/batch", key, map[string]any{"items": items})
	rs := records.NewStore(d, schema.NewService(d), nil)
	return &jobFixture{acts: &jobs.Activities{Exec: jobs.NewExecutor(d, rs, nil, nil, nil)}, svc: jobs.NewService(d, rs, noRun{}),
		app: app, key: key, tenant: tenant}
}

func (f *jobFixture) deleteAll(t *testing.T) jobs.WorkflowInput {
	t.Helper()
	j, err := f.svc.Create(context.Background(), records.SystemPrincipal(f.tenant), &jobs.Request{Type: jobs.TypeDelete, Entity: "Item", Spec: jobs.Spec{All: true, EmitEvents: true}})
	if err != nil {
		t.Fatal(err)
	}
	return jobs.WorkflowInput{JobID: j.ID, TenantID: f.tenant, Type: j.Type, Entity: j.Entity}
}

func (f *jobFixture) items(t *testing.T) float64 {
	t.Helper()
	return f.app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Item?includeCount=true&limit=1", f.key, nil).JSON(t)["count"].(float64)
}

func (f *jobFixture) status(t *testing.T, id string) *jobs.Job {
	t.Helper()
	j, err := f.svc.Get(context.Background(), f.tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestJobWorkflow(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(env *testsuite.TestWorkflowEnvironment, f *jobFixture)
		want   jobs.Outcome
		remain float64
		errMsg string
	}{
		{name: "applies", want: jobs.Succeeded, remain: 0},
		{name: "cancelled before it starts writes nothing", want: jobs.Cancelled, remain: 30,
			setup: func(env *testsuite.TestWorkflowEnvironment, f *jobFixture) {
				env.RegisterDelayedCallback(env.CancelWorkflow, 0)
			}},
		{name: "an apply that keeps failing ends the job failed, nothing written", want: jobs.Failed, remain: 30,
			errMsg: "the job failed on repeated internal errors; nothing was written (last error: database unreachable)",
			setup: func(env *testsuite.TestWorkflowEnvironment, f *jobFixture) {
				// Fault injection: the database refuses every apply; the
				// retries back off over minutes of skipped time.
				env.OnActivity(f.acts.JobApply, mock.Anything, mock.Anything).Return(jobs.Outcome(""), errors.New("database unreachable"))
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newJobFixture(t)
			in := f.deleteAll(t)
			var s testsuite.WorkflowTestSuite
			env := s.NewTestWorkflowEnvironment()
			jobs.Register(env, f.acts.Exec)
			if c.setup != nil {
				c.setup(env, f)
			}
			env.ExecuteWorkflow(jobs.WorkflowName, in)
			var out jobs.Outcome
			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil || env.GetWorkflowResult(&out) != nil || out != c.want {
				t.Fatalf("workflow ended %s (%v), want %s", out, env.GetWorkflowError(), c.want)
			}
			j := f.status(t, in.JobID)
			if j.Status != string(c.want) || j.FinishedAt == nil {
				t.Fatalf("job %+v, want %s", j, c.want)
			}
			if c.errMsg != "" && (j.Error == nil || j.Error.Message != c.errMsg) {
				t.Fatalf("job error %+v, want %q", j.Error, c.errMsg)
			}
			if got := f.items(t); got != c.remain {
				t.Fatalf("%v items remain, want %v", got, c.remain)
			}
		})
	}
}

// TestJobReplay replays a recorded run of the job workflow against the
// current code: a change that breaks determinism for running jobs fails.
func TestJobReplay(t *testing.T) {
	if *update {
		recordJobHistory(t)
	}
	r := worker.NewWorkflowReplayer()
	jobs.Register(replay.Registry{WorkflowReplayer: r}, nil) // the names the worker registers
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, jobHistoryFile); err != nil {
		t.Fatalf("replay %s: %v", jobHistoryFile, err)
	}
}

func recordJobHistory(t *testing.T) {
	f := newJobFixture(t)
	in := f.deleteAll(t)
	c, err := client.Dial(client.Options{HostPort: os.Getenv("TEMPORAL_ADDRESS")})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	queue := "record-job-" + uuid.NewString()
	w := worker.New(c, queue, worker.Options{})
	jobs.Register(w, f.acts.Exec)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: jobs.WorkflowID(in.JobID), TaskQueue: queue}, jobs.WorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out jobs.Outcome
	if err := run.Get(ctx, &out); err != nil || out != jobs.Succeeded {
		t.Fatalf("recorded run ended %s %v", out, err)
	}
	replay.WriteHistory(t, c, run.GetID(), run.GetRunID(), jobHistoryFile)
}

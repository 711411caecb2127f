package lifecycle_test

import (
	"context"
	"encoding/json"
	"flag"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/replay"
	"github.com/dds-project/dds/lifecycle"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

var update = flag.Bool("update", false, "re-record testdata/*_history.json on the Temporal dev server of make test")

// TestTenantDelete deletes one of two tenants through the operator API
// and a worker: its credentials answer 401 from the 202 on, the job
// removes its data schemas, rows, events, files and their objects, and
// the other tenant's tables, rows and files are byte for byte unchanged.
func TestTenantDelete(t *testing.T) {
	s := newStack(t)
	a := s.app
	gone, goneKey := a.Tenant(t)
	kept, keptKey := a.Tenant(t)
	s.populate(t, goneKey, 20)
	s.populate(t, keptKey, 20)
	var tok struct {
		AccessToken string `json:"accessToken"`
	}
	a.Must(t, http.StatusCreated, "POST", "/api/v1/auth/token", goneKey, nil).Decode(t, &tok)
	a.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Doc", tok.AccessToken, nil)
	before := s.snapshot(t, kept)
	pgs, objects := s.pgSchemas(t, gone), s.objects(t, gone)

	var j lifecycle.Job
	s.operator(t, http.StatusAccepted, "DELETE", "/api/v1/tenants/"+gone, nil).Decode(t, &j)
	if j.Type != "delete" || j.TenantID == nil || *j.TenantID != gone || j.ID == "" {
		t.Fatalf("delete answered %+v", j)
	}
	// From the 202 on, neither the key nor a token it minted works (they
	// were cached by the requests above).
	for _, cred := range []string{goneKey, tok.AccessToken} {
		if r := a.Do(t, "GET", "/api/v1/dynamic/Doc", cred, nil); r.Status != http.StatusUnauthorized {
			t.Fatalf("a credential of the deleted tenant answered %d %s", r.Status, r.Body)
		}
	}
	// A second DELETE returns the same job.
	var again lifecycle.Job
	s.operator(t, http.StatusAccepted, "DELETE", "/api/v1/tenants/"+gone, nil).Decode(t, &again)
	if again.ID != j.ID {
		t.Fatalf("second delete made job %s, want %s", again.ID, j.ID)
	}
	end := s.waitJob(t, j.ID)
	if end.Status != "succeeded" || end.FinishedAt == nil || end.Progress.Processed != 6 || end.Progress.Total == nil || *end.Progress.Total != 6 {
		t.Fatalf("delete ended %+v", end)
	}
	var res struct {
		Removed map[string]int64 `json:"removed"`
	}
	if err := json.Unmarshal(end.Result, &res); err != nil || res.Removed["schemas"] != 1 || res.Removed["files"] != 1 ||
		res.Removed["events"] < 20 || res.Removed["tenant"] != 1 {
		t.Fatalf("delete result %s", end.Result)
	}
	s.gone(t, gone, pgs, objects)
	s.operator(t, http.StatusNotFound, "GET", "/api/v1/tenants/"+gone, nil)
	s.operator(t, http.StatusNotFound, "DELETE", "/api/v1/tenants/"+gone, nil)
	if after := s.snapshot(t, kept); diff(before, after) != "" {
		t.Fatalf("the other tenant changed:\n%s", diff(before, after))
	}
	a.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Doc", keptKey, nil)
	// The job outlives its tenant, in the list too.
	var list struct {
		Jobs []lifecycle.Job `json:"jobs"`
	}
	s.operator(t, http.StatusOK, "GET", "/api/v1/tenant-jobs?tenantId="+gone, nil).Decode(t, &list)
	if len(list.Jobs) != 1 || list.Jobs[0].ID != j.ID || list.Jobs[0].Status != "succeeded" {
		t.Fatalf("jobs of the deleted tenant: %+v", list.Jobs)
	}
}

// The tenant API answers the operator token only, and names what is wrong.
func TestTenantAPI(t *testing.T) {
	a := testenv.Server(t)
	tenant, key := a.Tenant(t)
	for _, cred := range []string{"", key, "not-the-operator-token"} {
		for _, rt := range [][2]string{{"GET", "/api/v1/tenants"}, {"GET", "/api/v1/tenants/" + tenant}, {"DELETE", "/api/v1/tenants/" + tenant},
			{"GET", "/api/v1/tenant-jobs"}, {"GET", "/api/v1/tenant-jobs/" + uuid.NewString()}} {
			if r := a.Do(t, rt[0], rt[1], cred, nil); r.Status != http.StatusUnauthorized {
				t.Fatalf("%s %s with %q: %d %s", rt[0], rt[1], cred, r.Status, r.Body)
			}
		}
	}
	op := testenv.OperatorToken
	if r := a.Do(t, "GET", "/api/v1/operator/openapi.json", op, nil); r.Status != http.StatusOK || !strings.Contains(string(r.Body), `"operationId": "deleteTenant"`) {
		t.Fatalf("operator OpenAPI: %d %.200s", r.Status, r.Body)
	}
	if r := a.Do(t, "GET", "/api/v1/operator/openapi.json", key, nil); r.Status != http.StatusUnauthorized {
		t.Fatalf("operator OpenAPI with a tenant key: %d", r.Status)
	}
	var got lifecycle.Tenant
	a.Must(t, http.StatusOK, "GET", "/api/v1/tenants/"+tenant, op, nil).Decode(t, &got)
	if got.ID != tenant || got.Name != t.Name() || got.Status != "active" || got.Keys == nil || *got.Keys != 1 || got.Schemas == nil || *got.Schemas != 0 {
		t.Fatalf("GET tenant: %+v", got)
	}
	// Paging by id: the tenant is on some page.
	found, after := false, ""
	for range 1000 {
		var page struct {
			Tenants   []lifecycle.Tenant `json:"tenants"`
			NextAfter *string            `json:"nextAfter"`
		}
		a.Must(t, http.StatusOK, "GET", "/api/v1/tenants?limit=500&after="+after, op, nil).Decode(t, &page)
		for _, x := range page.Tenants {
			found = found || x.ID == tenant
		}
		if page.NextAfter == nil {
			break
		}
		after = *page.NextAfter
	}
	if !found {
		t.Fatal("the tenant is on no page of GET /api/v1/tenants")
	}
	for _, c := range []struct {
		method, path string
		status       int
		field        string
	}{
		{"GET", "/api/v1/tenants/not-a-uuid", 404, ""},
		{"GET", "/api/v1/tenants/" + uuid.NewString(), 404, ""},
		{"DELETE", "/api/v1/tenants/" + uuid.NewString(), 404, ""},
		{"GET", "/api/v1/tenants?limit=0", 400, "limit"},
		{"GET", "/api/v1/tenants?after=%ff", 400, "after"},
		{"GET", "/api/v1/tenant-jobs?tenantId=x", 400, "tenantId"},
		{"GET", "/api/v1/tenant-jobs/x", 404, ""},
	} {
		r := a.Do(t, c.method, c.path, op, nil)
		if r.Status != c.status || (c.field != "" && !strings.Contains(string(r.Body), `"field":"`+c.field+`"`)) {
			t.Errorf("%s %s: %d %s, want %d naming %q", c.method, c.path, r.Status, r.Body, c.status, c.field)
		}
	}
}

// noRun starts nothing: the tests run the workflow themselves.
type noRun struct{}

func (noRun) Start(context.Context, *lifecycle.Job) error { return nil }

// deleteFixture is a populated tenant whose delete is accepted (credentials
// revoked, job recorded) but not run, and the real activities' deps.
func deleteFixture(t *testing.T) (*stack, *lifecycle.Deps, lifecycle.Input, []string, []string) {
	t.Helper()
	s := newStack(t)
	tenant, key := s.app.Tenant(t)
	s.populate(t, key, 5)
	pgs, objects := s.pgSchemas(t, tenant), s.objects(t, tenant)
	svc := lifecycle.NewService(s.db, auth.NewKeys(s.db, "test"), func(string) {}, noRun{}, s.store)
	j, err := svc.Delete(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	tc, err := client.Dial(client.Options{HostPort: os.Getenv("TEMPORAL_ADDRESS")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	deps := &lifecycle.Deps{DB: s.db, Records: records.NewStore(s.db, schema.NewService(s.db), nil), Storage: s.store, Temporal: tc}
	return s, deps, lifecycle.Input{JobID: j.ID, TenantID: tenant}, pgs, objects
}

// TestDeleteWorkflow runs the delete workflow in Temporal's test
// environment with the real activities, once straight through and once
// with each step run twice (as after a worker crash right after the step's
// work): the end state is the same.
func TestDeleteWorkflow(t *testing.T) {
	for _, twice := range []bool{false, true} {
		t.Run(map[bool]string{false: "once", true: "every step twice"}[twice], func(t *testing.T) {
			s, deps, in, pgs, objects := deleteFixture(t)
			var suite testsuite.WorkflowTestSuite
			if twice {
				aenv := suite.NewTestActivityEnvironment()
				acts := lifecycle.NewActivities(deps)
				aenv.RegisterActivity(acts)
				for _, step := range []string{"workflows", "schemas", "files", "events", "archives", "tenant"} {
					// Retried as the workflow would: a step may meet a
					// transient error (a deadlock with the worker's relay).
					var err error
					for range 3 {
						if _, err = aenv.ExecuteActivity(acts.TenantDeleteStep, lifecycle.StepInput{JobID: in.JobID, TenantID: in.TenantID, Step: step}); err == nil {
							break
						}
					}
					if err != nil {
						t.Fatalf("step %s before the workflow: %v", step, err)
					}
				}
			}
			env := suite.NewTestWorkflowEnvironment()
			lifecycle.Register(env, deps)
			env.ExecuteWorkflow(lifecycle.DeleteWorkflowName, in)
			var out string
			if !env.IsWorkflowCompleted() || env.GetWorkflowError() != nil || env.GetWorkflowResult(&out) != nil || out != "succeeded" {
				t.Fatalf("workflow ended %q %v", out, env.GetWorkflowError())
			}
			s.gone(t, in.TenantID, pgs, objects)
			var status string
			if err := s.db.Get(&status, `SELECT status FROM dds.tenant_jobs WHERE id = $1`, in.JobID); err != nil || status != "succeeded" {
				t.Fatalf("job status %q %v", status, err)
			}
		})
	}
}

const deleteHistory = "testdata/delete_history.json"

// TestDeleteReplay replays a recorded delete against the current code,
// registered as the worker registers it: a change that breaks determinism
// (or renames a workflow or activity, or reorders the steps) for deletes in
// flight fails here.
func TestDeleteReplay(t *testing.T) {
	if *update {
		recordDelete(t)
	}
	r := worker.NewWorkflowReplayer()
	lifecycle.Register(replay.Registry{WorkflowReplayer: r}, nil)
	if err := r.ReplayWorkflowHistoryFromJSONFile(nil, deleteHistory); err != nil {
		t.Fatalf("replay %s: %v", deleteHistory, err)
	}
}

func recordDelete(t *testing.T) {
	_, deps, in, _, _ := deleteFixture(t)
	queue := "record-tenant-delete-" + uuid.NewString()
	w := worker.New(deps.Temporal, queue, worker.Options{})
	lifecycle.Register(w, deps)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := deps.Temporal.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: lifecycle.WorkflowID(in.JobID), TaskQueue: queue}, lifecycle.DeleteWorkflowName, in)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	if err := run.Get(ctx, &out); err != nil || out != "succeeded" {
		t.Fatalf("recorded run ended %q %v", out, err)
	}
	replay.WriteHistory(t, deps.Temporal, run.GetID(), run.GetRunID(), deleteHistory)
}

package lifecycle

// The durable runs of tenant jobs: the workflows, their registration with
// a worker, and the Runner that starts them. Registered names are in the
// histories of running jobs and must not change; neither may the order of
// deleteSteps (testdata/*_history.json replays them).

import (
	"context"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/searchattr"
)

// Registered workflow names.
const (
	DeleteWorkflowName = "TenantDelete"
	ExportWorkflowName = "TenantExport"
	ImportWorkflowName = "TenantImport"
)

// Input names the job a workflow runs; the rest is in its dds.tenant_jobs row.
type Input struct {
	JobID    string
	TenantID string
}

// WorkflowID is the ID of a tenant job's workflow.
func WorkflowID(jobID string) string { return "tenant-job/" + jobID }

// The steps of a delete, in order. Running workflows are cancelled first
// (they would write what the later steps remove); the tenant row goes
// last, its delete cascading to keys, schemas and their versions,
// webhooks with their deliveries and attempts, and batch jobs.
const (
	StepWorkflows = "workflows"
	StepSchemas   = "schemas"
	StepFiles     = "files"
	StepEvents    = "events"
	StepArchives  = "archives"
	StepTenant    = "tenant"
)

var deleteSteps = []string{StepWorkflows, StepSchemas, StepFiles, StepEvents, StepArchives, StepTenant}

// stepOptions: a step heartbeats while it works, so a worker killed
// mid-step is noticed after HeartbeatTimeout and the step runs again on
// another worker (each step is idempotent). A delete is never abandoned:
// its steps retry without limit, backing off to every 10 minutes.
var stepOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 6 * time.Hour,
	HeartbeatTimeout:    15 * time.Second,
	WaitForCancellation: true,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 10 * time.Minute,
	},
}

// DeleteWorkflow removes a tenant, one idempotent step at a time. It
// cannot be cancelled: the tenant's credentials are revoked already, and a
// half-deleted tenant is no use to anyone.
func DeleteWorkflow(ctx workflow.Context, in Input) (string, error) {
	var a *Activities
	ctx = workflow.WithActivityOptions(ctx, stepOptions)
	if err := workflow.ExecuteActivity(ctx, a.TenantJobBegin, in.JobID).Get(ctx, nil); err != nil {
		return "", err
	}
	for _, step := range deleteSteps {
		if err := workflow.ExecuteActivity(ctx, a.TenantDeleteStep, StepInput{JobID: in.JobID, TenantID: in.TenantID, Step: step}).Get(ctx, nil); err != nil {
			return "", err
		}
	}
	if err := workflow.ExecuteActivity(ctx, a.TenantJobFinish, FinishInput{JobID: in.JobID, Status: StatusSucceeded}).Get(ctx, nil); err != nil {
		return "", err
	}
	return StatusSucceeded, nil
}

// Registry is where Register adds workflows and activities: a Temporal
// worker or a test environment.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivity(a any)
}

// Register adds the tenant-job workflows and their activities, which run
// with deps, to a worker.
func Register(r Registry, deps *Deps) {
	r.RegisterWorkflowWithOptions(DeleteWorkflow, workflow.RegisterOptions{Name: DeleteWorkflowName})
	r.RegisterWorkflowWithOptions(ExportWorkflow, workflow.RegisterOptions{Name: ExportWorkflowName})
	r.RegisterWorkflowWithOptions(ImportWorkflow, workflow.RegisterOptions{Name: ImportWorkflowName})
	r.RegisterActivity(&Activities{deps: deps})
}

// TemporalRunner starts tenant jobs as Temporal workflows.
type TemporalRunner struct {
	Client    client.Client
	TaskQueue string
}

var workflowNames = map[string]string{TypeDelete: DeleteWorkflowName, TypeExport: ExportWorkflowName, TypeImport: ImportWorkflowName}

// Start implements Runner.
func (r *TemporalRunner) Start(ctx context.Context, j *Job) error {
	tenant := ""
	if j.TenantID != nil {
		tenant = *j.TenantID
	}
	attrs := []temporal.SearchAttributeUpdate{searchattr.JobType.ValueSet("tenant-" + j.Type)}
	if tenant != "" {
		attrs = append(attrs, searchattr.Tenant.ValueSet(tenant))
	}
	opts := client.StartWorkflowOptions{
		ID:                       WorkflowID(j.ID),
		TaskQueue:                r.TaskQueue,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		WorkflowIDConflictPolicy: enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING,
		TypedSearchAttributes:    temporal.NewSearchAttributes(attrs...),
		StaticSummary:            fmt.Sprintf("tenant %s %s", j.Type, tenant),
		StaticDetails:            fmt.Sprintf("DDS tenant job %s: %s of tenant %s. Status and result: GET /api/v1/tenant-jobs/%s", j.ID, j.Type, tenant, j.ID),
	}
	return searchattr.Start(ctx, r.Client, opts, workflowNames[j.Type], Input{JobID: j.ID, TenantID: tenant})
}

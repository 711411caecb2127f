// Package searchattr owns the Temporal search attributes DDS sets on the
// workflows it starts (DdsTenant, DdsWebhook, DdsEventType, DdsJobType):
// their keys, their registration on a namespace, and starting a workflow
// with them on a namespace that may lack them. It is the one thing the
// durable capabilities (webhook, files, jobs) share on Temporal; each of
// them owns its own workflows and activities.
package searchattr

import (
	"context"
	"errors"
	"strings"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
)

// The Keyword search attributes, so the Temporal UI can list a tenant's,
// a webhook's or an event type's deliveries and a tenant's jobs of one
// kind.
var (
	Tenant    = temporal.NewSearchAttributeKeyKeyword("DdsTenant")
	Webhook   = temporal.NewSearchAttributeKeyKeyword("DdsWebhook")
	EventType = temporal.NewSearchAttributeKeyKeyword("DdsEventType")
	JobType   = temporal.NewSearchAttributeKeyKeyword("DdsJobType")
)

// Ensure registers the search attributes on namespace if they are missing
// (the worker calls it at start; `make run` also registers them when
// starting the dev server).
func Ensure(ctx context.Context, c client.Client, namespace string) error {
	for _, name := range []string{Tenant.GetName(), Webhook.GetName(), EventType.GetName(), JobType.GetName()} {
		_, err := c.OperatorService().AddSearchAttributes(ctx, &operatorservice.AddSearchAttributesRequest{
			Namespace:        namespace,
			SearchAttributes: map[string]enums.IndexedValueType{name: enums.INDEXED_VALUE_TYPE_KEYWORD},
		})
		var exists *serviceerror.AlreadyExists
		if err != nil && !errors.As(err, &exists) {
			return err
		}
	}
	return nil
}

// Start starts a workflow. A namespace that lacks the DDS search
// attributes still runs it (without them); a workflow already started is
// not an error.
func Start(ctx context.Context, c client.Client, opts client.StartWorkflowOptions, wf any, args ...any) error {
	_, err := c.ExecuteWorkflow(ctx, opts, wf, args...)
	var invalid *serviceerror.InvalidArgument
	if errors.As(err, &invalid) && strings.Contains(strings.ToLower(invalid.Error()), "search attribute") {
		opts.TypedSearchAttributes = temporal.SearchAttributes{}
		_, err = c.ExecuteWorkflow(ctx, opts, wf, args...)
	}
	var already *serviceerror.WorkflowExecutionAlreadyStarted
	if errors.As(err, &already) {
		return nil
	}
	return err
}

package workflows

import (
	"context"
	"errors"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
)

// EnsureSearchAttributes registers the delivery and job workflows' Keyword search
// attributes on namespace if they are missing (the worker calls it at
// start; `make run` also registers them when starting the dev server).
func EnsureSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	for _, name := range []string{SATenant.GetName(), SAWebhook.GetName(), SAEventType.GetName(), SAJobType.GetName()} {
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

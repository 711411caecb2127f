// Package graphql is the GraphQL engine behind the dynamic API: the model
// of a tenant's active schema as a credential may see it (model), the
// front end that prepares a request's document (operation), the executor
// (exec) writing responses from Postgres' JSON (jsonshape), and the live
// feed of subscriptions (live). Engine joins the front end and the
// executor; the transports (GraphQL over HTTP, graphql-transport-ws) live
// in api/graphql and share one Engine.
package graphql

import (
	"context"
	"log/slog"

	"github.com/dds-project/dds/graphql/exec"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/records"
)

// Limits protect the server from expensive documents (operation.Limits).
type Limits = operation.Limits

// Engine prepares and executes GraphQL requests for tenants: one per
// process, its cache of prepared operations shared by every transport.
type Engine struct {
	front *operation.Frontend
	exec  *exec.Executor
}

// Option configures an Engine.
type Option func(*options)

type options struct{ exact bool }

// WithoutExactOutput turns off writing lists and gets as Postgres built
// them: every result is reshaped by Go (for tests comparing both ways).
func WithoutExactOutput() Option { return func(o *options) { o.exact = false } }

// NewEngine returns an engine reading and writing through store (the data
// layer REST shares: tenant scope, statement timeouts, the statement
// cache), measuring documents against limits.
func NewEngine(store *records.Store, limits Limits, log *slog.Logger, opts ...Option) *Engine {
	o := options{exact: true}
	for _, opt := range opts {
		opt(&o)
	}
	return &Engine{front: operation.NewFrontend(limits), exec: exec.New(store, log, o.exact)}
}

// Executor is the engine's executor (the live feed reads the records a
// subscription's selection needs through it).
func (e *Engine) Executor() *exec.Executor { return e.exec }

// Prepare parses and validates a request against the model and checks the
// limits, through the cache of prepared operations; then it validates and
// coerces the request's variables. A refusal is the result to send.
func (e *Engine) Prepare(ctx context.Context, m *model.Model, req protocol.Request) (*operation.Prepared, *protocol.Result) {
	return e.front.Prepare(ctx, m, req)
}

// Execute runs a prepared query or mutation.
func (e *Engine) Execute(ctx context.Context, sc *records.Scope, pr *operation.Prepared) *protocol.Result {
	return e.exec.Execute(ctx, sc, pr)
}

// Subscribe compiles a prepared subscription for the live feed.
func (e *Engine) Subscribe(ctx context.Context, sc *records.Scope, pr *operation.Prepared) (*exec.Subscription, *protocol.Result) {
	return e.exec.Subscribe(ctx, sc, pr)
}

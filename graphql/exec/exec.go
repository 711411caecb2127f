// Package exec is the GraphQL executor: it runs a prepared query or
// mutation for a tenant, each root field as one plan handed to the records
// store (which compiles it to one statement for the request's scope and
// principal), and writes the response from Postgres' JSON (jsonshape); it
// answers introspection from the model, and plans what a subscription's
// events are written with. Every read it makes goes through door.go.
package exec

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/records"
)

// Executor runs prepared queries and mutations for tenants: each root
// field is one statement compiled by package query and run through the
// records store, its JSON written into the response as the selection asks.
type Executor struct {
	store *records.Store
	log   *slog.Logger
	// buffers holds the buffers Execute writes responses into: a nested
	// response is hundreds of KB, which allocated afresh per request costs
	// zeroing and page faults.
	buffers sync.Pool
	// noExact turns off lists written as Postgres built them (exact.go),
	// for tests comparing both ways.
	noExact bool
}

// New returns an executor reading and writing through store (the data
// layer REST shares: tenant scope, statement timeouts, the statement
// cache). exact false turns off writing lists and gets as Postgres built
// them (exact.go): every result is then reshaped by Go, for tests
// comparing both ways.
func New(store *records.Store, log *slog.Logger, exact bool) *Executor {
	return &Executor{store: store, log: log, noExact: !exact}
}

// Execute runs a prepared query or mutation.
// The principal is the scope's: one value, so the scope that compiles the
// statements and the scopes checked here cannot disagree.
func (e *Executor) Execute(ctx context.Context, sc *records.Scope, pr *operation.Prepared) *protocol.Result {
	x := &execCtx{e: e, ctx: ctx, sc: sc, p: sc.Principal(), m: pr.Model, vars: pr.Vars}
	root := ""
	switch pr.Op.Kind {
	case ast.OperationTypeQuery:
		root = pr.Model.QueryType()
	case ast.OperationTypeMutation:
		root = pr.Model.MutationType()
	}
	switch {
	case root == "" && pr.Op.Kind == ast.OperationTypeMutation:
		return protocol.NewRequestError(apperr.Forbidden, "this credential may not write anything")
	case root == "":
		return protocol.NewRequestError(apperr.BadRequest, "subscriptions are served over graphql-transport-ws at /api/v1/dynamic-gql/ws")
	}
	fields := x.collect(pr.Op.SelectionSet, root)
	// The whole response is written into one buffer, {"data": first, so
	// that a result without errors is sent as it stands (see body): the
	// resolvers write their values into it rather than returning copies.
	b, _ := e.buffers.Get().(*bytes.Buffer)
	if b == nil {
		b = new(bytes.Buffer)
	}
	b.Reset()
	b.WriteString(protocol.DataPrefix)
	b.WriteByte('{')
	nullData := false
	for i, cf := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		jsonshape.WriteKey(b, cf.key)
		mark := b.Len()
		if err := x.resolveRoot(b, root, cf); err != nil {
			b.Truncate(mark)
			x.fieldError(cf, err)
			if def := pr.Model.Field(root, cf.field.Name); def != nil && def.NonNull {
				nullData = true
			}
			b.WriteString("null")
			continue
		}
	}
	b.WriteString("}}")
	return protocol.Written(b, &e.buffers, x.errs, nullData)
}

// execCtx is the state of one execution.
type execCtx struct {
	e    *Executor
	ctx  context.Context
	sc   *records.Scope
	p    *auth.Principal
	m    *model.Model
	vars map[string]any
	errs []protocol.Error
	keys int // nested-selection key counter
}

func (x *execCtx) fieldError(cf *cfield, err error) {
	ae := db.Classify(err)
	msg := ae.Message
	if ae.Code == apperr.Internal || ae.Code == apperr.Unavailable {
		if errors.Is(x.ctx.Err(), context.Canceled) { // the client went away: nothing failed here
			x.e.log.Debug("graphql field abandoned", "field", cf.field.Name, "err", x.ctx.Err())
		} else {
			x.e.log.Error("graphql field failed", "field", cf.field.Name, "err", ae)
		}
		msg = "internal error"
	}
	ext := map[string]any{"code": string(ae.Code)}
	if len(ae.Details) > 0 {
		ext["details"] = ae.Details
	}
	ge := protocol.Error{Message: msg, Path: []any{cf.key}, Extensions: ext}
	if cf.field.Loc.Line > 0 {
		ge.Locations = []protocol.Location{cf.field.Loc}
	}
	x.errs = append(x.errs, ge)
}

// cfield is a field of a selection set after fragment expansion, merged
// by response key.
type cfield struct {
	key   string
	field *operation.Field
	sel   operation.SelectionSet // merged sub-selections of every occurrence
}

// collect expands fragments, applies @skip/@include and merges fields by
// response key, in order of first appearance (GraphQL CollectFields).
func (x *execCtx) collect(set operation.SelectionSet, typeName string) []*cfield {
	var out []*cfield
	var index map[string]*cfield // beyond a few fields; below, out is searched
	find := func(key string) *cfield {
		if index != nil {
			return index[key]
		}
		for _, cf := range out {
			if cf.key == key {
				return cf
			}
		}
		return nil
	}
	var walk func(set operation.SelectionSet)
	walk = func(set operation.SelectionSet) {
		for _, s := range set {
			switch s := s.(type) {
			case *operation.Field:
				if !x.included(s.Directives) {
					continue
				}
				key := s.Alias
				if key == "" {
					key = s.Name
				}
				if cf := find(key); cf != nil {
					cf.sel = append(cf.sel[:len(cf.sel):len(cf.sel)], s.SelectionSet...) // never into the shared tree
					continue
				}
				cf := &cfield{key: key, field: s, sel: s.SelectionSet}
				out = append(out, cf)
				if index != nil {
					index[key] = cf
				} else if len(out) > 8 {
					index = make(map[string]*cfield, 2*len(out))
					for _, c := range out {
						index[c.key] = c
					}
				}
			case *operation.InlineFragment:
				if !x.included(s.Directives) || (s.TypeCondition != "" && s.TypeCondition != typeName) {
					continue
				}
				walk(s.SelectionSet)
			}
		}
	}
	walk(set)
	return out
}

func (x *execCtx) included(ds []operation.Directive) bool {
	for _, d := range ds {
		args := operation.ArgumentMap(d.Args, x.vars)
		switch d.Name {
		case "skip":
			if b, _ := args["if"].(bool); b {
				return false
			}
		case "include":
			if b, _ := args["if"].(bool); !b {
				return false
			}
		}
	}
	return true
}

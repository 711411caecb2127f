package graphql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
	"github.com/vektah/gqlparser/v2/parser"
	"github.com/vektah/gqlparser/v2/validator"
	validatorrules "github.com/vektah/gqlparser/v2/validator/rules"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Limits protect the server from expensive documents.
type Limits struct {
	MaxDocumentBytes int // size of the query text
	MaxDepth         int // field nesting (introspection excluded)
	MaxAliases       int // aliased fields per document
	// MaxComplexity bounds the estimated number of values a response can
	// hold: each field costs 1, and a list field multiplies the cost of its
	// selection by its limit (first, last, topK; the default page size
	// when absent).
	MaxComplexity int
}

// DefaultLimits are used for zero fields of Limits.
var DefaultLimits = Limits{MaxDocumentBytes: 64 << 10, MaxDepth: 12, MaxAliases: 50, MaxComplexity: 200000}

func (l Limits) withDefaults() Limits {
	if l.MaxDocumentBytes <= 0 {
		l.MaxDocumentBytes = DefaultLimits.MaxDocumentBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultLimits.MaxDepth
	}
	if l.MaxAliases <= 0 {
		l.MaxAliases = DefaultLimits.MaxAliases
	}
	if l.MaxComplexity <= 0 {
		l.MaxComplexity = DefaultLimits.MaxComplexity
	}
	return l
}

// Engine executes GraphQL documents for tenants.
type Engine struct {
	store  *records.Store
	limits Limits
	log    *slog.Logger
	// rules are the GraphQL specification's validation rules (gqlparser's default set),
	// built once: ValidateWithRules only reads them.
	rules *validatorrules.Rules
}

// NewEngine returns an engine reading and writing through store (the data
// layer REST shares: tenant scope, statement timeouts, the statement cache).
func NewEngine(store *records.Store, limits Limits, log *slog.Logger) *Engine {
	return &Engine{store: store, limits: limits.withDefaults(), log: log, rules: validatorrules.NewDefaultRules()}
}

type modelMemo struct {
	m   *Model
	err error
}

// ModelFor returns the GraphQL model of the scope's active schema version
// as principal p may see it (nil: all of it), built once per version and
// visibility: introspection, schema.graphql and validation then show a
// credential only the entities, fields, relationships and operations its
// scopes allow.
func ModelFor(sc *records.Scope, p *auth.Principal) (*Model, error) {
	key, allow := visibilityKey(sc.Schema.Def, p)
	mm := sc.Schema.Memo("graphql.Model"+key, func() any {
		m, err := build(sc.Schema.Def, allow)
		return modelMemo{m, err}
	}).(modelMemo)
	return mm.m, mm.err
}

var visibilityOps = [...]string{"read", "create", "update", "delete"}

// visibilityKey is the cache key of what p may do on def's entities and
// relationships ("" when p may do everything, the shared model) and the
// matching Allows.
func visibilityKey(def *schema.Definition, p *auth.Principal) (string, Allows) {
	if p == nil {
		return "", nil
	}
	var b strings.Builder
	all := true
	bit := func(kind, name string) {
		for _, op := range visibilityOps {
			if p.Scopes.Allows(kind, name, op) {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
				all = false
			}
		}
	}
	b.WriteByte(':')
	for i := range def.Entities {
		bit("entity", def.Entities[i].Name)
	}
	for i := range def.Relationships {
		bit("relationship", def.Relationships[i].Name)
	}
	if all {
		return "", nil
	}
	return b.String(), p.Scopes.Allows
}

// Request is a GraphQL request (GraphQL over HTTP).
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
}

// Error is one GraphQL error.
type Error struct {
	Message    string              `json:"message"`
	Locations  []gqlerror.Location `json:"locations,omitempty"`
	Path       []any               `json:"path,omitempty"`
	Extensions map[string]any      `json:"extensions,omitempty"`
}

// Result is an executed (or refused) request.
type Result struct {
	// Data is the raw "data" member; nil when the request failed before
	// execution (then there is no data member at all).
	Data   []byte
	Errors []Error
	// RequestError marks errors raised before execution (syntax,
	// validation, variables, limits): HTTP 400 under
	// application/graphql-response+json.
	RequestError bool
}

// MarshalJSON renders {"errors": [...], "data": ...}.
func (r *Result) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	if len(r.Errors) > 0 {
		b.WriteString(`"errors":`)
		e, err := json.Marshal(r.Errors)
		if err != nil {
			return nil, err
		}
		b.Write(e)
	}
	if r.Data != nil {
		if len(r.Errors) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"data":`)
		b.Write(r.Data)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func requestError(code apperr.Code, msg string) *Result {
	return &Result{RequestError: true, Errors: []Error{{Message: msg, Extensions: map[string]any{"code": string(code)}}}}
}

// errorResult is a request error carrying err's code and message; an
// internal error is logged with the request and shows only "internal error",
// as api.WriteError does for REST.
func errorResult(ctx context.Context, err error) *Result {
	ae := api.Classify(err)
	if ae.Code == apperr.Internal || ae.Code == apperr.Unavailable {
		api.LoggerFrom(ctx).Error("graphql request failed", "code", ae.Code, "err", ae)
		return requestError(ae.Code, "internal error")
	}
	return requestError(ae.Code, ae.Message)
}

func fromGQL(list gqlerror.List, code apperr.Code) *Result {
	r := &Result{RequestError: true}
	for _, e := range list {
		ge := Error{Message: e.Message, Locations: e.Locations, Extensions: map[string]any{"code": string(code)}}
		for _, p := range e.Path {
			switch x := p.(type) {
			case ast.PathName:
				ge.Path = append(ge.Path, string(x))
			case ast.PathIndex:
				ge.Path = append(ge.Path, int(x))
			}
		}
		r.Errors = append(r.Errors, ge)
	}
	return r
}

// prepared is a parsed, validated operation ready to execute.
type prepared struct {
	m    *Model
	doc  *ast.QueryDocument
	op   *ast.OperationDefinition
	vars map[string]any
}

// Prepare parses and validates a request against the model and checks the
// limits. allowed lists the operation types the transport accepts
// (GET: query only).
func (e *Engine) Prepare(ctx context.Context, m *Model, req Request) (*prepared, *Result) {
	if req.Query == "" {
		return nil, requestError(apperr.BadRequest, "the request has no query")
	}
	if len(req.Query) > e.limits.MaxDocumentBytes {
		return nil, requestError(apperr.TooLarge, fmt.Sprintf("the query document exceeds %d bytes", e.limits.MaxDocumentBytes))
	}
	doc, err := parser.ParseQuery(&ast.Source{Input: req.Query})
	if err != nil {
		var ge *gqlerror.Error
		if errors.As(err, &ge) {
			return nil, fromGQL(gqlerror.List{ge}, "GRAPHQL_PARSE_FAILED")
		}
		return nil, requestError("GRAPHQL_PARSE_FAILED", err.Error())
	}
	// The limits come before validation: validation and execution expand
	// fragments, the limiter measures each fragment once.
	lim := limiter{ctx: ctx, lim: e.limits, schema: m.Schema, doc: doc, vars: req.Variables}
	if r := lim.measure(); r != nil {
		return nil, r
	}
	if ge := mergeDocument(doc); ge != nil {
		return nil, fromGQL(gqlerror.List{ge}, "GRAPHQL_VALIDATION_FAILED")
	}
	if errs := validator.ValidateWithRules(m.Schema, doc, e.rules); len(errs) > 0 {
		return nil, fromGQL(errs, "GRAPHQL_VALIDATION_FAILED")
	}
	var op *ast.OperationDefinition
	switch {
	case req.OperationName != "":
		op = doc.Operations.ForName(req.OperationName)
		if op == nil {
			return nil, requestError(apperr.BadRequest, fmt.Sprintf("unknown operation %q", req.OperationName))
		}
	case len(doc.Operations) == 1:
		op = doc.Operations[0]
	default:
		return nil, requestError(apperr.BadRequest, "the document has several operations: operationName is required")
	}
	vars, verr := validator.VariableValues(m.Schema, op, req.Variables)
	if verr != nil {
		var ge *gqlerror.Error
		if errors.As(verr, &ge) {
			return nil, fromGQL(gqlerror.List{ge}, apperr.BadRequest)
		}
		return nil, requestError(apperr.BadRequest, verr.Error())
	}
	return &prepared{m: m, doc: doc, op: op, vars: vars}, nil
}

func intArg(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case int:
		return x, true
	case float64:
		return int(x), true
	case json.Number:
		n, err := x.Int64()
		return int(n), err == nil
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

// Execute runs a prepared query or mutation.
func (e *Engine) Execute(ctx context.Context, sc *records.Scope, p *auth.Principal, pr *prepared) *Result {
	x := &execCtx{e: e, ctx: ctx, sc: sc, p: p, m: pr.m, vars: pr.vars}
	var root *ast.Definition
	switch pr.op.Operation {
	case ast.Query:
		root = pr.m.Schema.Query
	case ast.Mutation:
		root = pr.m.Schema.Mutation
	}
	switch {
	case root == nil && pr.op.Operation == ast.Mutation:
		return requestError(apperr.Forbidden, "this credential may not write anything")
	case root == nil:
		return requestError(apperr.BadRequest, "subscriptions are served over graphql-transport-ws at /api/v1/dynamic-gql/ws")
	}
	fields := x.collect(pr.op.SelectionSet, root.Name)
	var b bytes.Buffer
	b.WriteByte('{')
	nullData := false
	for i, cf := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		writeKey(&b, cf.key)
		v, err := x.resolveRoot(root, cf)
		if err != nil {
			x.fieldError(cf, err)
			if cf.field.Definition != nil && cf.field.Definition.Type.NonNull {
				nullData = true
			}
			b.WriteString("null")
			continue
		}
		b.Write(v)
	}
	b.WriteByte('}')
	res := &Result{Data: b.Bytes(), Errors: x.errs}
	if nullData {
		res.Data = []byte("null")
	}
	return res
}

// execCtx is the state of one execution.
type execCtx struct {
	e    *Engine
	ctx  context.Context
	sc   *records.Scope
	p    *auth.Principal
	m    *Model
	vars map[string]any
	errs []Error
	keys int // nested-selection key counter
}

func (x *execCtx) fieldError(cf *cfield, err error) {
	ae := api.Classify(err)
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
	ge := Error{Message: msg, Path: []any{cf.key}, Extensions: ext}
	if cf.field.Position != nil {
		ge.Locations = []gqlerror.Location{{Line: cf.field.Position.Line, Column: cf.field.Position.Column}}
	}
	x.errs = append(x.errs, ge)
}

// cfield is a field of a selection set after fragment expansion, merged
// by response key.
type cfield struct {
	key   string
	field *ast.Field
	sel   ast.SelectionSet // merged sub-selections of every occurrence
}

// collect expands fragments, applies @skip/@include and merges fields by
// response key, in order of first appearance (GraphQL CollectFields).
func (x *execCtx) collect(set ast.SelectionSet, typeName string) []*cfield {
	var out []*cfield
	index := map[string]*cfield{}
	var walk func(set ast.SelectionSet)
	walk = func(set ast.SelectionSet) {
		for _, s := range set {
			switch s := s.(type) {
			case *ast.Field:
				if !x.included(s.Directives) {
					continue
				}
				key := s.Alias
				if key == "" {
					key = s.Name
				}
				if cf, ok := index[key]; ok {
					cf.sel = append(cf.sel, s.SelectionSet...)
					continue
				}
				cf := &cfield{key: key, field: s, sel: append(ast.SelectionSet(nil), s.SelectionSet...)}
				index[key] = cf
				out = append(out, cf)
			case *ast.InlineFragment:
				if !x.included(s.Directives) || (s.TypeCondition != "" && s.TypeCondition != typeName) {
					continue
				}
				walk(s.SelectionSet)
			case *ast.FragmentSpread:
				if !x.included(s.Directives) || s.Definition == nil || s.Definition.TypeCondition != typeName {
					continue
				}
				walk(s.Definition.SelectionSet)
			}
		}
	}
	walk(set)
	return out
}

func (x *execCtx) included(ds ast.DirectiveList) bool {
	for _, d := range ds {
		args := d.ArgumentMap(x.vars)
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

func writeKey(b *bytes.Buffer, k string) {
	b.WriteByte('"')
	b.WriteString(k) // GraphQL names need no escaping
	b.WriteString(`":`)
}

func writeString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

// query runs one compiled statement through the records store and returns
// its JSON value.
func (x *execCtx) query(st query.Statement, entity string) ([]byte, error) {
	out, err := x.e.store.Run(x.ctx, x.sc, entity, st)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.Wrap(err, "the statement returned no row")
	}
	return out, err
}

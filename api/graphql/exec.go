package graphql

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"strconv"
	"sync"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
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

// Bounds of the cache of prepared operations (per engine, so per process).
const (
	preparedEntries = 2048
	preparedBytes   = 64 << 20
)

// Engine executes GraphQL documents for tenants.
type Engine struct {
	store  *records.Store
	limits Limits
	log    *slog.Logger
	// cache holds prepared operations; preparers and variableValidators
	// pool the library's stateful parser, validators and normalizer.
	cache              *opCache
	preparers          sync.Pool
	variableValidators sync.Pool
	// buffers holds the buffers Execute writes responses into: a nested
	// response is hundreds of KB, which allocated afresh per request costs
	// zeroing and page faults.
	buffers sync.Pool
	// noExact turns off lists written as Postgres built them (exact.go),
	// for tests comparing both ways.
	noExact bool
}

// Largest response buffer kept for another request.
const maxPooledBuffer = 4 << 20

// NewEngine returns an engine reading and writing through store (the data
// layer REST shares: tenant scope, statement timeouts, the statement cache).
func NewEngine(store *records.Store, limits Limits, log *slog.Logger) *Engine {
	return &Engine{store: store, limits: limits.withDefaults(), log: log, cache: newOpCache(preparedEntries, preparedBytes)}
}

// Request is a GraphQL request (GraphQL over HTTP).
type Request struct {
	Query         string         `json:"query"`
	OperationName string         `json:"operationName"`
	Variables     map[string]any `json:"variables"`
	Extensions    map[string]any `json:"extensions"`
	// variablesJSON is the variables object as sent, when the transport
	// has it (the library's variable validation reads JSON).
	VariablesJSON []byte
}

// Error is one GraphQL error.
type Error struct {
	Message    string         `json:"message"`
	Locations  []Location     `json:"locations,omitempty"`
	Path       []any          `json:"path,omitempty"`
	Extensions map[string]any `json:"extensions,omitempty"`
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
	// body is the whole response, {"data":Data}, when Execute wrote it
	// around Data (Data is a slice of it) and there are no errors:
	// MarshalJSON returns it rather than copying Data once more.
	body []byte
	// buf holds body and Data, from pool; release hands it back.
	buf  *bytes.Buffer
	pool *sync.Pool
}

// release hands the buffer r was written into back to the engine for
// another request: r (its Data and what MarshalJSON returned) must not be
// used after.
func (r *Result) Release() {
	if r.buf != nil && r.buf.Cap() <= maxPooledBuffer {
		r.pool.Put(r.buf)
	}
	r.buf, r.body, r.Data = nil, nil, nil
}

// MarshalJSON renders {"errors": [...], "data": ...}.
func (r *Result) MarshalJSON() ([]byte, error) {
	if r.body != nil && len(r.Errors) == 0 && len(r.body) == len(DataPrefix)+len(r.Data)+1 &&
		len(r.Data) > 0 && &r.body[len(DataPrefix)] == &r.Data[0] {
		return r.body, nil
	}
	var b bytes.Buffer
	b.Grow(len(r.Data) + len(DataPrefix) + 1)
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

func NewRequestError(code apperr.Code, msg string) *Result {
	return &Result{RequestError: true, Errors: []Error{{Message: msg, Extensions: map[string]any{"code": string(code)}}}}
}

// errorResult is a request error carrying err's code and message; an
// internal error is logged with the request and shows only "internal error",
// as api.WriteError does for REST.
func ErrorResult(ctx context.Context, err error) *Result {
	ae := api.Classify(err)
	if ae.Code == apperr.Internal || ae.Code == apperr.Unavailable {
		api.LoggerFrom(ctx).Error("graphql request failed", "code", ae.Code, "err", ae)
		return NewRequestError(ae.Code, "internal error")
	}
	return NewRequestError(ae.Code, ae.Message)
}

// prepared is a prepared operation with one request's coerced variables.
type Prepared struct {
	Model *Model
	Op    *Operation
	Vars  map[string]any
}

func IntArg(v any) (int, bool) {
	switch x := v.(type) {
	case int64:
		return int(x), true
	case int:
		return x, true
	case float64:
		return int(x), true
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return int(n), true
		}
		// An Int variable may be written 2.0 or 3e1 (validation accepts
		// whole numbers in any JSON form).
		f, err := x.Float64()
		if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
			return 0, false
		}
		return int(f), true
	case string:
		n, err := strconv.Atoi(x)
		return n, err == nil
	}
	return 0, false
}

// Execute runs a prepared query or mutation.
func (e *Engine) Execute(ctx context.Context, sc *records.Scope, p *auth.Principal, pr *Prepared) *Result {
	x := &execCtx{e: e, ctx: ctx, sc: sc, p: p, m: pr.Model, vars: pr.Vars}
	root := ""
	switch pr.Op.Kind {
	case ast.OperationTypeQuery:
		root = pr.Model.QueryType()
	case ast.OperationTypeMutation:
		root = pr.Model.MutationType()
	}
	switch {
	case root == "" && pr.Op.Kind == ast.OperationTypeMutation:
		return NewRequestError(apperr.Forbidden, "this credential may not write anything")
	case root == "":
		return NewRequestError(apperr.BadRequest, "subscriptions are served over graphql-transport-ws at /api/v1/dynamic-gql/ws")
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
	b.WriteString(DataPrefix)
	b.WriteByte('{')
	nullData := false
	for i, cf := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		WriteKey(b, cf.key)
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
	full := b.Bytes()
	res := &Result{Data: full[len(DataPrefix) : len(full)-1], Errors: x.errs, buf: b, pool: &e.buffers}
	switch {
	case nullData:
		res.Data = []byte("null")
	case len(x.errs) == 0:
		res.body = full
	}
	return res
}

// dataPrefix starts a response holding data and no errors.
const DataPrefix = `{"data":`

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
	if cf.field.Loc.Line > 0 {
		ge.Locations = []Location{cf.field.Loc}
	}
	x.errs = append(x.errs, ge)
}

// cfield is a field of a selection set after fragment expansion, merged
// by response key.
type cfield struct {
	key   string
	field *Field
	sel   SelectionSet // merged sub-selections of every occurrence
}

// collect expands fragments, applies @skip/@include and merges fields by
// response key, in order of first appearance (GraphQL CollectFields).
func (x *execCtx) collect(set SelectionSet, typeName string) []*cfield {
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
	var walk func(set SelectionSet)
	walk = func(set SelectionSet) {
		for _, s := range set {
			switch s := s.(type) {
			case *Field:
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
			case *InlineFragment:
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

func (x *execCtx) included(ds []Directive) bool {
	for _, d := range ds {
		args := ArgumentMap(d.Args, x.vars)
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

func WriteKey(b *bytes.Buffer, k string) {
	b.WriteByte('"')
	b.WriteString(k) // GraphQL names need no escaping
	b.WriteString(`":`)
}

func WriteString(b *bytes.Buffer, s string) {
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

// queryFunc runs st like query, handing its JSON value to fn without a
// copy (raw is valid only until fn returns).
func (x *execCtx) queryFunc(st query.Statement, entity string, fn func(raw []byte) error) error {
	err := x.e.store.RunFunc(x.ctx, x.sc, entity, st, fn)
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.Wrap(err, "the statement returned no row")
	}
	return err
}

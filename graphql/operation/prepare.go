package operation

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"strconv"
	"strings"
	"weak"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astnormalization"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astparser"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astvalidation"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/lexer/position"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/operationreport"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/variablesvalidation"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/obs"
)

// The front end. A request's document goes, once per distinct (model,
// query text, operation name), through:
//
//  1. graphql-go-tools' parser (astparser) into a pooled ast.Document;
//  2. our limits (limits.go), linear in the document, then inlining of
//     fragment spreads (inline.go, bounded by the limits) and merge of
//     repeated selections (merge.go), linear in the expansion: the
//     library's normalizer and validator expand fragment spreads and
//     compare and deduplicate fields pairwise, so a hostile document must
//     be refused or folded before they see it;
//  3. the library's directive rule (astvalidation) on the document as
//     written: normalization drops @defer, which the executor does not
//     implement, so an unknown directive is refused before it;
//  4. the library's normalization (astnormalization: the chosen operation
//     kept, fragments inlined, literal @skip/@include applied, fields
//     deduplicated), without variable extraction: no argument is ever
//     turned into a variable;
//  5. the library's operation validation (astvalidation, its default
//     rules) of the normalized operation, as the library intends (its
//     fragment and field-merging rules expect inlined fragments); then
//     steps 4 and 5 for every other operation of the document, on a
//     second parse of it: a document is valid only when all its
//     operations are;
//  6. conversion of the operation into the executor's tree (tree.go).
//
// The result (an operation) is cached; every request then only validates
// its variables with the library's variablesvalidation, coerces them, and
// executes.

// Operation is a prepared operation: immutable, shared by the requests
// that send the same document to the same model.
type Operation struct {
	Kind         ast.OperationType
	SelectionSet SelectionSet
	// doc is the normalized document holding only this operation: the
	// library's variable validation reads its variable definitions.
	doc     *ast.Document
	varDefs []varDef
	// byVariables: a limit multiplier came from a variable, so the limits
	// are measured again with each request's variables.
	byVariables bool
	size        int // estimated bytes held (cache accounting)
}

type varDef struct {
	name    string
	def     *Value // default value; nil when none
	list    bool   // the type is a list: a single value is coerced to a list of one
	nonNull bool
	check   varCheck
	// ints: the type's named type is Int. The library's variable
	// validation only checks that such a value is a number; intsValid
	// refuses the fractions and the numbers beyond 64 bits it lets pass.
	ints bool
}

// varCheck is what a variable of a built-in scalar type accepts without
// the library's walk of the operation: a value it accepts is accepted by
// the library too; anything else goes to the library (which words the
// errors).
type varCheck uint8

const (
	checkLibrary varCheck = iota // the library validates
	checkString                  // String or ID: a JSON string
	checkBoolean                 // Boolean: true or false
	checkFloat                   // Float: any finite JSON number
)

// checkOf is the check of a variable of named type t.
func checkOf(t string) varCheck {
	switch t {
	case "String", "ID":
		return checkString
	case "Boolean":
		return checkBoolean
	case "Float":
		return checkFloat
	}
	return checkLibrary
}

// scalarsValid reports whether the variables are valid by the operation's
// definitions alone: each definition of a built-in scalar type with a
// check, given a value of that type (or null when nullable) or left out
// when nullable or defaulted, and nothing else given.
func scalarsValid(defs []varDef, given map[string]any) bool {
	n := 0
	for i := range defs {
		d := &defs[i]
		if d.check == checkLibrary {
			return false
		}
		v, ok := given[d.name]
		if !ok {
			if d.nonNull && d.def == nil {
				return false
			}
			continue
		}
		n++
		switch v := v.(type) {
		case nil:
			ok = !d.nonNull
		case string:
			ok = d.check == checkString
		case bool:
			ok = d.check == checkBoolean
		case json.Number:
			_, err := strconv.ParseFloat(string(v), 64)
			ok = d.check == checkFloat && err == nil
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	return n == len(given)
}

// OpName is the operation type as clients name it.
func OpName(k ast.OperationType) string {
	switch k {
	case ast.OperationTypeMutation:
		return "mutation"
	case ast.OperationTypeSubscription:
		return "subscription"
	}
	return "query"
}

// preparer is the pooled state of one preparation: the library's parser,
// validators and normalizer keep walker state, so each goroutine borrows
// one.
type preparer struct {
	doc        *ast.Document
	parser     *astparser.Parser
	directives *astvalidation.OperationValidator
	validator  *astvalidation.OperationValidator
	normalizer *astnormalization.OperationNormalizer
	report     operationreport.Report
	// others holds the document again while the operations not executed
	// are validated (normalization keeps one operation of a document);
	// others' validator is the default one without the rules on the
	// whole document, which the chosen operation's validation ran once.
	others          *ast.Document
	othersValidator *astvalidation.OperationValidator
}

func newPreparer() *preparer {
	return &preparer{
		doc:        ast.NewSmallDocument(),
		parser:     astparser.NewParser(),
		directives: astvalidation.NewOperationValidator([]astvalidation.Rule{astvalidation.DirectivesAreDefined()}),
		validator:  astvalidation.DefaultOperationValidator(),
		normalizer: astnormalization.NewWithOpts(
			astnormalization.WithRemoveNotMatchingOperationDefinitions(),
			astnormalization.WithInlineFragmentSpreads(),
			astnormalization.WithRemoveFragmentDefinitions(),
		),
		others: ast.NewSmallDocument(),
		othersValidator: astvalidation.NewOperationValidator([]astvalidation.Rule{
			astvalidation.AllVariablesUsed(),
			astvalidation.AllVariableUsesDefined(),
			astvalidation.DocumentContainsExecutableOperation(),
			astvalidation.FieldSelections(),
			astvalidation.FieldSelectionMerging(false),
			astvalidation.KnownArguments(),
			astvalidation.Values(false),
			astvalidation.ArgumentUniqueness(),
			astvalidation.RequiredArguments(),
			astvalidation.Fragments(),
			astvalidation.DirectivesAreDefined(),
			astvalidation.DirectivesAreInValidLocations(),
			astvalidation.VariableUniqueness(),
			astvalidation.DirectivesAreUniquePerLocation(),
			astvalidation.VariablesAreInputTypes(),
		}),
	}
}

// Prepare parses and validates a request against the model and checks the
// limits, through the cache of prepared operations; then it validates and
// coerces the request's variables.
func (e *Frontend) Prepare(ctx context.Context, m *model.Model, req protocol.Request) (*Prepared, *protocol.Result) {
	if req.Query == "" {
		return nil, protocol.NewRequestError(apperr.BadRequest, "the request has no query")
	}
	if len(req.Query) > e.limits.MaxDocumentBytes {
		return nil, protocol.NewRequestError(apperr.TooLarge, fmt.Sprintf("the query document exceeds %d bytes", e.limits.MaxDocumentBytes))
	}
	key := opKey{m: weak.Make(m), name: req.OperationName, query: req.Query}
	op, hit := e.cache.get(key)
	if !hit {
		var res *protocol.Result
		if op, res = e.compile(ctx, m, req); res != nil {
			return nil, res
		}
		e.cache.put(key, op)
	} else if op.byVariables {
		// The cached document passed with other variables: measure again.
		lim := limiter{ctx: ctx, lim: e.limits, m: m, doc: op.doc, vars: req.Variables}
		if r := lim.measure(); r != nil {
			return nil, r
		}
	}
	vars, res := e.variables(ctx, m, op, req)
	if res != nil {
		return nil, res
	}
	return &Prepared{Model: m, Op: op, Vars: vars}, nil
}

// compile runs steps 1-6 on a document not in the cache.
func (e *Frontend) compile(ctx context.Context, m *model.Model, req protocol.Request) (*Operation, *protocol.Result) {
	p, _ := e.preparers.Get().(*preparer)
	if p == nil {
		p = newPreparer()
	}
	defer func() {
		p.doc.Reset()
		p.others.Reset()
		p.report.Reset()
		e.preparers.Put(p)
	}()
	doc, rep := p.doc, &p.report
	doc.Input.ResetInputString(req.Query)
	p.parser.Parse(doc, rep)
	if rep.HasErrors() {
		return nil, reportResult(ctx, rep, "GRAPHQL_PARSE_FAILED", req.Query, nil)
	}
	lim := limiter{ctx: ctx, lim: e.limits, m: m, doc: doc, vars: req.Variables}
	if r := lim.measure(); r != nil {
		return nil, r
	}
	inlineSpreads(doc, lim.names)
	if ge := mergeDocument(doc); ge != nil {
		return nil, protocol.ValidationFailed(*ge)
	}
	p.directives.Validate(doc, m.Doc(), rep)
	if rep.HasErrors() {
		return nil, reportResult(ctx, rep, "GRAPHQL_VALIDATION_FAILED", req.Query, doc)
	}
	ref, res := pickOperation(doc, req.OperationName)
	if res != nil {
		return nil, res
	}
	// The picked operation by its own name (an only operation may be named
	// without the request naming it).
	p.normalizer.NormalizeNamedOperation(doc, m.Doc(), []byte(doc.OperationDefinitionNameString(ref)), rep)
	if !rep.HasErrors() {
		p.validator.Validate(doc, m.Doc(), rep)
	}
	var failed *protocol.Result
	if rep.HasErrors() {
		failed = reportResult(ctx, rep, "GRAPHQL_VALIDATION_FAILED", req.Query, doc)
		rep.Reset()
	}
	// The document is valid only when all its operations are: the others
	// are validated too, as graphql-js does, and their errors reported
	// after the chosen one's.
	if others := p.validateOthers(ctx, m, req.Query, lim.names, ref); len(others) > 0 {
		if failed == nil {
			failed = &protocol.Result{RequestError: true}
		}
		failed.Errors = append(failed.Errors, others...)
	}
	if failed != nil {
		return nil, failed
	}
	od := doc.OperationDefinitions[ref]
	op := &Operation{Kind: od.OperationType, doc: doc, byVariables: lim.byVariables}
	if od.HasSelections {
		op.SelectionSet = treeOf(doc, od.SelectionSet)
	}
	if od.HasVariableDefinitions {
		for _, vr := range od.VariableDefinitions.Refs {
			vd := doc.VariableDefinitions[vr]
			d := varDef{name: strings.Clone(doc.VariableDefinitionNameString(vr))}
			if vd.DefaultValue.IsDefined {
				d.def = valueOf(doc, vd.DefaultValue.Value)
			}
			t := doc.Types[vd.Type]
			if d.nonNull = t.TypeKind == ast.TypeKindNonNull; d.nonNull {
				t = doc.Types[t.OfType]
			}
			d.list = t.TypeKind == ast.TypeKindList
			if t.TypeKind == ast.TypeKindNamed {
				d.check = checkOf(doc.Input.ByteSliceString(t.Name))
			}
			d.ints = doc.ResolveTypeNameString(vd.Type) == "Int"
			op.varDefs = append(op.varDefs, d)
		}
	}
	op.size = documentBytes(doc) + len(req.Query) + len(req.OperationName)
	// The cache keeps the document: the preparer takes a fresh one.
	p.doc = ast.NewSmallDocument()
	return op, nil
}

// validateOthers validates every operation of query but the chosen one
// (ref) against the model, each normalized and validated as the chosen one
// is, on a second parse of the document (normalization keeps only the
// operation it is asked for): the limits measured every operation and
// bounded the copies inlining makes across the whole document, so this
// is linear in the document. It returns their errors, located.
func (p *preparer) validateOthers(ctx context.Context, m *model.Model, query string, frags map[string]int, chosen int) []protocol.Error {
	if len(p.doc.OperationDefinitions) < 2 {
		return nil
	}
	doc, rep := p.others, &p.report
	doc.Input.ResetInputString(query)
	p.parser.Parse(doc, rep)
	if rep.HasErrors() { // parsed once already: never
		return reportResult(ctx, rep, "GRAPHQL_PARSE_FAILED", query, nil).Errors
	}
	inlineSpreads(doc, frags)
	if ge := mergeDocument(doc); ge != nil { // merged once already: never
		return protocol.ValidationFailed(*ge).Errors
	}
	var ops []ast.Node
	for _, n := range doc.RootNodes {
		if n.Kind == ast.NodeKindOperationDefinition && n.Ref != chosen {
			ops = append(ops, n)
		}
	}
	var errs []protocol.Error
	for _, n := range ops {
		doc.RootNodes = append(doc.RootNodes[:0], n)
		p.normalizer.NormalizeNamedOperation(doc, m.Doc(), []byte(doc.OperationDefinitionNameString(n.Ref)), rep)
		if !rep.HasErrors() {
			p.othersValidator.Validate(doc, m.Doc(), rep)
		}
		if rep.HasErrors() {
			errs = append(errs, reportResult(ctx, rep, "GRAPHQL_VALIDATION_FAILED", query, doc).Errors...)
			rep.Reset()
		}
	}
	return errs
}

// pickOperation finds the operation to execute, as before normalization
// keeps only it.
func pickOperation(doc *ast.Document, name string) (int, *protocol.Result) {
	found, count := -1, 0
	for _, n := range doc.RootNodes {
		if n.Kind != ast.NodeKindOperationDefinition {
			continue
		}
		count++
		if name == "" || doc.OperationDefinitionNameString(n.Ref) == name {
			found = n.Ref
		}
	}
	switch {
	case name != "" && found < 0:
		return 0, protocol.NewRequestError(apperr.BadRequest, fmt.Sprintf("unknown operation %q", name))
	case name == "" && count > 1:
		return 0, protocol.NewRequestError(apperr.BadRequest, "the document has several operations: operationName is required")
	case found < 0:
		return 0, protocol.NewRequestError("GRAPHQL_VALIDATION_FAILED", "the document has no operation")
	}
	return found, nil
}

// variables validates the request's variables and applies defaults: those
// of built-in scalar types by the checks prepared with the operation (the
// get by id's `$id: ID!`), anything else by the library's walk.
func (e *Frontend) variables(ctx context.Context, m *model.Model, op *Operation, req protocol.Request) (map[string]any, *protocol.Result) {
	if len(op.varDefs) == 0 {
		return nil, nil
	}
	if scalarsValid(op.varDefs, req.Variables) {
		if allGiven(op.varDefs, req.Variables) {
			// scalarsValid admits no variable the operation does not
			// define: the given map is already what withDefaults builds.
			return req.Variables, nil
		}
		return withDefaults(op.varDefs, req.Variables), nil
	}
	return e.validateVariables(ctx, m, op, req)
}

// validateVariables is the library's validation of the variables.
func (e *Frontend) validateVariables(ctx context.Context, m *model.Model, op *Operation, req protocol.Request) (map[string]any, *protocol.Result) {
	given, raw := req.Variables, req.VariablesJSON
	// A single value for a list-typed variable is a list of one (input
	// coercion); the library's variable validation expects it done.
	cloned := false
	for _, d := range op.varDefs {
		val, ok := given[d.name]
		if _, isList := val.([]any); !ok || !d.list || val == nil || isList {
			continue
		}
		if !cloned { // the request's map stays as sent
			given, raw, cloned = maps.Clone(given), nil, true
		}
		given[d.name] = []any{val}
	}
	if raw == nil {
		raw = []byte("{}")
		if given != nil {
			var err error
			if raw, err = json.Marshal(given); err != nil {
				return nil, protocol.NewRequestError(apperr.BadRequest, "variables must be a JSON object")
			}
		}
	}
	v, _ := e.variableValidators.Get().(*variablesvalidation.VariablesValidator)
	if v == nil {
		v = variablesvalidation.NewVariablesValidator(variablesvalidation.VariablesValidatorOptions{})
	}
	err := v.Validate(op.doc, m.Doc(), raw)
	e.variableValidators.Put(v)
	if err != nil {
		var rep operationreport.Report
		if errors.As(err, &rep) {
			return nil, reportResult(ctx, &rep, apperr.BadRequest, req.Query, nil)
		}
		return nil, protocol.NewRequestError(apperr.BadRequest, err.Error())
	}
	if res := intsValid(op.varDefs, given); res != nil {
		return nil, res
	}
	return withDefaults(op.varDefs, given), nil
}

// intsValid refuses an Int variable (or an item of an Int list) that is
// not an integer of 64 bits: without it 1.5 or 1e400 passed the library's
// check and reached the executor, which ignored the argument (a limit of
// 1.5 gave the default page). The bound is 64 bits, not GraphQL's 32:
// INTEGER fields are Postgres bigints, and a variable is how a client
// sends a value beyond 32 bits (a literal is checked as 32-bit by GraphQL's
// validation); fields whose bound is smaller (limit, first) check their own.
func intsValid(defs []varDef, given map[string]any) *protocol.Result {
	for i := range defs {
		if !defs[i].ints {
			continue
		}
		if bad, why := notInt(given[defs[i].name]); bad != "" {
			return protocol.NewRequestError(apperr.BadRequest, fmt.Sprintf("Variable \"$%s\" got invalid value %s; Int cannot represent %s", defs[i].name, bad, why))
		}
	}
	return nil
}

// notInt is the first number in v (a number or nested lists of numbers,
// as the library let pass) that is not a 64-bit integer, with the reason.
// An integer written with an exponent or a zero fraction (3e9, 2.0) is one.
func notInt(v any) (bad, why string) {
	switch x := v.(type) {
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return "", ""
		}
		f, err := strconv.ParseFloat(string(x), 64)
		switch {
		case err == nil && f != math.Trunc(f):
			return string(x), "non-integer value: " + string(x)
		case err != nil || f < math.MinInt64 || f >= math.MaxInt64:
			return string(x), "non 64-bit signed integer value: " + string(x)
		}
	case []any:
		for _, item := range x {
			if bad, why := notInt(item); bad != "" {
				return bad, why
			}
		}
	}
	return "", ""
}

// allGiven reports whether every defined variable with a default was given
// (so withDefaults adds nothing).
func allGiven(defs []varDef, given map[string]any) bool {
	for i := range defs {
		if _, ok := given[defs[i].name]; !ok && defs[i].def != nil {
			return false
		}
	}
	return true
}

// withDefaults is the operation's variables: the given values, and the
// defaults of those left out.
func withDefaults(defs []varDef, given map[string]any) map[string]any {
	vars := make(map[string]any, len(defs))
	for _, d := range defs {
		val, ok := given[d.name]
		if !ok {
			if d.def != nil {
				vars[d.name] = d.def.Eval(nil)
			}
			continue
		}
		vars[d.name] = val
	}
	return vars
}

func locationOf(p position.Position) protocol.Location {
	return protocol.Location{Line: int(p.LineStart), Column: int(p.CharStart)}
}

// endOf is the location just past the end of the document (where the
// parser reports an unexpected end, without a position).
func endOf(q string) protocol.Location {
	line := 1 + strings.Count(q, "\n")
	return protocol.Location{Line: line, Column: 1 + len(q) - (strings.LastIndexByte(q, '\n') + 1)}
}

// reportResult turns the library's report into a request error with code:
// each external error with its message and locations; an internal error
// (a fault of the library or of ours, not of the document) is logged and
// masked.
func reportResult(ctx context.Context, rep *operationreport.Report, code apperr.Code, query string, doc *ast.Document) *protocol.Result {
	r := &protocol.Result{RequestError: true}
	for i := range rep.ExternalErrors {
		ee := &rep.ExternalErrors[i]
		ge := protocol.Error{Message: ee.Message, Extensions: map[string]any{"code": string(code)}}
		if len(ee.Locations) == 0 && doc != nil {
			ge.Locations = locate(doc, ee)
		}
		for _, l := range ee.Locations {
			if l.Line == 0 {
				ge.Locations = append(ge.Locations, endOf(query))
				continue
			}
			ge.Locations = append(ge.Locations, protocol.Location{Line: int(l.Line), Column: int(l.Column)})
		}
		r.Errors = append(r.Errors, ge)
	}
	if len(r.Errors) == 0 {
		obs.LoggerFrom(ctx).Error("graphql document failed inside the library", "err", errors.Join(rep.InternalErrors...))
		r.Errors = []protocol.Error{{Message: "internal error", Extensions: map[string]any{"code": string(apperr.Internal)}}}
	}
	return r
}

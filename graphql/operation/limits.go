package operation

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/lexer/position"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/query"
)

// limiter measures a parsed document against the limits before anything
// else looks at it (validation, execution): both of those expand fragment
// spreads, so a document of doubling spreads or of thousands of repeated
// fields must be refused here, in time linear in its text.
//
// Each fragment definition is measured once and its (relative depth,
// complexity, aliases) memoised, so a spread costs O(1) however often it
// occurs. A spread of a fragment being measured (a cycle) is refused here,
// as validation would, since validation itself could not finish on a
// cycle of doubling spreads; so are an unknown fragment and an unused one
// (which normalization would otherwise drop unread). The walk stops
// at the first excess and checks the request's context every few thousand
// steps.
type limiter struct {
	ctx   context.Context
	lim   Limits
	m     *model.Model
	doc   *ast.Document
	vars  map[string]any
	names map[string]int // fragment name -> definition ref
	used  map[string]bool
	frags map[fragKey]*fragCost
	steps int
	// copied counts the selections inlining copies, whole document.
	copied int
	// byVariables is set when a multiplier came from a variable: the
	// measure then holds for this request's variables only.
	byVariables bool
}

type fragKey struct {
	name  string
	intro bool // measured inside introspection (depth not counted)
}

// fragCost is the memoised measure of a fragment definition. done is false
// while it is being measured (a spread reaching it then is a cycle).
type fragCost struct {
	done        bool
	depth, cost int
	tally
}

// tally accumulates what is counted across a whole operation or fragment:
// aliases; nodes, the selections it expands to (spreads inlined).
type tally struct{ aliases, nodes int }

// maxExpanded bounds the selections inlining the fragment spreads of all
// the document's operations copies (inline.go): far above any real query,
// far below what would cost tens of milliseconds. It counts across the
// operations because every operation is validated, so many operations
// spreading one large fragment cannot multiply the work.
const maxExpanded = 20000

// errLimit carries the first excess found.
type errLimit struct{ res *protocol.Result }

func (e errLimit) Error() string { return e.res.Errors[0].Message }

// measure checks every operation and fragment of the document: validation
// reads all of them, whichever operation is then executed.
func (l *limiter) measure() *protocol.Result {
	l.frags = map[fragKey]*fragCost{}
	l.used = map[string]bool{}
	// Fragments are the document's root nodes (normalization removes the
	// root nodes of those it inlined, not their definitions).
	var frags []int
	for _, n := range l.doc.RootNodes {
		if n.Kind == ast.NodeKindFragmentDefinition {
			frags = append(frags, n.Ref)
		}
	}
	l.names = make(map[string]int, len(frags))
	for _, i := range frags {
		name := l.doc.FragmentDefinitionNameString(i)
		if _, dup := l.names[name]; !dup {
			l.names[name] = i
		}
	}
	for _, n := range l.doc.RootNodes {
		if n.Kind != ast.NodeKindOperationDefinition {
			continue
		}
		op := l.doc.OperationDefinitions[n.Ref]
		if !op.HasSelections {
			continue
		}
		var t tally
		if _, _, err := l.set(op.SelectionSet, l.m.RootType(op.OperationType), 0, false, &t); err != nil {
			return l.result(err)
		}
	}
	for _, i := range frags {
		if _, err := l.fragment(l.doc.FragmentDefinitionNameString(i), l.doc.FragmentDefinitions[i].FragmentLiteral, false); err != nil {
			return l.result(err)
		}
	}
	for _, i := range frags {
		if name := l.doc.FragmentDefinitionNameString(i); !l.used[name] {
			// Normalization drops unused fragments unread: refused here, as the
			// specification asks.
			return protocol.ValidationFailed(protocol.Error{Message: fmt.Sprintf("Fragment %q is never used.", name),
				Locations: []protocol.Location{locationOf(l.doc.FragmentDefinitions[i].FragmentLiteral)}})
		}
	}
	return nil
}

func (l *limiter) result(err error) *protocol.Result {
	var el errLimit
	if errors.As(err, &el) {
		return el.res
	}
	return protocol.ErrorResult(l.ctx, err)
}

func (l *limiter) tooDeep(depth int) error {
	return errLimit{protocol.NewRequestError(apperr.BadRequest, fmt.Sprintf("the query is more than %d levels deep; at most %d are allowed", depth-1, l.lim.MaxDepth))}
}

func (l *limiter) cycle(name string, at position.Position) error {
	e := protocol.Error{Message: fmt.Sprintf("Cannot spread fragment %q within itself.", name)}
	if at.LineStart > 0 {
		e.Locations = []protocol.Location{locationOf(at)}
	}
	return errLimit{protocol.ValidationFailed(e)}
}

func (l *limiter) tooComplex() error {
	return errLimit{protocol.NewRequestError(apperr.BadRequest, fmt.Sprintf("the query's estimated complexity exceeds %d, the most allowed (lower limit/first/last on list fields)", l.lim.MaxComplexity))}
}

func (l *limiter) tooLarge() error {
	return errLimit{protocol.NewRequestError(apperr.BadRequest, fmt.Sprintf("the query expands to more than %d selections once its fragments are inlined, the most allowed", maxExpanded))}
}

func (l *limiter) tooManyAliases() error {
	return errLimit{protocol.NewRequestError(apperr.BadRequest, fmt.Sprintf("the query has more than %d aliases, the most allowed", l.lim.MaxAliases))}
}

// step counts work and honours cancellation (a client that went away).
func (l *limiter) step() error {
	l.steps++
	if l.steps&4095 == 0 {
		if err := l.ctx.Err(); err != nil {
			return apperr.New(apperr.BadRequest, "the request was cancelled")
		}
	}
	return nil
}

// set measures selection set ref on type parent at depth: it returns the
// largest depth reached and the complexity; aliases accumulate in *aliases.
// intro marks selections under __schema/__type, whose depth is not counted.
func (l *limiter) set(ref int, parent string, depth int, intro bool, t *tally) (int, int, error) {
	maxD, cost := depth, 0
	add := func(c int) error {
		if c > l.lim.MaxComplexity-cost {
			return l.tooComplex()
		}
		cost += c
		return nil
	}
	doc := l.doc
	for _, sr := range doc.SelectionSets[ref].SelectionRefs {
		if err := l.step(); err != nil {
			return 0, 0, err
		}
		t.nodes++
		s := doc.Selections[sr]
		switch s.Kind {
		case ast.SelectionKindField:
			f := &doc.Fields[s.Ref]
			name := doc.FieldNameString(s.Ref)
			if f.Alias.IsDefined && doc.FieldAliasString(s.Ref) != name {
				if t.aliases++; t.aliases > l.lim.MaxAliases {
					return 0, 0, l.tooManyAliases()
				}
			}
			def := l.m.Field(parent, name)
			// Introspection's depth is not counted: below __schema/__type,
			// and in a fragment on an introspection type measured on its own.
			sub, childIntro, d := "", intro || name == "__schema" || name == "__type" || strings.HasPrefix(parent, "__"), depth
			if def != nil {
				sub = def.Named
			}
			if !childIntro {
				d = depth + 1
				if d > l.lim.MaxDepth {
					return 0, 0, l.tooDeep(d)
				}
			}
			cd, cc := d, 0
			if f.HasSelections {
				var err error
				if cd, cc, err = l.set(f.SelectionSet, sub, d, childIntro, t); err != nil {
					return 0, 0, err
				}
			}
			maxD = max(maxD, cd)
			m := 1
			if !childIntro {
				m = l.multiplier(s.Ref, name, def)
			}
			if cc > 0 && m > (l.lim.MaxComplexity-1)/cc {
				return 0, 0, l.tooComplex()
			}
			if err := add(1 + m*cc); err != nil {
				return 0, 0, err
			}
		case ast.SelectionKindInlineFragment:
			in := &doc.InlineFragments[s.Ref]
			on := parent
			if in.TypeCondition.Type != -1 {
				on = doc.InlineFragmentTypeConditionNameString(s.Ref)
			}
			if !in.HasSelections {
				continue
			}
			cd, cc, err := l.set(in.SelectionSet, on, depth, intro, t)
			if err != nil {
				return 0, 0, err
			}
			maxD = max(maxD, cd)
			if err := add(cc); err != nil {
				return 0, 0, err
			}
		case ast.SelectionKindFragmentSpread:
			name := doc.FragmentSpreadNameString(s.Ref)
			l.used[name] = true
			fc, err := l.fragment(name, doc.FragmentSpreads[s.Ref].Spread, intro)
			if err != nil {
				return 0, 0, err
			}
			if depth+fc.depth > l.lim.MaxDepth {
				return 0, 0, l.tooDeep(depth + fc.depth)
			}
			maxD = max(maxD, depth+fc.depth)
			if t.aliases += fc.aliases; t.aliases > l.lim.MaxAliases {
				return 0, 0, l.tooManyAliases()
			}
			t.nodes += fc.nodes
			if l.copied += fc.nodes; l.copied > maxExpanded {
				return 0, 0, l.tooLarge()
			}
			if err := add(fc.cost); err != nil {
				return 0, 0, err
			}
		}
	}
	return maxD, cost, nil
}

// fragment returns the memoised measure of the named fragment, measuring
// it the first time; an unknown fragment is a validation error. A spread (at) reached
// while its fragment is being measured is a cycle: a validation error.
func (l *limiter) fragment(name string, at position.Position, intro bool) (*fragCost, error) {
	k := fragKey{name, intro}
	if fc, ok := l.frags[k]; ok {
		if !fc.done {
			return nil, l.cycle(name, at)
		}
		return fc, nil
	}
	ref, ok := l.names[name]
	if !ok {
		e := protocol.Error{Message: fmt.Sprintf("Unknown fragment %q.", name)}
		if at.LineStart > 0 {
			e.Locations = []protocol.Location{locationOf(at)}
		}
		return nil, errLimit{protocol.ValidationFailed(e)}
	}
	fc := &fragCost{}
	l.frags[k] = fc
	def := &l.doc.FragmentDefinitions[ref]
	if def.HasSelections {
		d, c, err := l.set(def.SelectionSet, l.doc.FragmentDefinitionTypeNameString(ref), 0, intro, &fc.tally)
		if err != nil {
			return nil, err
		}
		fc.depth, fc.cost = d, c
	}
	fc.done = true
	return fc, nil
}

// argument is the value of argument name of field ref (literal or
// variable), nil when absent or not yet validated into something usable.
func (l *limiter) argument(ref int, name string) any {
	f := &l.doc.Fields[ref]
	if !f.HasArguments {
		return nil
	}
	for _, a := range f.Arguments.Refs {
		if l.doc.ArgumentNameString(a) == name {
			v := l.doc.Arguments[a].Value
			if l.doc.ValueContainsVariable(v) {
				l.byVariables = true
			}
			return valueOf(l.doc, v).Eval(l.vars)
		}
	}
	return nil
}

// multiplier is how many times a field's selection may be repeated in the
// response: its limit/first/last/topK, the default page size for lists
// without one, 1 otherwise.
func (l *limiter) multiplier(ref int, name string, def *model.FieldInfo) int {
	if def == nil {
		return 1
	}
	for _, arg := range []string{"limit", "first", "last"} {
		if n, ok := IntArg(l.argument(ref, arg)); ok && n > 0 {
			return n
		}
	}
	if in, ok := l.argument(ref, "input").(map[string]any); ok && def.List {
		if n, ok := IntArg(in["topK"]); ok && n > 0 {
			return n
		}
		if _, ok := in["vector"]; ok {
			return query.DefaultTopK
		}
	}
	if name == "edges" {
		return 1 // paged by the enclosing connection
	}
	if def.List {
		if len(def.Args) == 0 {
			return 1 // scalar lists (tags, vectors), batch results
		}
		return query.DefaultLimit
	}
	if def.Args["first"] || def.Args["nodeWhere"] {
		return query.DefaultLimit
	}
	return 1
}

package graphql

import (
	"context"
	"errors"
	"fmt"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/dds-project/dds/apperr"
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
// cycle of doubling spreads; an unknown fragment counts nothing here and
// is reported by validation. The walk stops
// at the first excess and checks the request's context every few thousand
// steps.
type limiter struct {
	ctx    context.Context
	lim    Limits
	schema *ast.Schema
	doc    *ast.QueryDocument
	vars   map[string]any
	frags  map[fragKey]*fragCost
	steps  int
}

type fragKey struct {
	name  string
	intro bool // measured inside introspection (depth not counted)
}

// fragCost is the memoised measure of a fragment definition. done is false
// while it is being measured (a spread reaching it then is a cycle).
type fragCost struct {
	done                 bool
	depth, cost, aliases int
}

// errLimit carries the first excess found.
type errLimit struct{ res *Result }

func (e errLimit) Error() string { return e.res.Errors[0].Message }

// measure checks every operation and fragment of the document: validation
// reads all of them, whichever operation is then executed.
func (l *limiter) measure() *Result {
	l.frags = map[fragKey]*fragCost{}
	for _, op := range l.doc.Operations {
		var root *ast.Definition
		switch op.Operation {
		case ast.Mutation:
			root = l.schema.Mutation
		case ast.Subscription:
			root = l.schema.Subscription
		default:
			root = l.schema.Query
		}
		aliases := 0
		if _, _, err := l.set(op.SelectionSet, typeName(root), 0, false, &aliases); err != nil {
			return l.result(err)
		}
	}
	for _, f := range l.doc.Fragments {
		if _, err := l.fragment(&ast.FragmentSpread{Name: f.Name, Position: f.Position}, false); err != nil {
			return l.result(err)
		}
	}
	return nil
}

func (l *limiter) result(err error) *Result {
	var el errLimit
	if errors.As(err, &el) {
		return el.res
	}
	return errorResult(l.ctx, err)
}

func typeName(d *ast.Definition) string {
	if d == nil {
		return ""
	}
	return d.Name
}

func (l *limiter) tooDeep(depth int) error {
	return errLimit{requestError(apperr.BadRequest, fmt.Sprintf("the query is more than %d levels deep; at most %d are allowed", depth-1, l.lim.MaxDepth))}
}

func (l *limiter) cycle(s *ast.FragmentSpread) error {
	e := &gqlerror.Error{Message: fmt.Sprintf("Cannot spread fragment %q within itself.", s.Name)}
	if s.Position != nil {
		e.Locations = []gqlerror.Location{{Line: s.Position.Line, Column: s.Position.Column}}
	}
	return errLimit{fromGQL(gqlerror.List{e}, "GRAPHQL_VALIDATION_FAILED")}
}

func (l *limiter) tooComplex() error {
	return errLimit{requestError(apperr.BadRequest, fmt.Sprintf("the query's estimated complexity exceeds %d, the most allowed (lower limit/first/last on list fields)", l.lim.MaxComplexity))}
}

func (l *limiter) tooManyAliases() error {
	return errLimit{requestError(apperr.BadRequest, fmt.Sprintf("the query has more than %d aliases, the most allowed", l.lim.MaxAliases))}
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

// set measures a selection set on type parent at depth: it returns the
// largest depth reached and the complexity; aliases accumulate in *aliases.
// intro marks selections under __schema/__type, whose depth is not counted.
func (l *limiter) set(set ast.SelectionSet, parent string, depth int, intro bool, aliases *int) (int, int, error) {
	maxD, cost := depth, 0
	add := func(c int) error {
		if c > l.lim.MaxComplexity-cost {
			return l.tooComplex()
		}
		cost += c
		return nil
	}
	for _, s := range set {
		if err := l.step(); err != nil {
			return 0, 0, err
		}
		switch s := s.(type) {
		case *ast.Field:
			if s.Alias != "" && s.Alias != s.Name {
				if *aliases++; *aliases > l.lim.MaxAliases {
					return 0, 0, l.tooManyAliases()
				}
			}
			def := l.fieldDef(parent, s.Name)
			sub, childIntro, d := "", intro || s.Name == "__schema" || s.Name == "__type", depth
			if def != nil {
				sub = def.Type.Name()
			}
			if !childIntro {
				d = depth + 1
				if d > l.lim.MaxDepth {
					return 0, 0, l.tooDeep(d)
				}
			}
			cd, cc, err := l.set(s.SelectionSet, sub, d, childIntro, aliases)
			if err != nil {
				return 0, 0, err
			}
			maxD = max(maxD, cd)
			m := 1
			if !childIntro {
				m = l.multiplier(s, def)
			}
			if cc > 0 && m > (l.lim.MaxComplexity-1)/cc {
				return 0, 0, l.tooComplex()
			}
			if err := add(1 + m*cc); err != nil {
				return 0, 0, err
			}
		case *ast.InlineFragment:
			t := parent
			if s.TypeCondition != "" {
				t = s.TypeCondition
			}
			cd, cc, err := l.set(s.SelectionSet, t, depth, intro, aliases)
			if err != nil {
				return 0, 0, err
			}
			maxD = max(maxD, cd)
			if err := add(cc); err != nil {
				return 0, 0, err
			}
		case *ast.FragmentSpread:
			fc, err := l.fragment(s, intro)
			if err != nil {
				return 0, 0, err
			}
			if fc == nil {
				continue // unknown fragment: validation reports it
			}
			if depth+fc.depth > l.lim.MaxDepth {
				return 0, 0, l.tooDeep(depth + fc.depth)
			}
			maxD = max(maxD, depth+fc.depth)
			if *aliases += fc.aliases; *aliases > l.lim.MaxAliases {
				return 0, 0, l.tooManyAliases()
			}
			if err := add(fc.cost); err != nil {
				return 0, 0, err
			}
		}
	}
	return maxD, cost, nil
}

// fragment returns the memoised measure of the spread fragment, measuring
// it the first time; nil for an unknown fragment. A spread reached while
// its fragment is being measured is a cycle: a validation error.
func (l *limiter) fragment(s *ast.FragmentSpread, intro bool) (*fragCost, error) {
	k := fragKey{s.Name, intro}
	if fc, ok := l.frags[k]; ok {
		if !fc.done {
			return nil, l.cycle(s)
		}
		return fc, nil
	}
	def := l.doc.Fragments.ForName(s.Name)
	if def == nil {
		return nil, nil
	}
	fc := &fragCost{}
	l.frags[k] = fc
	d, c, err := l.set(def.SelectionSet, def.TypeCondition, 0, intro, &fc.aliases)
	if err != nil {
		return nil, err
	}
	fc.depth, fc.cost, fc.done = d, c, true
	return fc, nil
}

func (l *limiter) fieldDef(parent, name string) *ast.FieldDefinition {
	t := l.schema.Types[parent]
	if t == nil {
		return nil
	}
	return t.Fields.ForName(name)
}

// argument is the value of argument name of f (literal or variable), nil
// when absent or not yet validated into something usable.
func (l *limiter) argument(f *ast.Field, name string) any {
	a := f.Arguments.ForName(name)
	if a == nil || a.Value == nil {
		return nil
	}
	v, err := a.Value.Value(l.vars)
	if err != nil {
		return nil
	}
	return v
}

// multiplier is how many times a field's selection may be repeated in the
// response: its limit/first/last/topK, the default page size for lists
// without one, 1 otherwise.
func (l *limiter) multiplier(f *ast.Field, def *ast.FieldDefinition) int {
	if def == nil {
		return 1
	}
	for _, name := range []string{"limit", "first", "last"} {
		if n, ok := intArg(l.argument(f, name)); ok && n > 0 {
			return n
		}
	}
	if in, ok := l.argument(f, "input").(map[string]any); ok && def.Type.Elem != nil {
		if n, ok := intArg(in["topK"]); ok && n > 0 {
			return n
		}
		if _, ok := in["vector"]; ok {
			return query.DefaultTopK
		}
	}
	if f.Name == "edges" {
		return 1 // paged by the enclosing connection
	}
	if def.Type.Elem != nil {
		if len(def.Arguments) == 0 {
			return 1 // scalar lists (tags, vectors), batch results
		}
		return query.DefaultLimit
	}
	if def.Arguments.ForName("first") != nil || def.Arguments.ForName("nodeWhere") != nil {
		return query.DefaultLimit
	}
	return 1
}

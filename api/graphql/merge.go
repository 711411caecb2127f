package graphql

import (
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
	"github.com/vektah/gqlparser/v2/gqlerror"
)

// mergeDocument folds repeated selections of every selection set of doc
// into one before validation, in time linear in the document: identical
// fields (same alias, name, arguments and directives) become one field
// whose sub-selections are merged (recursively), repeated spreads of a
// fragment one spread, identical inline fragments one. Validation compares
// the fields of a set pairwise, so 20,000 repeated `id`s would cost it
// hundreds of millions of comparisons; after merging a set holds each
// response key once per variant. Two fields of one set under one response
// key with different names or arguments can never merge: the first such
// pair is refused here, as validation would, rather than compared with
// every other.
func mergeDocument(doc *ast.QueryDocument) *gqlerror.Error {
	for _, op := range doc.Operations {
		set, err := mergeSet(op.SelectionSet)
		if err != nil {
			return err
		}
		op.SelectionSet = set
	}
	for _, f := range doc.Fragments {
		set, err := mergeSet(f.SelectionSet)
		if err != nil {
			return err
		}
		f.SelectionSet = set
	}
	return nil
}

func mergeSet(set ast.SelectionSet) (ast.SelectionSet, *gqlerror.Error) {
	if len(set) == 0 {
		return set, nil
	}
	var (
		out      = make(ast.SelectionSet, 0, len(set))
		fields   = map[string]*ast.Field{}
		variants = map[string]*ast.Field{} // response key -> first field (name and arguments)
		spreads  = map[string]bool{}
		inlines  = map[string]*ast.InlineFragment{}
	)
	for _, s := range set {
		switch s := s.(type) {
		case *ast.Field:
			resp := s.Alias
			if resp == "" {
				resp = s.Name
			}
			shape := s.Name + "(" + argumentsText(s.Arguments) + ")"
			if first, ok := variants[resp]; ok {
				if first.Name+"("+argumentsText(first.Arguments)+")" != shape {
					return nil, conflict(resp, first, s)
				}
			} else {
				variants[resp] = s
			}
			k := resp + "|" + shape + "|" + directivesText(s.Directives)
			if kept, ok := fields[k]; ok {
				kept.SelectionSet = append(kept.SelectionSet, s.SelectionSet...)
				continue
			}
			fields[k] = s
		case *ast.FragmentSpread:
			k := s.Name + "|" + directivesText(s.Directives)
			if spreads[k] {
				continue
			}
			spreads[k] = true
		case *ast.InlineFragment:
			k := s.TypeCondition + "|" + directivesText(s.Directives)
			if kept, ok := inlines[k]; ok {
				kept.SelectionSet = append(kept.SelectionSet, s.SelectionSet...)
				continue
			}
			inlines[k] = s
		}
		out = append(out, s)
	}
	for _, s := range out {
		var err *gqlerror.Error
		switch s := s.(type) {
		case *ast.Field:
			s.SelectionSet, err = mergeSet(s.SelectionSet)
		case *ast.InlineFragment:
			s.SelectionSet, err = mergeSet(s.SelectionSet)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func conflict(resp string, a, b *ast.Field) *gqlerror.Error {
	reason := "they have differing arguments"
	if a.Name != b.Name {
		reason = a.Name + " and " + b.Name + " are different fields"
	}
	e := &gqlerror.Error{Message: `Fields "` + resp + `" conflict because ` + reason + `. Use different aliases on the fields to fetch both if this was intentional.`}
	for _, f := range []*ast.Field{a, b} {
		if f.Position != nil {
			e.Locations = append(e.Locations, gqlerror.Location{Line: f.Position.Line, Column: f.Position.Column})
		}
	}
	return e
}

func argumentsText(args ast.ArgumentList) string {
	if len(args) == 0 {
		return ""
	}
	var b strings.Builder
	for _, a := range args {
		b.WriteString(a.Name)
		b.WriteByte(':')
		if a.Value != nil {
			b.WriteString(a.Value.String())
		}
		b.WriteByte(',')
	}
	return b.String()
}

func directivesText(ds ast.DirectiveList) string {
	if len(ds) == 0 {
		return ""
	}
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.Name)
		b.WriteByte('(')
		b.WriteString(argumentsText(d.Arguments))
		b.WriteString(")")
	}
	return b.String()
}

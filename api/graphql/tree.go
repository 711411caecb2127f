package graphql

import (
	"strconv"
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
)

// Strings are cloned out of the document: the library's accessors alias its
// input buffer, which a pooled document reuses.
//
// The executor reads an operation as this small tree, built once per
// prepared operation from graphql-go-tools' normalized document (fragments
// inlined, duplicates merged): the library's document is index-based and
// pooled, the tree is immutable and shared by every request that executes
// the same prepared operation.

// selectionSet is a selection set: fields and inline fragments.
type selectionSet []selection

// selection is a *fieldSel or an *inlineFragment.
type selection interface{ isSelection() }

// fieldSel is a field of a selection set.
type fieldSel struct {
	Alias, Name  string
	Arguments    []argument
	Directives   []directive
	SelectionSet selectionSet
	loc          Location
	flat         flatField // the memo of a flat record selection (flat.go)
}

// inlineFragment is "... on T @d { ... }" (TypeCondition "" when absent).
type inlineFragment struct {
	TypeCondition string
	Directives    []directive
	SelectionSet  selectionSet
}

func (*fieldSel) isSelection()       {}
func (*inlineFragment) isSelection() {}

type argument struct {
	name string
	v    *value
}

type directive struct {
	name string
	args []argument
}

type valueKind uint8

const (
	vLiteral  valueKind = iota // lit holds the Go value
	vVariable                  // name is the variable
	vList
	vObject
)

// value is an argument value; literals are converted once, variables are
// looked up per request.
type value struct {
	kind  valueKind
	lit   any
	name  string
	items []*value
	keys  []string // vObject: field names, parallel to items
}

// eval returns the Go value of v with the request's (coerced) variables:
// string, bool, int64, float64, nil, []any, map[string]any, and whatever
// the variables hold (JSON values decoded with UseNumber).
func (v *value) eval(vars map[string]any) any {
	switch v.kind {
	case vVariable:
		return vars[v.name]
	case vList:
		out := make([]any, len(v.items))
		for i, it := range v.items {
			out[i] = it.eval(vars)
		}
		return out
	case vObject:
		out := make(map[string]any, len(v.items))
		for i, it := range v.items {
			out[v.keys[i]] = it.eval(vars)
		}
		return out
	}
	return v.lit
}

// argumentMap evaluates arguments with the request's variables.
func argumentMap(args []argument, vars map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for _, a := range args {
		out[a.name] = a.v.eval(vars)
	}
	return out
}

// ArgumentMap is the field's arguments with the request's variables.
func (f *fieldSel) ArgumentMap(vars map[string]any) map[string]any {
	return argumentMap(f.Arguments, vars)
}

// argument is the value of the field's argument name with the request's
// variables (nil when absent), as ArgumentMap(vars)[name].
func (f *fieldSel) argument(name string, vars map[string]any) any {
	for _, a := range f.Arguments {
		if a.name == name {
			return a.v.eval(vars)
		}
	}
	return nil
}

// valueOf converts a value of doc into the tree.
func valueOf(doc *ast.Document, v ast.Value) *value {
	switch v.Kind {
	case ast.ValueKindVariable:
		return &value{kind: vVariable, name: strings.Clone(doc.VariableValueNameString(v.Ref))}
	case ast.ValueKindString:
		return &value{lit: strings.Clone(doc.StringValueContentString(v.Ref))}
	case ast.ValueKindBoolean:
		return &value{lit: bool(doc.BooleanValue(v.Ref))}
	case ast.ValueKindInteger:
		raw := string(doc.IntValueRaw(v.Ref))
		if doc.IntValueIsNegative(v.Ref) && (raw == "" || raw[0] != '-') {
			raw = "-" + raw
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			f, _ := strconv.ParseFloat(raw, 64)
			return &value{lit: f}
		}
		return &value{lit: n}
	case ast.ValueKindFloat:
		raw := string(doc.FloatValueRaw(v.Ref))
		if doc.FloatValueIsNegative(v.Ref) && (raw == "" || raw[0] != '-') {
			raw = "-" + raw
		}
		f, _ := strconv.ParseFloat(raw, 64)
		return &value{lit: f}
	case ast.ValueKindEnum:
		return &value{lit: strings.Clone(doc.EnumValueNameString(v.Ref))}
	case ast.ValueKindList:
		refs := doc.ListValues[v.Ref].Refs
		out := &value{kind: vList, items: make([]*value, len(refs))}
		for i, r := range refs {
			out.items[i] = valueOf(doc, doc.Value(r))
		}
		return out
	case ast.ValueKindObject:
		refs := doc.ObjectValues[v.Ref].Refs
		out := &value{kind: vObject, items: make([]*value, len(refs)), keys: make([]string, len(refs))}
		for i, r := range refs {
			out.keys[i] = strings.Clone(doc.ObjectFieldNameString(r))
			out.items[i] = valueOf(doc, doc.ObjectFieldValue(r))
		}
		return out
	}
	return &value{} // null
}

func argumentsOf(doc *ast.Document, refs []int) []argument {
	if len(refs) == 0 {
		return nil
	}
	out := make([]argument, len(refs))
	for i, r := range refs {
		out[i] = argument{name: strings.Clone(doc.ArgumentNameString(r)), v: valueOf(doc, doc.Arguments[r].Value)}
	}
	return out
}

func directivesOf(doc *ast.Document, has bool, refs []int) []directive {
	if !has || len(refs) == 0 {
		return nil
	}
	out := make([]directive, len(refs))
	for i, r := range refs {
		d := doc.Directives[r]
		out[i] = directive{name: strings.Clone(doc.DirectiveNameString(r))}
		if d.HasArguments {
			out[i].args = argumentsOf(doc, d.Arguments.Refs)
		}
	}
	return out
}

// internalTypename is the alias graphql-go-tools' normalizer gives the
// __typename it puts into a selection set all of whose fields a literal
// @skip/@include removed: the executor leaves it out (an empty object).
const internalTypename = "__internal_typename"

// treeOf converts selection set ref of a normalized document.
func treeOf(doc *ast.Document, ref int) selectionSet {
	refs := doc.SelectionSets[ref].SelectionRefs
	out := make(selectionSet, 0, len(refs))
	for _, sr := range refs {
		s := doc.Selections[sr]
		switch s.Kind {
		case ast.SelectionKindField:
			f := doc.Fields[s.Ref]
			fs := &fieldSel{Name: strings.Clone(doc.FieldNameString(s.Ref)), loc: locationOf(f.Position)}
			if f.Alias.IsDefined {
				fs.Alias = strings.Clone(doc.FieldAliasString(s.Ref))
				if fs.Alias == internalTypename {
					continue
				}
			}
			if f.HasArguments {
				fs.Arguments = argumentsOf(doc, f.Arguments.Refs)
			}
			fs.Directives = directivesOf(doc, f.HasDirectives, f.Directives.Refs)
			if f.HasSelections {
				fs.SelectionSet = treeOf(doc, f.SelectionSet)
			}
			out = append(out, fs)
		case ast.SelectionKindInlineFragment:
			inf := doc.InlineFragments[s.Ref]
			in := &inlineFragment{Directives: directivesOf(doc, inf.HasDirectives, inf.Directives.Refs)}
			if inf.TypeCondition.Type != -1 {
				in.TypeCondition = strings.Clone(doc.InlineFragmentTypeConditionNameString(s.Ref))
			}
			if inf.HasSelections {
				in.SelectionSet = treeOf(doc, inf.SelectionSet)
			}
			out = append(out, in)
		}
	}
	return out
}

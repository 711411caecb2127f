package operation

import (
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/graphql/protocol"
)

// Strings are cloned out of the document: the library's accessors alias its
// input buffer, which a pooled document reuses.
//
// The executor reads an operation as this small tree, built once per
// prepared operation from graphql-go-tools' normalized document (fragments
// inlined, duplicates merged): the library's document is index-based and
// pooled, the tree is immutable and shared by every request that executes
// the same prepared operation.

// SelectionSet is a selection set: fields and inline fragments.
type SelectionSet []Selection

// Selection is a *Field or an *InlineFragment.
type Selection interface{ isSelection() }

// Field is a field of a selection set.
type Field struct {
	Alias, Name  string
	Arguments    []Argument
	Directives   []Directive
	SelectionSet SelectionSet
	Loc          protocol.Location
	// Memo is the executor's memo of what the field's selection builds
	// the same for every request executing the operation (its flat record
	// selection); the tree only holds it.
	Memo atomic.Value
}

// InlineFragment is "... on T @d { ... }" (TypeCondition "" when absent).
type InlineFragment struct {
	TypeCondition string
	Directives    []Directive
	SelectionSet  SelectionSet
}

func (*Field) isSelection()          {}
func (*InlineFragment) isSelection() {}

// Argument is an argument of a field or directive.
type Argument struct {
	Name  string
	Value *Value
}

// Directive is a directive (@skip, @include) with its arguments.
type Directive struct {
	Name string
	Args []Argument
}

// ValueKind says what a Value holds.
type ValueKind uint8

const (
	ValueLiteral  ValueKind = iota // lit holds the Go value
	ValueVariable                  // name is the variable
	ValueList
	ValueObject
)

// Value is an argument value; literals are converted once, variables are
// looked up per request.
type Value struct {
	Kind  ValueKind
	Lit   any
	Name  string
	Items []*Value
	Keys  []string // vObject: field names, parallel to items
}

// Eval returns the Go value of v with the request's (coerced) variables:
// string, bool, int64, float64, nil, []any, map[string]any, and whatever
// the variables hold (JSON values decoded with UseNumber).
func (v *Value) Eval(vars map[string]any) any {
	switch v.Kind {
	case ValueVariable:
		return vars[v.Name]
	case ValueList:
		out := make([]any, len(v.Items))
		for i, it := range v.Items {
			out[i] = it.Eval(vars)
		}
		return out
	case ValueObject:
		out := make(map[string]any, len(v.Items))
		for i, it := range v.Items {
			out[v.Keys[i]] = it.Eval(vars)
		}
		return out
	}
	return v.Lit
}

// ArgumentMap evaluates arguments with the request's variables.
func ArgumentMap(args []Argument, vars map[string]any) map[string]any {
	out := make(map[string]any, len(args))
	for _, a := range args {
		out[a.Name] = a.Value.Eval(vars)
	}
	return out
}

// ArgumentMap is the field's arguments with the request's variables.
func (f *Field) ArgumentMap(vars map[string]any) map[string]any {
	return ArgumentMap(f.Arguments, vars)
}

// Argument is the value of the field's argument name with the request's
// variables (nil when absent), as ArgumentMap(vars)[name].
func (f *Field) Argument(name string, vars map[string]any) any {
	for _, a := range f.Arguments {
		if a.Name == name {
			return a.Value.Eval(vars)
		}
	}
	return nil
}

// valueOf converts a value of doc into the tree.
func valueOf(doc *ast.Document, v ast.Value) *Value {
	switch v.Kind {
	case ast.ValueKindVariable:
		return &Value{Kind: ValueVariable, Name: strings.Clone(doc.VariableValueNameString(v.Ref))}
	case ast.ValueKindString:
		return &Value{Lit: strings.Clone(doc.StringValueContentString(v.Ref))}
	case ast.ValueKindBoolean:
		return &Value{Lit: bool(doc.BooleanValue(v.Ref))}
	case ast.ValueKindInteger:
		raw := string(doc.IntValueRaw(v.Ref))
		if doc.IntValueIsNegative(v.Ref) && (raw == "" || raw[0] != '-') {
			raw = "-" + raw
		}
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			f, _ := strconv.ParseFloat(raw, 64)
			return &Value{Lit: f}
		}
		return &Value{Lit: n}
	case ast.ValueKindFloat:
		raw := string(doc.FloatValueRaw(v.Ref))
		if doc.FloatValueIsNegative(v.Ref) && (raw == "" || raw[0] != '-') {
			raw = "-" + raw
		}
		f, _ := strconv.ParseFloat(raw, 64)
		return &Value{Lit: f}
	case ast.ValueKindEnum:
		return &Value{Lit: strings.Clone(doc.EnumValueNameString(v.Ref))}
	case ast.ValueKindList:
		refs := doc.ListValues[v.Ref].Refs
		out := &Value{Kind: ValueList, Items: make([]*Value, len(refs))}
		for i, r := range refs {
			out.Items[i] = valueOf(doc, doc.Value(r))
		}
		return out
	case ast.ValueKindObject:
		refs := doc.ObjectValues[v.Ref].Refs
		out := &Value{Kind: ValueObject, Items: make([]*Value, len(refs)), Keys: make([]string, len(refs))}
		for i, r := range refs {
			out.Keys[i] = strings.Clone(doc.ObjectFieldNameString(r))
			out.Items[i] = valueOf(doc, doc.ObjectFieldValue(r))
		}
		return out
	}
	return &Value{} // null
}

func argumentsOf(doc *ast.Document, refs []int) []Argument {
	if len(refs) == 0 {
		return nil
	}
	out := make([]Argument, len(refs))
	for i, r := range refs {
		out[i] = Argument{Name: strings.Clone(doc.ArgumentNameString(r)), Value: valueOf(doc, doc.Arguments[r].Value)}
	}
	return out
}

func directivesOf(doc *ast.Document, has bool, refs []int) []Directive {
	if !has || len(refs) == 0 {
		return nil
	}
	out := make([]Directive, len(refs))
	for i, r := range refs {
		d := doc.Directives[r]
		out[i] = Directive{Name: strings.Clone(doc.DirectiveNameString(r))}
		if d.HasArguments {
			out[i].Args = argumentsOf(doc, d.Arguments.Refs)
		}
	}
	return out
}

// internalTypename is the alias graphql-go-tools' normalizer gives the
// __typename it puts into a selection set all of whose fields a literal
// @skip/@include removed: the executor leaves it out (an empty object).
const internalTypename = "__internal_typename"

// treeOf converts selection set ref of a normalized document.
func treeOf(doc *ast.Document, ref int) SelectionSet {
	refs := doc.SelectionSets[ref].SelectionRefs
	out := make(SelectionSet, 0, len(refs))
	for _, sr := range refs {
		s := doc.Selections[sr]
		switch s.Kind {
		case ast.SelectionKindField:
			f := doc.Fields[s.Ref]
			fs := &Field{Name: strings.Clone(doc.FieldNameString(s.Ref)), Loc: locationOf(f.Position)}
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
			in := &InlineFragment{Directives: directivesOf(doc, inf.HasDirectives, inf.Directives.Refs)}
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

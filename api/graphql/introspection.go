package graphql

import (
	"bytes"
	"sort"
	"strings"

	"github.com/vektah/gqlparser/v2/ast"
)

// Introspection (__schema, __type) answered from gqlparser's *ast.Schema.
// Values are written straight into the response in selection order.

func (x *execCtx) introspect(cf *cfield) ([]byte, error) {
	var b bytes.Buffer
	s := x.m.Schema
	if cf.field.Name == "__schema" {
		x.introSchema(&b, cf.sel)
		return b.Bytes(), nil
	}
	name, _ := cf.field.ArgumentMap(x.vars)["name"].(string)
	def := s.Types[name]
	if def == nil {
		return []byte("null"), nil
	}
	x.introType(&b, &ast.Type{NamedType: name}, cf.sel)
	return b.Bytes(), nil
}

func (x *execCtx) obj(b *bytes.Buffer, typename string, set ast.SelectionSet, field func(cf *cfield)) {
	b.WriteByte('{')
	for i, cf := range x.collect(set, typename) {
		if i > 0 {
			b.WriteByte(',')
		}
		writeKey(b, cf.key)
		if cf.field.Name == "__typename" {
			writeString(b, typename)
			continue
		}
		field(cf)
	}
	b.WriteByte('}')
}

func writeNullable(b *bytes.Buffer, s string) {
	if s == "" {
		b.WriteString("null")
		return
	}
	writeString(b, s)
}

func (x *execCtx) introSchema(b *bytes.Buffer, set ast.SelectionSet) {
	s := x.m.Schema
	x.obj(b, "__Schema", set, func(cf *cfield) {
		switch cf.field.Name {
		case "description":
			writeNullable(b, s.Description)
		case "types":
			names := make([]string, 0, len(s.Types))
			for n := range s.Types {
				names = append(names, n)
			}
			sort.Strings(names)
			b.WriteByte('[')
			for i, n := range names {
				if i > 0 {
					b.WriteByte(',')
				}
				x.introType(b, &ast.Type{NamedType: n}, cf.sel)
			}
			b.WriteByte(']')
		case "queryType", "mutationType", "subscriptionType":
			var d *ast.Definition
			switch cf.field.Name {
			case "queryType":
				d = s.Query
			case "mutationType":
				d = s.Mutation
			default:
				d = s.Subscription
			}
			if d == nil {
				b.WriteString("null")
				return
			}
			x.introType(b, &ast.Type{NamedType: d.Name}, cf.sel)
		case "directives":
			names := make([]string, 0, len(s.Directives))
			for n := range s.Directives {
				names = append(names, n)
			}
			sort.Strings(names)
			b.WriteByte('[')
			for i, n := range names {
				if i > 0 {
					b.WriteByte(',')
				}
				x.introDirective(b, s.Directives[n], cf.sel)
			}
			b.WriteByte(']')
		default:
			b.WriteString("null")
		}
	})
}

func kindName(k ast.DefinitionKind) string {
	switch k {
	case ast.Scalar:
		return "SCALAR"
	case ast.Object:
		return "OBJECT"
	case ast.Interface:
		return "INTERFACE"
	case ast.Union:
		return "UNION"
	case ast.Enum:
		return "ENUM"
	case ast.InputObject:
		return "INPUT_OBJECT"
	}
	return string(k)
}

func includeDeprecated(x *execCtx, cf *cfield) bool {
	v, _ := cf.field.ArgumentMap(x.vars)["includeDeprecated"].(bool)
	return v
}

func deprecation(ds ast.DirectiveList) (bool, string) {
	d := ds.ForName("deprecated")
	if d == nil {
		return false, ""
	}
	reason := "No longer supported"
	if a := d.Arguments.ForName("reason"); a != nil && a.Value != nil {
		reason = a.Value.Raw
	}
	return true, reason
}

// introType writes a __Type: wrappers (NON_NULL, LIST) or a named type.
func (x *execCtx) introType(b *bytes.Buffer, t *ast.Type, set ast.SelectionSet) {
	if t == nil {
		b.WriteString("null")
		return
	}
	s := x.m.Schema
	var def *ast.Definition
	kind := ""
	var ofType *ast.Type
	switch {
	case t.NonNull:
		kind = "NON_NULL"
		c := *t
		c.NonNull = false
		ofType = &c
	case t.Elem != nil:
		kind = "LIST"
		ofType = t.Elem
	default:
		def = s.Types[t.NamedType]
		if def == nil {
			b.WriteString("null")
			return
		}
		kind = kindName(def.Kind)
	}
	x.obj(b, "__Type", set, func(cf *cfield) {
		switch cf.field.Name {
		case "kind":
			writeString(b, kind)
		case "name":
			if def == nil {
				b.WriteString("null")
			} else {
				writeString(b, def.Name)
			}
		case "description":
			if def == nil {
				b.WriteString("null")
			} else {
				writeNullable(b, def.Description)
			}
		case "specifiedByURL":
			url := ""
			if def != nil {
				if d := def.Directives.ForName("specifiedBy"); d != nil {
					if a := d.Arguments.ForName("url"); a != nil && a.Value != nil {
						url = a.Value.Raw
					}
				}
			}
			writeNullable(b, url)
		case "isOneOf":
			b.WriteString(boolJSON(def != nil && def.Directives.ForName("oneOf") != nil))
		case "ofType":
			x.introType(b, ofType, cf.sel)
		case "fields":
			if def == nil || (def.Kind != ast.Object && def.Kind != ast.Interface) {
				b.WriteString("null")
				return
			}
			incl := includeDeprecated(x, cf)
			b.WriteByte('[')
			n := 0
			for _, f := range def.Fields {
				if strings.HasPrefix(f.Name, "__") {
					continue
				}
				if dep, _ := deprecation(f.Directives); dep && !incl {
					continue
				}
				if n > 0 {
					b.WriteByte(',')
				}
				n++
				x.introField(b, f, cf.sel)
			}
			b.WriteByte(']')
		case "inputFields":
			if def == nil || def.Kind != ast.InputObject {
				b.WriteString("null")
				return
			}
			b.WriteByte('[')
			for i, f := range def.Fields {
				if i > 0 {
					b.WriteByte(',')
				}
				x.introInput(b, f.Name, f.Description, f.Type, f.DefaultValue, f.Directives, cf.sel)
			}
			b.WriteByte(']')
		case "interfaces":
			if def == nil || (def.Kind != ast.Object && def.Kind != ast.Interface) {
				b.WriteString("null")
				return
			}
			b.WriteByte('[')
			for i, n := range def.Interfaces {
				if i > 0 {
					b.WriteByte(',')
				}
				x.introType(b, &ast.Type{NamedType: n}, cf.sel)
			}
			b.WriteByte(']')
		case "possibleTypes":
			if def == nil || (def.Kind != ast.Interface && def.Kind != ast.Union) {
				b.WriteString("null")
				return
			}
			b.WriteByte('[')
			for i, p := range s.GetPossibleTypes(def) {
				if i > 0 {
					b.WriteByte(',')
				}
				x.introType(b, &ast.Type{NamedType: p.Name}, cf.sel)
			}
			b.WriteByte(']')
		case "enumValues":
			if def == nil || def.Kind != ast.Enum {
				b.WriteString("null")
				return
			}
			incl := includeDeprecated(x, cf)
			b.WriteByte('[')
			n := 0
			for _, v := range def.EnumValues {
				dep, reason := deprecation(v.Directives)
				if dep && !incl {
					continue
				}
				if n > 0 {
					b.WriteByte(',')
				}
				n++
				x.obj(b, "__EnumValue", cf.sel, func(ef *cfield) {
					switch ef.field.Name {
					case "name":
						writeString(b, v.Name)
					case "description":
						writeNullable(b, v.Description)
					case "isDeprecated":
						b.WriteString(boolJSON(dep))
					case "deprecationReason":
						writeNullable(b, reason)
					default:
						b.WriteString("null")
					}
				})
			}
			b.WriteByte(']')
		default:
			b.WriteString("null")
		}
	})
}

func (x *execCtx) introField(b *bytes.Buffer, f *ast.FieldDefinition, set ast.SelectionSet) {
	dep, reason := deprecation(f.Directives)
	x.obj(b, "__Field", set, func(cf *cfield) {
		switch cf.field.Name {
		case "name":
			writeString(b, f.Name)
		case "description":
			writeNullable(b, f.Description)
		case "args":
			x.introArgs(b, f.Arguments, cf.sel)
		case "type":
			x.introType(b, f.Type, cf.sel)
		case "isDeprecated":
			b.WriteString(boolJSON(dep))
		case "deprecationReason":
			writeNullable(b, reason)
		default:
			b.WriteString("null")
		}
	})
}

// introArgs writes a field's or directive's arguments as [__InputValue].
func (x *execCtx) introArgs(b *bytes.Buffer, args ast.ArgumentDefinitionList, set ast.SelectionSet) {
	b.WriteByte('[')
	for i, a := range args {
		if i > 0 {
			b.WriteByte(',')
		}
		x.introInput(b, a.Name, a.Description, a.Type, a.DefaultValue, a.Directives, set)
	}
	b.WriteByte(']')
}

func (x *execCtx) introInput(b *bytes.Buffer, name, desc string, t *ast.Type, def *ast.Value, ds ast.DirectiveList, set ast.SelectionSet) {
	dep, reason := deprecation(ds)
	x.obj(b, "__InputValue", set, func(cf *cfield) {
		switch cf.field.Name {
		case "name":
			writeString(b, name)
		case "description":
			writeNullable(b, desc)
		case "type":
			x.introType(b, t, cf.sel)
		case "defaultValue":
			if def == nil {
				b.WriteString("null")
			} else {
				writeString(b, def.String())
			}
		case "isDeprecated":
			b.WriteString(boolJSON(dep))
		case "deprecationReason":
			writeNullable(b, reason)
		default:
			b.WriteString("null")
		}
	})
}

func (x *execCtx) introDirective(b *bytes.Buffer, d *ast.DirectiveDefinition, set ast.SelectionSet) {
	x.obj(b, "__Directive", set, func(cf *cfield) {
		switch cf.field.Name {
		case "name":
			writeString(b, d.Name)
		case "description":
			writeNullable(b, d.Description)
		case "locations":
			b.WriteByte('[')
			for i, l := range d.Locations {
				if i > 0 {
					b.WriteByte(',')
				}
				writeString(b, string(l))
			}
			b.WriteByte(']')
		case "args":
			x.introArgs(b, d.Arguments, cf.sel)
		case "isRepeatable":
			b.WriteString(boolJSON(d.IsRepeatable))
		default:
			b.WriteString("null")
		}
	})
}

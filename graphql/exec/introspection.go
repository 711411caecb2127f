package exec

import (
	"bytes"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/introspection"

	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/operation"
)

// Introspection (__schema, __type) is answered from graphql-go-tools'
// introspection data of the model's schema document (introspection.Generator,
// built once per model): only the projection of that data onto the
// request's selection is ours. Values are written straight into the
// response in selection order.

func (x *execCtx) introspect(cf *cfield) ([]byte, error) {
	var b bytes.Buffer
	s := x.m.Intro()
	if cf.field.Name == "__schema" {
		x.introSchema(&b, s, cf.sel)
		return b.Bytes(), nil
	}
	name, _ := cf.field.ArgumentMap(x.vars)["name"].(string)
	t := s.TypeByName(name)
	if t == nil {
		return []byte("null"), nil
	}
	x.introFull(&b, t, cf.sel)
	return b.Bytes(), nil
}

func (x *execCtx) obj(b *bytes.Buffer, typename string, set operation.SelectionSet, field func(cf *cfield)) {
	b.WriteByte('{')
	for i, cf := range x.collect(set, typename) {
		if i > 0 {
			b.WriteByte(',')
		}
		jsonshape.WriteKey(b, cf.key)
		if cf.field.Name == "__typename" {
			jsonshape.WriteString(b, typename)
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
	jsonshape.WriteString(b, s)
}

func writeNullablePtr(b *bytes.Buffer, s *string) {
	if s == nil {
		b.WriteString("null")
		return
	}
	jsonshape.WriteString(b, *s)
}

// writeArray writes n items as a JSON array.
func writeArray(b *bytes.Buffer, n int, item func(i int)) {
	b.WriteByte('[')
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		item(i)
	}
	b.WriteByte(']')
}

func (x *execCtx) introSchema(b *bytes.Buffer, s *introspection.Schema, set operation.SelectionSet) {
	x.obj(b, "__Schema", set, func(cf *cfield) {
		switch cf.field.Name {
		case "description":
			writeNullablePtr(b, s.Description)
		case "types":
			writeArray(b, len(s.Types), func(i int) { x.introFull(b, s.Types[i], cf.sel) })
		case "queryType":
			x.introFull(b, s.TypeByName(s.QueryType.Name), cf.sel)
		case "mutationType":
			if s.MutationType == nil {
				b.WriteString("null")
				return
			}
			x.introFull(b, s.TypeByName(s.MutationType.Name), cf.sel)
		case "subscriptionType":
			if s.SubscriptionType == nil {
				b.WriteString("null")
				return
			}
			x.introFull(b, s.TypeByName(s.SubscriptionType.Name), cf.sel)
		case "directives":
			writeArray(b, len(s.Directives), func(i int) { x.introDirective(b, &s.Directives[i], cf.sel) })
		default:
			b.WriteString("null")
		}
	})
}

func includeDeprecated(x *execCtx, cf *cfield) bool {
	v, _ := cf.field.ArgumentMap(x.vars)["includeDeprecated"].(bool)
	return v
}

// introRef writes a type reference: a wrapper (NON_NULL, LIST) or the
// named type it ends in.
func (x *execCtx) introRef(b *bytes.Buffer, t *introspection.TypeRef, set operation.SelectionSet) {
	if t == nil {
		b.WriteString("null")
		return
	}
	if t.Kind != introspection.NONNULL && t.Kind != introspection.LIST {
		if t.Name == nil {
			b.WriteString("null")
			return
		}
		x.introFull(b, x.m.Intro().TypeByName(*t.Name), set)
		return
	}
	x.obj(b, "__Type", set, func(cf *cfield) {
		switch cf.field.Name {
		case "kind":
			jsonshape.WriteString(b, t.Kind.String())
		case "ofType":
			x.introRef(b, t.OfType, cf.sel)
		case "fields", "inputFields", "interfaces", "possibleTypes", "enumValues", "name", "description", "specifiedByURL":
			b.WriteString("null")
		case "isOneOf":
			b.WriteString("false")
		default:
			b.WriteString("null")
		}
	})
}

// introFull writes a named __Type.
func (x *execCtx) introFull(b *bytes.Buffer, t *introspection.FullType, set operation.SelectionSet) {
	if t == nil {
		b.WriteString("null")
		return
	}
	object := t.Kind == introspection.OBJECT || t.Kind == introspection.INTERFACE
	x.obj(b, "__Type", set, func(cf *cfield) {
		switch cf.field.Name {
		case "kind":
			jsonshape.WriteString(b, t.Kind.String())
		case "name":
			jsonshape.WriteString(b, t.Name)
		case "description":
			writeNullable(b, t.Description)
		case "specifiedByURL":
			writeNullablePtr(b, t.SpecifiedByURL)
		case "isOneOf":
			b.WriteString("false")
		case "ofType":
			b.WriteString("null")
		case "fields":
			if !object {
				b.WriteString("null")
				return
			}
			fields := t.Fields
			if !includeDeprecated(x, cf) {
				fields = make([]introspection.Field, 0, len(t.Fields))
				for _, f := range t.Fields {
					if !f.IsDeprecated {
						fields = append(fields, f)
					}
				}
			}
			writeArray(b, len(fields), func(i int) { x.introField(b, &fields[i], cf.sel) })
		case "inputFields":
			if t.Kind != introspection.INPUTOBJECT {
				b.WriteString("null")
				return
			}
			writeArray(b, len(t.InputFields), func(i int) { x.introInput(b, &t.InputFields[i], cf.sel) })
		case "interfaces":
			if !object {
				b.WriteString("null")
				return
			}
			writeArray(b, len(t.Interfaces), func(i int) { x.introRef(b, &t.Interfaces[i], cf.sel) })
		case "possibleTypes":
			if t.Kind != introspection.INTERFACE && t.Kind != introspection.UNION {
				b.WriteString("null")
				return
			}
			writeArray(b, len(t.PossibleTypes), func(i int) { x.introRef(b, &t.PossibleTypes[i], cf.sel) })
		case "enumValues":
			if t.Kind != introspection.ENUM {
				b.WriteString("null")
				return
			}
			incl := includeDeprecated(x, cf)
			vals := make([]*introspection.EnumValue, 0, len(t.EnumValues))
			for i := range t.EnumValues {
				if incl || !t.EnumValues[i].IsDeprecated {
					vals = append(vals, &t.EnumValues[i])
				}
			}
			writeArray(b, len(vals), func(i int) {
				v := vals[i]
				x.obj(b, "__EnumValue", cf.sel, func(ef *cfield) {
					switch ef.field.Name {
					case "name":
						jsonshape.WriteString(b, v.Name)
					case "description":
						writeNullable(b, v.Description)
					case "isDeprecated":
						b.WriteString(boolJSON(v.IsDeprecated))
					case "deprecationReason":
						writeNullablePtr(b, v.DeprecationReason)
					default:
						b.WriteString("null")
					}
				})
			})
		default:
			b.WriteString("null")
		}
	})
}

func (x *execCtx) introField(b *bytes.Buffer, f *introspection.Field, set operation.SelectionSet) {
	x.obj(b, "__Field", set, func(cf *cfield) {
		switch cf.field.Name {
		case "name":
			jsonshape.WriteString(b, f.Name)
		case "description":
			writeNullable(b, f.Description)
		case "args":
			writeArray(b, len(f.Args), func(i int) { x.introInput(b, &f.Args[i], cf.sel) })
		case "type":
			x.introRef(b, &f.Type, cf.sel)
		case "isDeprecated":
			b.WriteString(boolJSON(f.IsDeprecated))
		case "deprecationReason":
			writeNullablePtr(b, f.DeprecationReason)
		default:
			b.WriteString("null")
		}
	})
}

func (x *execCtx) introInput(b *bytes.Buffer, v *introspection.InputValue, set operation.SelectionSet) {
	x.obj(b, "__InputValue", set, func(cf *cfield) {
		switch cf.field.Name {
		case "name":
			jsonshape.WriteString(b, v.Name)
		case "description":
			writeNullable(b, v.Description)
		case "type":
			x.introRef(b, &v.Type, cf.sel)
		case "defaultValue":
			writeNullablePtr(b, v.DefaultValue)
		case "isDeprecated":
			b.WriteString(boolJSON(v.IsDeprecated))
		case "deprecationReason":
			writeNullablePtr(b, v.DeprecationReason)
		default:
			b.WriteString("null")
		}
	})
}

func (x *execCtx) introDirective(b *bytes.Buffer, d *introspection.Directive, set operation.SelectionSet) {
	x.obj(b, "__Directive", set, func(cf *cfield) {
		switch cf.field.Name {
		case "name":
			jsonshape.WriteString(b, d.Name)
		case "description":
			writeNullable(b, d.Description)
		case "locations":
			writeArray(b, len(d.Locations), func(i int) { jsonshape.WriteString(b, d.Locations[i]) })
		case "args":
			writeArray(b, len(d.Args), func(i int) { x.introInput(b, &d.Args[i], cf.sel) })
		case "isRepeatable":
			b.WriteString(boolJSON(d.IsRepeatable))
		default:
			b.WriteString("null")
		}
	})
}

package graphql

import (
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
)

// typeInfo is one object or input type of a model's schema document.
type typeInfo struct {
	fields map[string]*fieldInfo
}

// fieldInfo is a field (or input field) of a type.
type fieldInfo struct {
	named   string // the named type under the wrappers
	list    bool   // the outer type (under a non-null) is a list
	nonNull bool
	args    map[string]bool
}

// index builds m.types from the schema document (strings are cloned: the
// document's accessors alias its input buffer).
func (m *Model) index() {
	doc := m.doc
	m.types = map[string]*typeInfo{}
	add := func(typeName string, fieldName string, typeRef int, args []int) {
		t := m.types[typeName]
		if t == nil {
			t = &typeInfo{fields: map[string]*fieldInfo{}}
			m.types[typeName] = t
		}
		fi := &fieldInfo{named: strings.Clone(doc.ResolveTypeNameString(typeRef))}
		tr := doc.Types[typeRef]
		if tr.TypeKind == ast.TypeKindNonNull {
			fi.nonNull = true
			tr = doc.Types[tr.OfType]
		}
		fi.list = tr.TypeKind == ast.TypeKindList
		if len(args) > 0 {
			fi.args = make(map[string]bool, len(args))
			for _, a := range args {
				fi.args[strings.Clone(doc.InputValueDefinitionNameString(a))] = true
			}
		}
		t.fields[strings.Clone(fieldName)] = fi
	}
	for _, n := range doc.RootNodes {
		switch n.Kind {
		case ast.NodeKindObjectTypeDefinition:
			o := doc.ObjectTypeDefinitions[n.Ref]
			name := strings.Clone(doc.ObjectTypeDefinitionNameString(n.Ref))
			if m.types[name] == nil {
				m.types[name] = &typeInfo{fields: map[string]*fieldInfo{}}
			}
			for _, f := range o.FieldsDefinition.Refs {
				fd := doc.FieldDefinitions[f]
				add(name, doc.FieldDefinitionNameString(f), fd.Type, fd.ArgumentsDefinition.Refs)
			}
		case ast.NodeKindInputObjectTypeDefinition:
			name := strings.Clone(doc.InputObjectTypeDefinitionNameString(n.Ref))
			for _, f := range doc.InputObjectTypeDefinitions[n.Ref].InputFieldsDefinition.Refs {
				add(name, doc.InputValueDefinitionNameString(f), doc.InputValueDefinitions[f].Type, nil)
			}
		}
	}
	for _, r := range []struct {
		name string
		dst  *string
	}{{"Query", &m.queryType}, {"Mutation", &m.mutationType}, {"Subscription", &m.subscriptionType}} {
		if m.types[r.name] != nil {
			*r.dst = r.name
		}
	}
}

// field is the definition of field name of type parent, nil when unknown.
func (m *Model) field(parent, name string) *fieldInfo {
	t := m.types[parent]
	if t == nil {
		return nil
	}
	return t.fields[name]
}

// rootType is the root type of an operation type ("" when absent).
func (m *Model) rootType(op ast.OperationType) string {
	switch op {
	case ast.OperationTypeMutation:
		return m.mutationType
	case ast.OperationTypeSubscription:
		return m.subscriptionType
	}
	return m.queryType
}

package model

import (
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/introspection"
)

// typeInfo is one object or input type of a model's schema document.
type typeInfo struct {
	fields map[string]*FieldInfo
}

// FieldInfo is a field (or input field) of a type.
type FieldInfo struct {
	Named   string // the named type under the wrappers
	List    bool   // the outer type (under a non-null) is a list
	NonNull bool
	Args    map[string]bool
}

// index builds m.types from the schema document (strings are cloned: the
// document's accessors alias its input buffer).
func (m *Model) index() {
	doc := m.doc
	m.types = map[string]*typeInfo{}
	add := func(typeName string, fieldName string, typeRef int, args []int) {
		t := m.types[typeName]
		if t == nil {
			t = &typeInfo{fields: map[string]*FieldInfo{}}
			m.types[typeName] = t
		}
		fi := &FieldInfo{Named: strings.Clone(doc.ResolveTypeNameString(typeRef))}
		tr := doc.Types[typeRef]
		if tr.TypeKind == ast.TypeKindNonNull {
			fi.NonNull = true
			tr = doc.Types[tr.OfType]
		}
		fi.List = tr.TypeKind == ast.TypeKindList
		if len(args) > 0 {
			fi.Args = make(map[string]bool, len(args))
			for _, a := range args {
				fi.Args[strings.Clone(doc.InputValueDefinitionNameString(a))] = true
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
				m.types[name] = &typeInfo{fields: map[string]*FieldInfo{}}
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

// Field is the definition of field name of type parent, nil when unknown.
func (m *Model) Field(parent, name string) *FieldInfo {
	t := m.types[parent]
	if t == nil {
		return nil
	}
	return t.fields[name]
}

// RootType is the root type of an operation type ("" when absent).
func (m *Model) RootType(op ast.OperationType) string {
	switch op {
	case ast.OperationTypeMutation:
		return m.mutationType
	case ast.OperationTypeSubscription:
		return m.subscriptionType
	}
	return m.queryType
}

// Doc is the library's schema document that operations are normalized and
// validated against (read only).
func (m *Model) Doc() *ast.Document { return m.doc }

// Intro is the library's introspection data of the schema document.
func (m *Model) Intro() *introspection.Schema { return m.intro }

// QueryType is the name of the query root type.
func (m *Model) QueryType() string { return m.queryType }

// MutationType is the name of the mutation root type ("" when the
// credential may write nothing).
func (m *Model) MutationType() string { return m.mutationType }

// SubscriptionType is the name of the subscription root type ("" when the
// credential may read nothing).
func (m *Model) SubscriptionType() string { return m.subscriptionType }

// Root is the meaning of root field name of any root type.
func (m *Model) Root(name string) (RootField, bool) {
	rf, ok := m.roots[name]
	return rf, ok
}

// Rel is relationship field name of entity's object type.
func (m *Model) Rel(entity, name string) (RelField, bool) {
	rf, ok := m.rels[entity][name]
	return rf, ok
}

// Pred is the relationship where-predicate name (<field>_some, _none,
// _every) of entity's where input.
func (m *Model) Pred(entity, name string) (RelPred, bool) {
	p, ok := m.preds[entity][name]
	return p, ok
}

// File names the FILE field whose metadata the object field name
// (<field>File) of entity renders.
func (m *Model) File(entity, name string) (string, bool) {
	f, ok := m.files[entity][name]
	return f, ok
}

package model

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/schema"
)

// lists are field lists by entity (absent entity: every field).
type lists struct{ read, write map[string][]string }

func in(l map[string][]string, entity, field string) bool {
	fs, ok := l[entity]
	if !ok {
		return true
	}
	if field == "id" || field == "createdAt" || field == "updatedAt" {
		return true
	}
	for _, f := range fs {
		if f == field {
			return true
		}
	}
	return false
}

func (l lists) Readable(entity, field string) bool { return in(l.read, entity, field) }
func (l lists) Writable(entity, field string) bool { return in(l.write, entity, field) }

// TestFieldListsShapeTheSchema: a role's field lists decide which fields
// the object, where, aggregate and input types show, so the SDL (and the
// introspection and validation built from it) never names a field the role
// cannot read or write.
func TestFieldListsShapeTheSchema(t *testing.T) {
	def := modeltest.Def(t, "shop.json")
	for _, c := range []struct {
		name        string
		scopes      []string
		l           lists
		has, hasNot []string
	}{
		{"read list", []string{"entity:Product:*"},
			lists{read: map[string][]string{"Product": {"name", "price"}}, write: map[string][]string{"Product": {"name"}}},
			[]string{"type Product {\n  id: ID!\n  createdAt: DateTime!\n  updatedAt: DateTime!\n  name: String!\n  price: Float\n}",
				"input ProductCreateInput {\n  name: String!\n}", "input ProductUpdateInput {\n  name: String\n}",
				"  price: FloatFilter", "createProduct(", "deleteProduct("},
			[]string{"stock", "manualFile", "embedding", "productsVectorSearch", "releasedAt", "price: Float\n}\n\ninput ProductCreate"}},
		{"nothing writable", []string{"entity:Product:*"},
			lists{write: map[string][]string{"Product": {}}},
			[]string{"type Product {", "  stock: Int", "deleteProduct("},
			[]string{"createProduct(", "updateProduct(", "ProductCreateInput", "ProductUpdateInput", "batchCreateProduct", "upsertProduct"}},
		{"read only of a related entity", []string{"entity:Product:read", "entity:Category:read", "relationship:IN_CATEGORY:read"},
			lists{read: map[string][]string{"Category": {"name"}}},
			[]string{"type Category {\n  id: ID!\n  createdAt: DateTime!\n  updatedAt: DateTime!\n  name: String!\n", "categoriesAggregate("},
			// (no create or update: no input type names rank either)
			[]string{"rank", "type Mutation", "CategoryCreateInput"}},
	} {
		_, allow := visibilityKey(def, principal(t, c.scopes...))
		m, err := buildView(def, allow, c.l)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, s := range c.has {
			if !strings.Contains(m.SDL, s) {
				t.Errorf("%s: SDL lacks %q", c.name, s)
			}
		}
		for _, s := range c.hasNot {
			if strings.Contains(m.SDL, s) {
				t.Errorf("%s: SDL shows %q", c.name, s)
			}
		}
	}
	// Lists that restrict nothing give the scopes' model, byte for byte.
	_, allow := visibilityKey(def, principal(t, "entity:Product:*"))
	a, _ := build(def, allow)
	b, _ := buildView(def, allow, lists{})
	if a.SDL != b.SDL {
		t.Error("empty field lists change the SDL")
	}
}

// TestRoleModelsAreKeptApart: the model kept for one role set is found
// again for it, and never served to another role set or to the same role
// at another version (a role edit), nor to a key without field lists.
func TestRoleModelsAreKeptApart(t *testing.T) {
	a := &schema.Active{Def: modeltest.Def(t, "shop.json")}
	p := principal(t, "entity:Product:*")
	hide := lists{read: map[string][]string{"Product": {"name"}}}
	show := lists{read: map[string][]string{"Product": {"name", "price"}}}
	v1, _ := modelFor(a, p, hide, "viewer@1")
	again, _ := modelFor(a, p, hide, "viewer@1")
	v2, _ := modelFor(a, p, show, "viewer@2")
	other, _ := modelFor(a, p, show, "keeper@1")
	plain, _ := modelFor(a, p, nil, "")
	if v1 != again {
		t.Error("a role's model is rebuilt for its next request")
	}
	if v2 == v1 || other == v1 || plain == v1 || plain == other {
		t.Error("a model is shared across role sets or versions")
	}
	if strings.Contains(v1.SDL, "price: FloatFilter") || !strings.Contains(v2.SDL, "price: FloatFilter") || !strings.Contains(plain.SDL, "stock: IntFilter") {
		t.Error("a model shows another role's fields")
	}
}

// BenchmarkRoleModelLookup: what finding a role's kept model costs a
// request (the request path of every GraphQL call by a ruled principal).
func BenchmarkRoleModelLookup(b *testing.B) {
	a := &schema.Active{Def: modeltest.Def(b, "shop.json")}
	ss, _ := auth.ParseScopes([]string{"entity:Product:*", "entity:Category:read"})
	p := &auth.Principal{TenantID: "t", Scopes: ss}
	l := lists{read: map[string][]string{"Product": {"name"}}}
	if _, err := modelFor(a, p, l, "viewer@1"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_, _ = modelFor(a, p, l, "viewer@1")
	}
}

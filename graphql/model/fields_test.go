package model

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/graphql/model/modeltest"
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
			// (the input types follow the write lists, which this role lacks)
			[]string{"rank: IntFilter", "rank: Int!", "type Mutation"}},
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
	// Without field lists the model is the scopes' model, byte for byte.
	_, allow := visibilityKey(def, principal(t, "entity:Product:read"))
	a, _ := build(def, allow)
	b, _ := buildView(def, allow, lists{})
	if a.SDL != b.SDL {
		t.Error("empty field lists change the SDL")
	}
}

package model

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/graphql/model/modeltest"
)

// TestHistoryRoot: an entity with history: true has <one>History(id,
// first, after) to a credential that may read it, and no other entity has.
func TestHistoryRoot(t *testing.T) {
	def := modeltest.Def(t, "shop.json")
	for i := range def.Entities {
		def.Entities[i].History = def.Entities[i].Name == "Product"
	}
	m, err := Build(def)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`productHistory(id: ID!, "1 to 500 versions (default 50)." first: Int, after: String): ProductHistory!`,
		"type ProductHistory {\n  \"Newest first.\"\n  items: [ProductVersion!]!",
		"type ProductVersion {", "  changed: [String!]!", "  record: JSON!",
	} {
		if !strings.Contains(m.SDL, s) {
			t.Errorf("SDL lacks %q", s)
		}
	}
	if rf, ok := m.Root("productHistory"); !ok || rf.Kind != KindHistory || rf.Entity.Name != "Product" {
		t.Errorf("productHistory is %+v, %v", rf, ok)
	}
	if strings.Contains(m.SDL, "categoryHistory") || strings.Contains(m.SDL, "CategoryVersion") {
		t.Error("an entity without history has a history field")
	}
	key, allow := visibilityKey(def, principal(t, "entity:Product:create"))
	if key == "" {
		t.Fatal("a narrow key shares the full model")
	}
	if w, err := build(def, allow); err != nil || strings.Contains(w.SDL, "productHistory") {
		t.Errorf("a key that may not read Product sees its history (%v)", err)
	}
}

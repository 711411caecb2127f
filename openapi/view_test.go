package openapi_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/openapi"
)

// roleView is a role of the shop: it reads and writes some fields of
// products (no delete), reads categories and the products' categories.
func roleView(t *testing.T) *openapi.View {
	t.Helper()
	scopes, err := auth.ParseScopes([]string{"entity:Product:read", "entity:Product:create", "entity:Product:update",
		"entity:Category:read", "relationship:IN_CATEGORY:read"})
	if err != nil {
		t.Fatal(err)
	}
	in := func(fs ...string) func(string, string) bool {
		return func(entity, field string) bool { return entity != "Product" || slices.Contains(fs, field) }
	}
	return &openapi.View{Allows: scopes.Allows, Readable: in("name", "price", "status"), Writable: in("name", "price")}
}

// TestRoleDocument: a role's document holds only its operations and its
// fields (the contract: fields outside fields.read are absent from its
// OpenAPI), stays valid OpenAPI, and is a golden file
// (go test ./openapi -run TestRoleDocument -update).
func TestRoleDocument(t *testing.T) {
	got, err := openapi.New("https://dds.example.test").OpenAPIFor(shopInfo(t), roleView(t))
	if err != nil {
		t.Fatal(err)
	}
	doc := load(t, got)
	props := func(name string) []string {
		s := doc.Components.Schemas[name]
		if s == nil {
			return nil
		}
		var out []string
		for k := range s.Value.Properties {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if p := props("Product"); !slices.Equal(p, []string{"createdAt", "id", "name", "price", "status", "updatedAt"}) {
		t.Errorf("Product shows %v", p)
	}
	if p := props("Product.Input"); !slices.Equal(p, []string{"name", "price"}) {
		t.Errorf("Product.Input shows %v", p)
	}
	if f := props("Product.Filter"); slices.Contains(f, "stock") || !slices.Contains(f, "status") {
		t.Errorf("Product.Filter shows %v", f)
	}
	for path, item := range doc.Paths.Map() {
		if item.Delete != nil {
			t.Errorf("%s: a delete the role may not do", path)
		}
		if strings.Contains(path, "/User") || strings.Contains(path, "MEMBER_OF") {
			t.Errorf("%s: an entity the role cannot reach", path)
		}
	}
	if it := doc.Paths.Value("/api/v1/dynamic/Category"); it == nil || it.Get == nil || it.Post != nil {
		t.Errorf("Category: want list only, got %+v", it)
	}
	if it := doc.Paths.Value("/api/v1/dynamic/Product/{id}"); it == nil || it.Patch == nil || it.Get == nil {
		t.Error("Product: get and patch missing")
	}
	for name := range doc.Components.Schemas {
		if strings.HasPrefix(name, "User") || strings.HasPrefix(name, "Category.Input") {
			t.Errorf("component %s: not reachable by the role", name)
		}
	}
	if strings.Contains(string(got), `"stock"`) || strings.Contains(string(got), `"manual"`) {
		t.Error("a field outside the read list is named in the document")
	}
	path := filepath.Join("testdata", "shop.role.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./openapi -run TestRoleDocument -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Error("the role's document differs from testdata/shop.role.golden.json (run with -update and review the diff)")
	}
	// Without a view, the document is the full one, byte for byte.
	full, _ := openapi.New("https://dds.example.test").OpenAPI(shopInfo(t))
	if none, _ := openapi.New("https://dds.example.test").OpenAPIFor(shopInfo(t), nil); !bytes.Equal(full, none) {
		t.Error("no view changes the document")
	}
}

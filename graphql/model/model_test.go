package model

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestSDLGolden(t *testing.T) {
	m, err := Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "shop.graphql")
	if *update {
		if err := os.WriteFile(golden, []byte(m.SDL), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test ./graphql/model -run TestSDLGolden -update)", err)
	}
	if string(want) != m.SDL {
		t.Errorf("generated SDL differs from %s; review and rerun with -update", golden)
	}
}

func TestRootFieldNames(t *testing.T) {
	m, err := Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	q := m.types[m.queryType].fields
	mu := m.types[m.mutationType].fields
	s := m.types[m.subscriptionType].fields
	for _, name := range []string{"products", "product", "productsCount", "productsConnection", "productVectorSearch",
		"categories", "people", "person", "newsList", "news", "users", "groups"} {
		if q[name] == nil {
			t.Errorf("Query.%s missing", name)
		}
	}
	for _, name := range []string{"createProduct", "updateProduct", "deleteProduct", "batchCreateProduct", "batchUpdateProduct",
		"batchDeleteProduct", "updateUserGroupsMemberOfRelationshipById", "deleteUserGroupsMemberOfRelationshipById",
		"createUserGroupsMemberOfRelationship", "createUserFollowingFollowsRelationship", "deleteUserFollowingFollowsRelationshipById",
		"updateProductCategoriesInCategoryRelationshipById"} {
		if mu[name] == nil {
			t.Errorf("Mutation.%s missing", name)
		}
	}
	if mu["updateUserFollowingFollowsRelationshipById"] != nil {
		t.Error("by-id update generated for a relationship without properties")
	}
	for _, name := range []string{"productCreated", "productUpdated", "productDeleted"} {
		if s[name] == nil {
			t.Errorf("Subscription.%s missing", name)
		}
	}
	if q["categoryVectorSearch"] != nil {
		t.Error("vector search generated for an entity without VECTOR fields")
	}
	user := m.types["User"].fields
	for _, f := range []string{"groups", "groupsConnection", "following", "followers"} {
		if user[f] == nil {
			t.Errorf("User.%s missing", f)
		}
	}
	if user["followingConnection"] != nil {
		t.Error("connection field generated for a relationship without properties")
	}
	if m.Field("UserWhere", "groups_every") == nil {
		t.Error("UserWhere.groups_every missing")
	}
}

func TestNaming(t *testing.T) {
	n := newNamer()
	for _, tc := range []struct{ in, plural string }{
		{"Product", "Products"}, {"Category", "Categories"}, {"Person", "People"},
		{"ProductCategory", "ProductCategories"}, {"Address", "Addresses"}, {"Box", "Boxes"},
		{"SalesPerson", "SalesPeople"}, {"URL", "URLS"},
	} {
		if got := n.plural(tc.in); got != tc.plural {
			t.Errorf("plural(%s) = %s, want %s", tc.in, got, tc.plural)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"MEMBER_OF", "MemberOf"}, {"IN_CATEGORY", "InCategory"}, {"follows", "Follows"}, {"hasTag", "HasTag"}, {"X", "X"},
	} {
		if got := pascal(tc.in); got != tc.want {
			t.Errorf("pascal(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"Product", "product"}, {"URLLink", "urlLink"}, {"ID", "id"}, {"URLS", "urls"}, {"A", "a"},
	} {
		if got := lowerFirst(tc.in); got != tc.want {
			t.Errorf("lowerFirst(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestBuildReportsCollisions(t *testing.T) {
	d := &schema.Definition{Name: "x", Entities: []schema.Entity{
		{Name: "Product", Fields: []schema.Field{{Name: "n", Type: schema.String}}},
		{Name: "ProductWhere", Fields: []schema.Field{{Name: "n", Type: schema.String}}},
	}}
	if _, err := Build(d); err == nil {
		t.Fatal("want an error for the ProductWhere collision")
	}
	d = &schema.Definition{Name: "x", Entities: []schema.Entity{{Name: "PageInfo", Fields: []schema.Field{{Name: "n", Type: schema.String}}}}}
	if _, err := Build(d); err == nil {
		t.Fatal("want an error for an entity named like a shared type")
	}
}

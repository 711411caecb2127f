package model

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/graphql/model/modeltest"
)

func principal(t *testing.T, scopes ...string) *auth.Principal {
	t.Helper()
	ss, err := auth.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Principal{TenantID: "t", Scopes: ss}
}

// TestVisibilityFollowsScopes: the model a credential gets (its SDL, what
// introspection and validation read) holds only what its scopes allow.
func TestVisibilityFollowsScopes(t *testing.T) {
	def := modeltest.Def(t, "shop.json")
	for _, c := range []struct {
		name        string
		scopes      []string
		has, hasNot []string
	}{
		{"one entity read", []string{"entity:Product:read"},
			[]string{"type Product {", "products(", "productCreated(", "manualFile: File"},
			[]string{"Category", "categories", "User", "createProduct", "type Mutation", "_some", "IN_CATEGORY", "InCategory"}},
		{"read across a relationship", []string{"entity:Product:read", "entity:Category:read", "relationship:IN_CATEGORY:read"},
			[]string{"categories(where: CategoryWhere", "categoriesConnection(", "categories_some", "InCategoryProperties", "products(where"},
			[]string{"createProductCategoriesInCategoryRelationship", "User", "type Mutation"}},
		{"entities without the relationship", []string{"entity:Product:read", "entity:Category:read"},
			[]string{"type Category {", "type Product {"},
			[]string{"categories(where: CategoryWhere, limit", "categories_some", "InCategory"}},
		{"create only", []string{"entity:Product:create"},
			[]string{"createProduct(", "batchCreateProduct(", "noQueriesAvailable", "type Product {"},
			[]string{"products(", "updateProduct", "deleteProduct", "Subscription", "Category"}},
		{"edge writer", []string{"entity:*:read", "relationship:MEMBER_OF:create"},
			[]string{"createUserGroupsMemberOfRelationship(", "MemberOfProperties"},
			[]string{"deleteUserGroupsMemberOfRelationshipById", "updateUserGroupsMemberOfRelationshipById", "groups(where: GroupWhere, limit", "createUser("}},
	} {
		key, allow := visibilityKey(def, principal(t, c.scopes...))
		if key == "" {
			t.Fatalf("%s: a narrow key shares the full model", c.name)
		}
		m, err := build(def, allow)
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
		// Validation reads the same model (operation's
		// TestValidationFollowsVisibility): what is not shown is not a field.
		if _, ok := m.Root("deleteUser"); ok || m.Field("Mutation", "deleteUser") != nil {
			t.Errorf("%s: a hidden root field is in the model", c.name)
		}
	}
	if key, _ := visibilityKey(def, principal(t, "*:*:*")); key != "" {
		t.Error("a full key does not share the full model")
	}
}

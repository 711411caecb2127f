package graphql

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/dds-project/dds/graphql/protocol"
)

// TestScopesPerField: what a credential may not do is not in its schema,
// so validation refuses it naming the field; what its schema shows but the
// selection cannot do (reading through a write) is FORBIDDEN at execution.
func TestScopesPerField(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	hidden := func(what string, r *gqlResp) {
		t.Helper()
		if r.Data != nil || len(r.Errors) != 1 || r.code(0) != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("%s: %s", what, r.Body)
		}
	}
	readProducts := e.key(t, s.tenant, "entity:Product:read")
	r := e.gql(t, s.tenant, readProducts, `{ productsCount categoriesCount }`, nil)
	hidden("per-field scope", r)
	if !strings.Contains(r.Errors[0].Message, "categoriesCount") {
		t.Errorf("the refusal does not name the field: %s", r.Body)
	}
	e.gql(t, s.tenant, readProducts, `{ productsCount }`, nil).ok(t)
	// Traversing to categories needs read on Category and on the relationship.
	hidden("traversal without scope", e.gql(t, s.tenant, readProducts, `{ products { categories { name } } }`, nil))
	hidden("relationship filter without scope", e.gql(t, s.tenant, readProducts, `{ products(where: {categories_some: {name: {equals: "x"}}}) { name } }`, nil))
	both := e.key(t, s.tenant, "entity:*:read", "relationship:IN_CATEGORY:read")
	e.gql(t, s.tenant, both, `{ products { categories { name } } }`, nil).ok(t)
	hidden("create with read scope", e.gql(t, s.tenant, both, `mutation { createProduct(input: {name: "x"}) { id } }`, nil))
	creator := e.key(t, s.tenant, "entity:Product:create")
	e.gql(t, s.tenant, creator, `mutation { createProduct(input: {name: "x"}) { id } }`, nil).ok(t)
	hidden("delete with create scope", e.gql(t, s.tenant, creator, fmt.Sprintf(`mutation { deleteProduct(id: %q) { id } }`, s.p[0]), nil))
	// A relationship field is not in the schema of a key without its scopes.
	hidden("relationship field without its scopes", e.gql(t, s.tenant, creator, `mutation { createProduct(input: {name: "y"}) { categories { name } } }`, nil))
}

// TestNarrowKeySchema: a key with one entity's read scope sees only that
// entity in introspection and in schema.graphql.
func TestNarrowKeySchema(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	narrow := e.key(t, s.tenant, "entity:Product:read")
	d := e.gql(t, s.tenant, narrow, introspectionQuery, nil).ok(t)
	sch := d["__schema"].(map[string]any)
	if sch["mutationType"] != nil {
		t.Errorf("a read-only key sees a mutation type: %v", sch["mutationType"])
	}
	var names []string
	for _, ty := range sch["types"].([]any) {
		name := ty.(map[string]any)["name"].(string)
		names = append(names, name)
		if strings.HasPrefix(name, "Category") || strings.HasPrefix(name, "InCategory") {
			t.Errorf("introspection shows %s to a Product-only key", name)
		}
		if name == "Query" {
			for _, f := range ty.(map[string]any)["fields"].([]any) {
				if fn := f.(map[string]any)["name"].(string); !strings.HasPrefix(fn, "product") {
					t.Errorf("introspection shows root field %s to a Product-only key", fn)
				}
			}
		}
		if name == "Product" {
			for _, f := range ty.(map[string]any)["fields"].([]any) {
				if fn := f.(map[string]any)["name"].(string); strings.HasPrefix(fn, "categor") {
					t.Errorf("introspection shows Product.%s without the relationship scope", fn)
				}
			}
		}
	}
	if !strings.Contains(strings.Join(names, " "), "Product") {
		t.Errorf("introspection lacks Product: %v", names)
	}
	req, _ := http.NewRequest("GET", e.URL+"/api/v1/dynamic-gql/"+s.tenant+"/schema.graphql", nil)
	req.Header.Set("Authorization", "Bearer "+narrow)
	sdl := do(t, req)
	if sdl.Status != 200 || !strings.Contains(string(sdl.Body), "type Product {") || strings.Contains(string(sdl.Body), "Category") ||
		strings.Contains(string(sdl.Body), "type Mutation") {
		t.Errorf("schema.graphql for a Product-only key: %d\n%s", sdl.Status, sdl.Body)
	}
	// The full key still sees everything.
	full := e.gql(t, s.tenant, s.key, `{ __type(name: "Category") { name } }`, nil).ok(t)
	if full["__type"] == nil {
		t.Error("the full key lost Category")
	}
}

func TestTenantMustMatchAndAuth(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	a := newShop(t)
	b := newShop(t)
	r := e.gql(t, b.tenant, a.key, `{ productsCount }`, nil)
	if r.Status != 404 || r.Data != nil || r.code(0) != "NOT_FOUND" {
		t.Errorf("other tenant: %d %s", r.Status, r.Body)
	}
	r = e.gql(t, a.tenant, "", `{ productsCount }`, nil)
	if r.Status != 401 || r.code(0) != "UNAUTHORIZED" {
		t.Errorf("no key must be a GraphQL error with extensions.code UNAUTHORIZED: %d %s", r.Status, r.Body)
	}
	// JWT access tokens work in the same header.
	p, err := e.Authn.Authenticate(t.Context(), "Bearer "+a.key)
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := e.Authn.Mint(p, p.Scopes, 60e9)
	if err != nil {
		t.Fatal(err)
	}
	d := e.gql(t, a.tenant, tok, `{ productsCount }`, nil).ok(t)
	if d["productsCount"].(float64) != 3 {
		t.Errorf("count %v", d)
	}
	// schema download
	req, _ := http.NewRequest("GET", e.URL+"/api/v1/dynamic-gql/"+a.tenant+"/schema.graphql", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	sr := do(t, req)
	if sr.Status != 200 || !strings.Contains(string(sr.Body), "productsConnection(") || !strings.HasPrefix(sr.Header.Get("Content-Type"), "application/graphql") {
		t.Errorf("schema.graphql: %d %s", sr.Status, sr.Header.Get("Content-Type"))
	}
	req, _ = http.NewRequest("GET", e.URL+"/api/v1/dynamic-gql/"+b.tenant+"/schema.graphql", nil)
	req.Header.Set("Authorization", "Bearer "+a.key)
	if sr := do(t, req); sr.Status != 404 {
		t.Errorf("other tenant's schema: %d", sr.Status)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	deep := `{ products(limit: 1) { categories(limit: 1) { products(limit: 1) { categories(limit: 1) { products(limit: 1) { categories(limit: 1) { products(limit: 1) { categories(limit: 1) { products(limit: 1) { categories(limit: 1) { products(limit: 1) { categories(limit: 1) { name } } } } } } } } } } } } }`
	wide := "{ products(limit: 100) { categories(limit: 100) { products(limit: 100) { name } } } }"
	var aliases strings.Builder
	aliases.WriteString("{")
	for i := 0; i < 51; i++ {
		fmt.Fprintf(&aliases, " a%d: productsCount", i)
	}
	aliases.WriteString(" }")
	for name, q := range map[string]string{"depth": deep, "complexity": wide, "aliases": aliases.String(),
		"size": "{ productsCount " + strings.Repeat(" ", 70<<10) + "}"} {
		r := e.gql(t, s.tenant, s.key, q, nil)
		if r.Status != 400 || r.Data != nil || len(r.Errors) != 1 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// Introspection is not counted against the depth limit.
	e.gql(t, s.tenant, s.key, introspectionQuery, nil).ok(t)
}

func TestTransport(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	path := "/api/v1/dynamic-gql/" + s.tenant
	get := func(q, accept string) *gqlResp {
		req, _ := http.NewRequest("GET", e.URL+path+"?query="+url.QueryEscape(q), nil)
		req.Header.Set("Authorization", "Bearer "+s.key)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		return do(t, req)
	}
	r := get("{ productsCount }", "application/graphql-response+json")
	if r.Status != 200 || r.Header.Get("Content-Type") != "application/graphql-response+json; charset=utf-8" {
		t.Errorf("GET: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	r = get(`mutation { createProduct(input: {name: "x"}) { id } }`, "")
	if r.Status != 405 || r.Header.Get("Allow") != "POST" {
		t.Errorf("GET mutation: %d %s", r.Status, r.Body)
	}
	r = get("{ productsCount }", "application/json")
	if r.Header.Get("Content-Type") != "application/json; charset=utf-8" {
		t.Errorf("Accept application/json: %s", r.Header.Get("Content-Type"))
	}
	// Validation errors: 400 under graphql-response+json, 200 under json.
	if r := get("{ nope }", "application/graphql-response+json"); r.Status != 400 || r.code(0) != "GRAPHQL_VALIDATION_FAILED" {
		t.Errorf("validation: %d %s", r.Status, r.Body)
	}
	if r := get("{ nope }", "application/json"); r.Status != 200 || len(r.Errors) != 1 {
		t.Errorf("validation (json): %d %s", r.Status, r.Body)
	}
	if r := get("{ products(", ""); r.code(0) != "GRAPHQL_PARSE_FAILED" {
		t.Errorf("parse: %s", r.Body)
	}
	for _, body := range []string{`{`, `[]`, `{"query": 1}`, `{"query": "{ productsCount }", "variables": "x"}`} {
		if r := e.post(t, path, s.key, []byte(body), "application/json"); r.Status != 400 {
			t.Errorf("%s: %d %s", body, r.Status, r.Body)
		}
	}
	r = e.post(t, path, s.key, []byte(`{"query": "query A { productsCount } query B { __typename }", "operationName": "B", "variables": null, "extensions": null}`), "")
	if r.Status != 200 || r.Data["__typename"] != "Query" {
		t.Errorf("operationName: %d %s", r.Status, r.Body)
	}
}

// introspectionQuery is GraphiQL's.
const introspectionQuery = `query IntrospectionQuery {
  __schema {
    queryType { name } mutationType { name } subscriptionType { name }
    types { ...FullType }
    directives { name description locations isRepeatable args(includeDeprecated: true) { ...InputValue } }
  }
}
fragment FullType on __Type {
  kind name description specifiedByURL
  fields(includeDeprecated: true) { name description args(includeDeprecated: true) { ...InputValue } type { ...TypeRef } isDeprecated deprecationReason }
  inputFields(includeDeprecated: true) { ...InputValue }
  interfaces { ...TypeRef }
  enumValues(includeDeprecated: true) { name description isDeprecated deprecationReason }
  possibleTypes { ...TypeRef }
}
fragment InputValue on __InputValue { name description type { ...TypeRef } defaultValue isDeprecated deprecationReason }
fragment TypeRef on __Type { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } } } }`

func TestIntrospection(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	d := e.gql(t, s.tenant, s.key, introspectionQuery, nil).ok(t)
	sch := d["__schema"].(map[string]any)
	if sch["queryType"].(map[string]any)["name"] != "Query" || sch["subscriptionType"].(map[string]any)["name"] != "Subscription" {
		t.Errorf("root types: %v", sch)
	}
	var product map[string]any
	for _, ty := range sch["types"].([]any) {
		if ty.(map[string]any)["name"] == "Product" {
			product = ty.(map[string]any)
		}
	}
	if product == nil || product["kind"] != "OBJECT" {
		t.Fatalf("Product type: %v", product)
	}
	d = e.gql(t, s.tenant, s.key, `{ __type(name: "ProductOrderBy") { kind inputFields { name defaultValue type { kind ofType { name } } } }
	  enum: __type(name: "ProductStatus") { enumValues { name } } missing: __type(name: "Nope") { name } }`, nil).ok(t)
	jsonEq(t, d, `{"__type": {"kind": "INPUT_OBJECT", "inputFields": [
	  {"name": "field", "defaultValue": null, "type": {"kind": "NON_NULL", "ofType": {"name": "String"}}},
	  {"name": "direction", "defaultValue": "ASC", "type": {"kind": "ENUM", "ofType": null}}]},
	  "enum": {"enumValues": [{"name": "draft"}, {"name": "live"}]}, "missing": null}`)
}

// TestIntrospectionTypesIntrospect: the introspection system's own types are
// part of the schema, as the GraphQL specification and graphql-js have it:
// listed by __schema and answered by __type.
func TestIntrospectionTypesIntrospect(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	d := e.gql(t, s.tenant, s.key, `{
	  __schema { types { name } }
	  t: __type(name: "__Type") { kind name fields { name type { kind name ofType { kind name } } } }
	  k: __type(name: "__TypeKind") { kind fields { name } enumValues { name } }
	  f: __type(name: "__Field") { fields { name args { name } } }
	}`, nil).ok(t)
	b, _ := json.Marshal(d)
	var got struct {
		Schema struct{ Types []struct{ Name string } } `json:"__schema"`
		T      struct {
			Kind, Name string
			Fields     []struct {
				Name string
				Type struct {
					Kind, Name string
					OfType     *struct{ Kind, Name string }
				}
			}
		}
		K struct {
			Kind       string
			Fields     []any
			EnumValues []struct{ Name string }
		}
		F struct {
			Fields []struct {
				Name string
				Args []struct{ Name string }
			}
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, ty := range got.Schema.Types {
		names[ty.Name] = true
	}
	for _, n := range []string{"__Schema", "__Type", "__TypeKind", "__Field", "__InputValue", "__EnumValue", "__Directive", "__DirectiveLocation", "Product"} {
		if !names[n] {
			t.Errorf("__schema.types lacks %s", n)
		}
	}
	if strings.Contains(string(b), "DDSINTRO_") /* the model's stand-in name (introtypes.go) */ {
		t.Errorf("a stand-in name leaked: %s", b)
	}
	fields := map[string]string{}
	for _, f := range got.T.Fields {
		ref := f.Type.Kind + " " + f.Type.Name
		if f.Type.OfType != nil {
			ref += " of " + f.Type.OfType.Kind + " " + f.Type.OfType.Name
		}
		fields[f.Name] = ref
	}
	if got.T.Kind != "OBJECT" || got.T.Name != "__Type" || fields["kind"] != "NON_NULL  of ENUM __TypeKind" || fields["ofType"] != "OBJECT __Type" {
		t.Errorf("__Type = %s %s, fields %v", got.T.Kind, got.T.Name, fields)
	}
	kinds := map[string]bool{}
	for _, v := range got.K.EnumValues {
		kinds[v.Name] = true
	}
	if got.K.Kind != "ENUM" || got.K.Fields != nil || !kinds["NON_NULL"] || !kinds["INPUT_OBJECT"] {
		t.Errorf("__TypeKind = %+v", got.K)
	}
	args := map[string]int{}
	for _, f := range got.F.Fields {
		args[f.Name] = len(f.Args)
	}
	if _, ok := args["isDeprecated"]; !ok || args["type"] != 0 {
		t.Errorf("__Field fields = %v", args)
	}
}

// TestGraphiQLIntrospectionQueryAccepted: the query GraphiQL and
// graphql-codegen send (graphql-js 16 getIntrospectionQuery, its TypeRef
// fragment nests ofType nine levels) is not refused by the depth limit,
// which does not count introspection, also where a fragment on __Type is
// measured on its own.
func TestGraphiQLIntrospectionQueryAccepted(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	q, err := os.ReadFile("testdata/graphiql-introspection.graphql")
	if err != nil {
		t.Fatal(err)
	}
	d := e.gql(t, s.tenant, s.key, string(q), nil).ok(t)
	sc, _ := d["__schema"].(map[string]any)
	if types, _ := sc["types"].([]any); len(types) < 10 {
		t.Fatalf("__schema = %.300v", d)
	}
}

// TestEveryOperationValidated: through the server, a document with an
// invalid operation fails whichever operation the request names (400,
// GRAPHQL_VALIDATION_FAILED at the bad field), a narrow key's document
// naming what it cannot see in another operation fails too, and a valid
// document of several operations executes the one named.
func TestEveryOperationValidated(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	narrow := e.key(t, s.tenant, "entity:Product:read")
	post := func(key, q, op string) *gqlResp {
		body, _ := json.Marshal(map[string]any{"query": q, "operationName": op})
		return e.post(t, "/api/v1/dynamic-gql/"+s.tenant, key, body, "application/graphql-response+json")
	}
	for _, c := range []struct {
		name, key, q, op, msg string
		at                    protocol.Location
	}{
		{"invalid sibling", s.key, "query A { productsCount }\nquery B { nope }", "A", "nope", protocol.Location{Line: 2, Column: 11}},
		{"unused fragment", s.key, "query A { productsCount }\nquery B { categoriesCount }\nfragment F on Product { id }", "A", "F", protocol.Location{Line: 3, Column: 1}},
		{"sibling beyond the key", narrow, "query A { productsCount }\nquery B { categories { name } }", "A", "categories", protocol.Location{Line: 2, Column: 11}},
	} {
		r := post(c.key, c.q, c.op)
		if r.Status != 400 || r.Data != nil || len(r.Errors) != 1 || r.code(0) != "GRAPHQL_VALIDATION_FAILED" ||
			!strings.Contains(r.Errors[0].Message, c.msg) || len(r.Errors[0].Locations) == 0 || r.Errors[0].Locations[0] != c.at {
			t.Errorf("%s: %d %s", c.name, r.Status, r.Body)
		}
	}
	q := "query A { productsCount }\nquery B { categoriesCount }"
	if d := post(s.key, q, "B").ok(t); d["categoriesCount"] != float64(2) || d["productsCount"] != nil {
		t.Errorf("B executed: %v", d)
	}
	if r := post(s.key, q, ""); r.Status != 400 || r.code(0) != "BAD_REQUEST" || !strings.Contains(r.Errors[0].Message, "operationName is required") {
		t.Errorf("no operationName: %d %s", r.Status, r.Body)
	}
}

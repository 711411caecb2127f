package openapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/openapi"
	"github.com/dds-project/dds/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// loadDef reads a schema definition the way the management API does
// (numbers as json.Number) and validates it.
func loadDef(t *testing.T, src string) schema.Definition {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(src))
	dec.UseNumber()
	var d schema.Definition
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(&d); err != nil {
		t.Fatalf("definition invalid: %v %v", err, err.Details)
	}
	return d
}

func shopInfo(t *testing.T) schema.Info {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	return schema.Info{ID: "0190f5d2-0000-7000-8000-000000000001", Name: "shop", Version: 2, Active: true,
		CreatedAt: ts, UpdatedAt: ts, Definition: loadDef(t, string(src))}
}

// load parses and validates a generated document with kin-openapi's
// loader, as a client generator would.
func load(t *testing.T, b []byte) *openapi3.T {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		t.Fatalf("load generated document: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("generated document is not valid OpenAPI: %v", err)
	}
	return doc
}

func TestShopGolden(t *testing.T) {
	got, err := openapi.New("https://dds.example.test").OpenAPI(shopInfo(t))
	if err != nil {
		t.Fatal(err)
	}
	load(t, got)
	path := filepath.Join("testdata", "shop.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./openapi -run TestShopGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generated document differs from %s; if the change is intended, run with -update", path)
	}
	again, _ := openapi.New("https://dds.example.test").OpenAPI(shopInfo(t))
	if !bytes.Equal(got, again) {
		t.Error("generation is not deterministic")
	}
}

func TestDocumentsAreValid(t *testing.T) {
	cases := []struct{ name, def string }{
		{"one entity, one field", `{"name": "s", "entities": [{"name": "Note", "fields": [{"name": "body", "type": "TEXT"}]}]}`},
		{"every type as list and required", `{"name": "s", "entities": [{"name": "All", "fields": [
			{"name": "s", "type": "STRING", "list": true, "required": true},
			{"name": "t", "type": "TEXT", "list": true},
			{"name": "i", "type": "INTEGER", "list": true},
			{"name": "n", "type": "NUMBER", "list": true, "required": true},
			{"name": "b", "type": "BOOLEAN", "list": true},
			{"name": "ts", "type": "TIMESTAMP", "list": true},
			{"name": "d", "type": "DATE", "list": true},
			{"name": "e", "type": "ENUM", "values": ["a", "b"], "list": true, "required": true},
			{"name": "f", "type": "FILE", "required": true},
			{"name": "j", "type": "JSON", "required": true, "default": {"k": [1, 2]}},
			{"name": "v1", "type": "VECTOR", "vectorDimensions": 1, "required": true},
			{"name": "v2", "type": "VECTOR", "vectorDimensions": 16000}]}]}`},
		{"self relationship with required properties", `{"name": "s", "entities": [{"name": "Person", "fields": [{"name": "name", "type": "STRING"}]}],
			"relationships": [{"name": "KNOWS", "from": "Person", "to": "Person",
			  "properties": [{"name": "since", "type": "DATE", "required": true}, {"name": "kind", "type": "ENUM", "values": ["x"]}]}]}`},
		{"entity names that look like shared components", `{"name": "s", "entities": [
			{"name": "Error", "fields": [{"name": "code", "type": "STRING"}]},
			{"name": "Error_Input", "fields": [{"name": "x", "type": "STRING"}]}],
			"relationships": [{"name": "RAISES", "from": "Error", "to": "Error_Input"}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			info := schema.Info{ID: "0190f5d2-0000-7000-8000-000000000002", Name: "s", Version: 1, Definition: loadDef(t, c.def)}
			b, err := openapi.New("").OpenAPI(info)
			if err != nil {
				t.Fatal(err)
			}
			doc := load(t, b)
			for _, e := range info.Entities {
				for _, suffix := range []string{"", ".Input", ".Patch", ".Filter", ".Query", ".List", ".BatchCreate", ".BatchUpdate", ".BatchResult"} {
					if doc.Components.Schemas[e.Name+suffix] == nil {
						t.Errorf("component %s%s missing", e.Name, suffix)
					}
				}
			}
		})
	}
}

func TestShopPaths(t *testing.T) {
	doc := openapi.New("").Document(shopInfo(t))
	var got []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			got = append(got, method+" "+path)
		}
	}
	slices.Sort(got)
	want := []string{}
	for _, e := range []string{"Product", "Category", "User"} {
		base := "/api/v1/dynamic/" + e
		want = append(want,
			"GET "+base, "POST "+base, "GET "+base+"/{id}", "PUT "+base+"/{id}", "PATCH "+base+"/{id}", "DELETE "+base+"/{id}",
			"POST "+base+"/query", "POST "+base+"/aggregate", "POST "+base+"/batch", "PATCH "+base+"/batch", "DELETE "+base+"/batch")
	}
	want = append(want, "POST /api/v1/dynamic/Product/vector-search")
	// A file's download URL through the record, for the entity with a FILE field.
	want = append(want, "GET /api/v1/dynamic/Product/{id}/files/{field}/download-url")
	// Upsert, for the entities with a unique field.
	want = append(want, "POST /api/v1/dynamic/Category/upsert", "POST /api/v1/dynamic/User/upsert")
	for _, r := range []struct{ from, name string }{{"Product", "IN_CATEGORY"}, {"User", "FOLLOWS"}} {
		base := "/api/v1/dynamic/" + r.from + "/{id}/relationships/" + r.name
		want = append(want, "GET "+base, "POST "+base,
			"PATCH "+base+"/{targetId}", "DELETE "+base+"/{targetId}",
			"PATCH "+base+"/by-id/{relationshipId}", "DELETE "+base+"/by-id/{relationshipId}")
	}
	// From the target end: list, and the by-id operations.
	want = append(want, "GET /api/v1/dynamic/Category/{id}/relationships/IN_CATEGORY",
		"PATCH /api/v1/dynamic/Category/{id}/relationships/IN_CATEGORY/by-id/{relationshipId}",
		"DELETE /api/v1/dynamic/Category/{id}/relationships/IN_CATEGORY/by-id/{relationshipId}")
	// The webhook routes a tenant key manages its subscriptions with, its
	// delivery log, retry and replay, and the event types.
	want = append(want, "POST /api/v1/webhooks", "GET /api/v1/webhooks", "GET /api/v1/webhooks/{id}", "PATCH /api/v1/webhooks/{id}",
		"DELETE /api/v1/webhooks/{id}", "GET /api/v1/webhooks/{id}/deliveries", "POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/retry",
		"POST /api/v1/webhooks/{id}/replay", "GET /api/v1/webhooks/{id}/replays/{replayId}", "GET /api/v1/event-types")
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("operations:\n got %v\nwant %v", got, want)
	}
	ids := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.OperationID == "" {
				t.Errorf("%s %s has no operationId", method, path)
			}
			if prev, dup := ids[op.OperationID]; dup {
				t.Errorf("operationId %s used by %s and %s %s", op.OperationID, prev, method, path)
			}
			ids[op.OperationID] = method + " " + path
			if op.Extensions["x-dds-scope"] == nil {
				t.Errorf("%s %s does not name its scope", method, path)
			}
		}
	}
	if got := doc.Paths.Value("/api/v1/dynamic/Product/{id}").Get.Extensions["x-dds-scope"]; got != "entity:Product:read" {
		t.Errorf("GET Product scope = %v", got)
	}
	if got := doc.Paths.Value("/api/v1/dynamic/Product/{id}/relationships/IN_CATEGORY").Post.Extensions["x-dds-scope"]; got != "relationship:IN_CATEGORY:create" {
		t.Errorf("POST IN_CATEGORY scope = %v", got)
	}
	if doc.Paths.Value("/api/v1/dynamic/Category/vector-search") != nil {
		t.Error("vector search generated for an entity without VECTOR fields")
	}
	if doc.Security == nil || len(doc.Security) != 1 || doc.Components.SecuritySchemes["bearerAuth"].Value.Scheme != "bearer" {
		t.Error("bearer security is not required globally")
	}
}

// TestSchemasDescribeTheWireFormat checks the generated schemas against
// values the REST API accepts and returns, so a client validating with the
// document agrees with the server.
func TestSchemasDescribeTheWireFormat(t *testing.T) {
	b, err := openapi.New("").OpenAPI(shopInfo(t))
	if err != nil {
		t.Fatal(err)
	}
	doc := load(t, b)
	vec := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = 0.5
		}
		return out
	}
	record := map[string]any{
		"id": "0190f5d2-0000-7000-8000-00000000000a", "createdAt": "2026-01-02T03:04:05.123456Z", "updatedAt": "2026-01-02T03:04:05Z",
		"name": "Lamp", "price": 12.5, "stock": 3, "active": true, "tags": []any{"home"}, "releasedAt": "2026-01-02T03:04:05+01:00",
		"launchDate": "2026-01-02", "description": nil, "attributes": map[string]any{"color": "red"}, "status": "live",
		"manual": nil, "embedding": vec(384),
	}
	with := func(m map[string]any, k string, v any) map[string]any {
		c := map[string]any{}
		for kk, vv := range m {
			c[kk] = vv
		}
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	input := with(with(with(record, "id", nil), "createdAt", nil), "updatedAt", nil)
	cases := []struct {
		name      string
		component string
		value     any
		ok        bool
	}{
		{"record", "Product", record, true},
		{"record with nulls", "Product", with(record, "price", json.RawMessage("null")), true},
		{"record without id", "Product", with(record, "id", nil), false},
		{"input", "Product.Input", input, true},
		{"input without required name", "Product.Input", with(input, "name", nil), false},
		{"input with null required name", "Product.Input", with(input, "name", json.RawMessage("null")), false},
		{"input with unknown field", "Product.Input", with(input, "colour", "red"), false},
		{"input with long name", "Product.Input", with(input, "name", strings.Repeat("x", 201)), false},
		{"input with bad enum", "Product.Input", with(input, "status", "gone"), false},
		{"input with short vector", "Product.Input", with(input, "embedding", vec(383)), false},
		{"input with fractional stock", "Product.Input", with(input, "stock", 1.5), false},
		{"input with string price", "Product.Input", with(input, "price", "12"), false},
		{"input with bad date", "Product.Input", with(input, "launchDate", "2026-13-45"), false},
		{"patch with one field", "Product.Patch", map[string]any{"price": 3}, true},
		{"empty patch", "Product.Patch", map[string]any{}, true},
		{"filter", "Product.Filter", map[string]any{"price": map[string]any{"$gte": 10, "$lt": 20}, "status": "live",
			"$or": []any{map[string]any{"tags": map[string]any{"$contains": "sale"}}, map[string]any{"name": map[string]any{"$startsWith": "A"}}}}, true},
		{"filter on system fields", "Product.Filter", map[string]any{"createdAt": map[string]any{"$gt": "2026-01-01T00:00:00Z"}, "id": map[string]any{"$in": []any{"0190f5d2-0000-7000-8000-00000000000a"}}}, true},
		{"filter with unknown operator", "Product.Filter", map[string]any{"price": map[string]any{"$like": 1}}, false},
		{"filter with unknown field", "Product.Filter", map[string]any{"colour": "red"}, false},
		{"filter with $startsWith on a number", "Product.Filter", map[string]any{"price": map[string]any{"$startsWith": "1"}}, false},
		{"filter with $gt on a vector", "Product.Filter", map[string]any{"embedding": map[string]any{"$gt": 1}}, false},
		{"query", "Product.Query", map[string]any{"where": map[string]any{"active": true}, "search": "lamp", "select": []any{"name"},
			"orderBy": "price", "orderDirection": "DESC", "limit": 20, "offset": 40, "includeCount": true,
			"traverse": []any{map[string]any{"relationship": "IN_CATEGORY", "direction": "out", "select": []any{"name"}}}}, true},
		{"query ordered by a list", "Product.Query", map[string]any{"orderBy": "tags"}, false},
		{"query over the limit", "Product.Query", map[string]any{"limit": 1001}, false},
		{"list", "Product.List", map[string]any{"items": []any{record}, "count": 1}, true},
		{"batch create", "Product.BatchCreate", map[string]any{"items": []any{input, input}}, true},
		{"empty batch", "Product.BatchCreate", map[string]any{"items": []any{}}, false},
		{"batch update", "Product.BatchUpdate", map[string]any{"items": []any{map[string]any{"id": "0190f5d2-0000-7000-8000-00000000000a", "data": map[string]any{"stock": 1}}}}, true},
		{"batch delete", "dds.BatchDelete", map[string]any{"ids": []any{"0190f5d2-0000-7000-8000-00000000000a"}}, true},
		{"batch result", "Product.BatchResult", map[string]any{"successful": []any{}, "totalCount": 1, "successCount": 0, "failureCount": 1,
			"failed": []any{map[string]any{"index": 0, "item": input, "error": map[string]any{"code": "VALIDATION_ERROR", "message": "name: is required", "field": "name"}}},
			"stats":  map[string]any{"processingTimeMs": 1.5, "validationTimeMs": 0.1, "databaseTimeMs": 0}}, true},
		{"batch delete result", "Product.BatchResult", map[string]any{"successful": []any{}, "totalCount": 1, "successCount": 0, "failureCount": 1,
			"failed": []any{map[string]any{"index": 0, "item": "nope", "error": map[string]any{"code": "NOT_FOUND", "message": "Product \"nope\" not found"}}},
			"stats":  map[string]any{"processingTimeMs": 1, "validationTimeMs": 0, "databaseTimeMs": 0}}, true},
		{"edge", "IN_CATEGORY.Edge", map[string]any{"id": "0190f5d2-0000-7000-8000-00000000000c", "type": "IN_CATEGORY",
			"sourceId": "0190f5d2-0000-7000-8000-00000000000a", "targetId": "0190f5d2-0000-7000-8000-00000000000b",
			"properties": map[string]any{}, "createdAt": "2026-01-02T03:04:05Z"}, true},
		{"vector search", "Product.VectorSearch", map[string]any{"field": "embedding", "vector": vec(384), "topK": 5, "where": map[string]any{"active": true}}, true},
		{"vector search topK 101", "Product.VectorSearch", map[string]any{"field": "embedding", "vector": vec(384), "topK": 101}, false},
		{"vector search on a non-vector field", "Product.VectorSearch", map[string]any{"field": "price", "vector": vec(384)}, false},
		{"vector match", "Product.VectorMatch", map[string]any{"data": record, "score": 0.97}, true},
		{"error envelope", "dds.Error", map[string]any{"error": map[string]any{"code": "VALIDATION_ERROR", "message": "price: must be a number",
			"details": []any{map[string]any{"field": "price", "message": "must be a number"}}}}, true},
		{"error envelope with unknown code", "dds.Error", map[string]any{"error": map[string]any{"code": "OOPS", "message": "x"}}, false},
		{"relationship create", "IN_CATEGORY.Create", map[string]any{"targetId": "0190f5d2-0000-7000-8000-00000000000b", "properties": map[string]any{"position": 1}}, true},
		{"relationship create with unknown property", "IN_CATEGORY.Create", map[string]any{"targetId": "0190f5d2-0000-7000-8000-00000000000b", "properties": map[string]any{"pos": 1}}, false},
		{"relationship list item", "IN_CATEGORY.ItemOfProduct", map[string]any{
			"id": "0190f5d2-0000-7000-8000-00000000000b", "createdAt": "2026-01-02T03:04:05Z", "updatedAt": "2026-01-02T03:04:05Z", "name": "Lamps", "rank": nil,
			"_relationship": map[string]any{"id": "0190f5d2-0000-7000-8000-00000000000c", "type": "IN_CATEGORY", "direction": "out", "createdAt": "2026-01-02T03:04:05Z"},
			"properties":    map[string]any{"position": 2}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := doc.Components.Schemas[c.component]
			if s == nil {
				t.Fatalf("component %s missing", c.component)
			}
			// Round-trip through JSON so values have the types a decoder
			// produces (json.RawMessage("null") becomes nil).
			raw, _ := json.Marshal(c.value)
			var v any
			_ = json.Unmarshal(raw, &v)
			err := s.Value.VisitJSON(v, openapi3.EnableFormatValidation())
			if c.ok && err != nil {
				t.Errorf("rejected: %v", err)
			}
			if !c.ok && err == nil {
				t.Errorf("accepted %s", raw)
			}
		})
	}
}

// The record schema of an entity lists its required fields as required
// (besides the system fields); the schema of selected records (list, get,
// query, vector search, relationship lists, where `select` applies)
// requires only the id.
func TestRecordSchemasListRequiredFields(t *testing.T) {
	doc := openapi.New("").Document(shopInfo(t))
	req := func(name string) []string {
		s := doc.Components.Schemas[name]
		if s == nil || s.Value == nil {
			t.Fatalf("component %s missing", name)
		}
		r := slices.Clone(s.Value.Required)
		slices.Sort(r)
		return r
	}
	if got := req("Product"); !slices.Equal(got, []string{"createdAt", "id", "name", "updatedAt"}) {
		t.Errorf("Product required = %v", got)
	}
	if got := req("User"); !slices.Equal(got, []string{"createdAt", "email", "id", "updatedAt"}) {
		t.Errorf("User required = %v", got)
	}
	if got := req("Product.Selected"); !slices.Equal(got, []string{"id"}) {
		t.Errorf("Product.Selected required = %v", got)
	}
	items := doc.Components.Schemas["Product.List"].Value.Properties["items"].Value.Items.Ref
	if items != "#/components/schemas/Product.Selected" {
		t.Errorf("list items are %q, want the selected-record schema", items)
	}
}

package server_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
)

// writesSchema has a unique field to upsert on (Customer.email), one that
// is not unique (Customer.name), and a relationship with a property for
// nested writes.
var writesSchema = map[string]any{"name": "writes", "entities": []any{
	map[string]any{"name": "Customer", "fields": []any{
		map[string]any{"name": "email", "type": "STRING", "unique": true, "required": true},
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "tier", "type": "ENUM", "values": []string{"basic", "gold"}, "default": "basic"},
		map[string]any{"name": "visits", "type": "INTEGER"},
	}},
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "sku", "type": "STRING", "unique": true},
	}},
	map[string]any{"name": "Category", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true},
	}},
}, "relationships": []any{
	map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category", "fromField": "categories", "toField": "products",
		"properties": []any{map[string]any{"name": "rank", "type": "INTEGER"}}},
}}

// writesFixture is a tenant with writesSchema.
type writesFixture struct {
	app               *testenv.App
	tenantID, key     string
	gqlPath, restBase string
}

func newWritesFixture(t *testing.T) *writesFixture {
	t.Helper()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, writesSchema)
	return &writesFixture{app: app, tenantID: tenantID, key: key, gqlPath: "/api/v1/dynamic-gql/" + tenantID, restBase: "/api/v1/dynamic/"}
}

// gql runs a GraphQL operation and returns data and the first error's
// message and extensions ("" when none).
func (f *writesFixture) gql(t *testing.T, q string, vars map[string]any) (map[string]any, string, map[string]any) {
	t.Helper()
	r := f.app.Must(t, 200, "POST", f.gqlPath, f.key, map[string]any{"query": q, "variables": vars}).JSON(t)
	data, _ := r["data"].(map[string]any)
	if errs, ok := r["errors"].([]any); ok && len(errs) > 0 {
		e := errs[0].(map[string]any)
		ext, _ := e["extensions"].(map[string]any)
		return data, e["message"].(string), ext
	}
	return data, "", nil
}

// count counts the tenant's records of entity (or edges of a relationship
// table) and its events of type typ, straight from Postgres, so a test can
// show that a refused write wrote nothing.
func (f *writesFixture) count(t *testing.T, table string) int {
	t.Helper()
	var n int
	var pg string
	if err := f.app.Server.DB.GetContext(t.Context(), &pg, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1 AND active`, f.tenantID); err != nil {
		t.Fatal(err)
	}
	if err := f.app.Server.DB.GetContext(t.Context(), &n, fmt.Sprintf(`SELECT count(*) FROM %q.%q`, pg, table)); err != nil {
		t.Fatal(err)
	}
	return n
}

func (f *writesFixture) events(t *testing.T) map[string]int {
	t.Helper()
	var rows []struct {
		Type string `db:"type"`
		N    int    `db:"n"`
	}
	if err := f.app.Server.DB.SelectContext(t.Context(), &rows, `SELECT type, count(*) AS n FROM dds.events WHERE tenant_id = $1 GROUP BY type`, f.tenantID); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, r := range rows {
		out[r.Type] = r.N
	}
	return out
}

// bodyErrorField is the field (or path) a 400's envelope names first: the
// error's first detail, or for a rejected batch its first failure's field.
func bodyErrorField(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		Error struct {
			Details []struct{ Field string } `json:"details"`
		} `json:"error"`
		Failed []struct {
			Error struct{ Field string } `json:"error"`
		} `json:"failed"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("not a JSON body: %s", body)
	}
	if len(env.Error.Details) > 0 {
		return env.Error.Details[0].Field
	}
	if len(env.Failed) > 0 {
		return env.Failed[0].Error.Field
	}
	return ""
}

// Upsert through REST and GraphQL: rows are created or updated by a unique
// field in one statement, each with the right event; the fields an update
// changes are the ones sent (or named in update); bad requests are 400s
// naming the field, and write nothing.
func TestUpsertThroughRESTAndGraphQL(t *testing.T) {
	t.Parallel()
	f := newWritesFixture(t)
	up := "/api/v1/dynamic/Customer/upsert"
	var first struct {
		Successful   []map[string]any `json:"successful"`
		SuccessCount int              `json:"successCount"`
		CreatedCount int              `json:"createdCount"`
		UpdatedCount int              `json:"updatedCount"`
	}
	f.app.Must(t, 200, "POST", up, f.key, map[string]any{"onConflict": "email", "items": []any{
		map[string]any{"email": "a@x.io", "name": "Ann", "visits": 1},
		map[string]any{"email": "b@x.io", "name": "Bob", "visits": 1, "tier": "gold"},
	}}).Decode(t, &first)
	if first.SuccessCount != 2 || first.CreatedCount != 2 || first.UpdatedCount != 0 || first.Successful[0]["email"] != "a@x.io" || first.Successful[1]["tier"] != "gold" {
		t.Fatalf("first upsert: %+v", first)
	}
	annID := first.Successful[0]["id"]

	// b@x.io is updated (only the fields sent: tier keeps "gold"), c@x.io
	// created; the result keeps the items' order.
	var second struct {
		Successful                 []map[string]any `json:"successful"`
		CreatedCount, UpdatedCount int
	}
	f.app.Must(t, 200, "POST", up, f.key, map[string]any{"onConflict": "email", "items": []any{
		map[string]any{"email": "c@x.io", "name": "Cy", "visits": 7},
		map[string]any{"email": "b@x.io", "name": "Bobby", "visits": 2},
	}}).Decode(t, &second)
	if second.CreatedCount != 1 || second.UpdatedCount != 1 || second.Successful[0]["email"] != "c@x.io" ||
		second.Successful[1]["name"] != "Bobby" || second.Successful[1]["tier"] != "gold" || second.Successful[1]["id"] != first.Successful[1]["id"] {
		t.Fatalf("second upsert: %+v", second)
	}
	if ev := f.events(t); ev["entity.created"] != 3 || ev["entity.updated"] != 1 {
		t.Fatalf("events after two upserts: %v, want 3 created and 1 updated", ev)
	}

	// Items that send different fields (two statements, one transaction):
	// each update changes only what its item sends, so Bob keeps his
	// visits; the result keeps the items' order.
	var mixed struct{ Successful []map[string]any }
	f.app.Must(t, 200, "POST", up, f.key, map[string]any{"onConflict": "email", "items": []any{
		map[string]any{"email": "b@x.io", "name": "Bob"},
		map[string]any{"email": "c@x.io", "name": "Cy", "visits": 8},
	}}).Decode(t, &mixed)
	if mixed.Successful[0]["visits"] != float64(2) || mixed.Successful[0]["name"] != "Bob" || mixed.Successful[1]["visits"] != float64(8) {
		t.Fatalf("an update changed fields its item did not send, or the order is lost: %+v", mixed.Successful)
	}

	// "update" limits what an update changes: visits changes, name not.
	f.app.Must(t, 200, "POST", up, f.key, map[string]any{"onConflict": "email", "update": []string{"visits"}, "items": []any{
		map[string]any{"email": "a@x.io", "name": "Ignored", "visits": 5},
	}})
	got := f.app.Must(t, 200, "GET", "/api/v1/dynamic/Customer/"+annID.(string), f.key, nil).JSON(t)
	if got["name"] != "Ann" || got["visits"] != float64(5) {
		t.Fatalf("update [visits] changed %v", got)
	}

	// GraphQL: upsertCustomer updates by email; batchUpsertCustomer mixes.
	d, msg, _ := f.gql(t, `mutation { upsertCustomer(input: {email: "a@x.io", name: "Anna"}, onConflict: {field: "email"}) { id name visits } }`, nil)
	if msg != "" || d["upsertCustomer"].(map[string]any)["id"] != annID || d["upsertCustomer"].(map[string]any)["name"] != "Anna" ||
		d["upsertCustomer"].(map[string]any)["visits"] != float64(5) {
		t.Fatalf("upsertCustomer: %v %s", d, msg)
	}
	d, msg, _ = f.gql(t, `mutation($in: [CustomerCreateInput!]!) { batchUpsertCustomer(input: $in, onConflict: {field: "email", update: ["name"]}) { successCount failureCount successful { email name } } }`,
		map[string]any{"in": []any{map[string]any{"email": "d@x.io", "name": "Di"}, map[string]any{"email": "c@x.io", "name": "Cyd"}}})
	res, _ := d["batchUpsertCustomer"].(map[string]any)
	if msg != "" || res["successCount"] != float64(2) || res["successful"].([]any)[1].(map[string]any)["name"] != "Cyd" {
		t.Fatalf("batchUpsertCustomer: %v %s", d, msg)
	}
	if ev := f.events(t); ev["entity.created"] != 4 || ev["entity.updated"] != 6 {
		t.Fatalf("events after every upsert: %v, want 4 created and 4 updated", ev)
	}

	// Bad input: a 400 naming the field, nothing written.
	before, evBefore := f.count(t, "Customer"), f.events(t)
	for _, tc := range []struct {
		name, body, field string
	}{
		{"non-unique field", `{"onConflict": "name", "items": [{"email": "z@x.io", "name": "Z"}]}`, "onConflict"},
		{"unknown field", `{"onConflict": "phone", "items": [{"email": "z@x.io", "name": "Z"}]}`, "onConflict"},
		{"missing onConflict", `{"items": [{"email": "z@x.io", "name": "Z"}]}`, "onConflict"},
		{"unknown update field", `{"onConflict": "email", "update": ["nope"], "items": [{"email": "z@x.io", "name": "Z"}]}`, "update[0]"},
		{"update names the key", `{"onConflict": "email", "update": ["email"], "items": [{"email": "z@x.io", "name": "Z"}]}`, "update[0]"},
		{"key missing in an item", `{"onConflict": "email", "items": [{"email": "z@x.io", "name": "Z"}, {"name": "Y"}]}`, "email"},
		{"key twice", `{"onConflict": "email", "items": [{"email": "z@x.io", "name": "Z"}, {"email": "z@x.io", "name": "Y"}]}`, "email"},
		{"bad value in a later item", `{"onConflict": "email", "items": [{"email": "z@x.io", "name": "Z", "visits": 1}, {"email": "a@x.io", "name": "Y", "tier": "platinum"}]}`, "tier"},
		{"bad value", `{"onConflict": "email", "items": [{"email": "z@x.io", "name": "Z", "visits": "many"}]}`, "visits"},
		{"unknown member", `{"onConflict": "email", "items": [], "mode": "x"}`, "mode"},
		{"empty", `{"onConflict": "email", "items": []}`, "items"},
	} {
		r := f.app.Do(t, "POST", up, f.key, tc.body)
		if r.Status != 400 || bodyErrorField(t, r.Body) != tc.field || !strings.Contains(string(r.Body), tc.field) {
			t.Errorf("%s: status %d, want 400 naming %s: %s", tc.name, r.Status, tc.field, r.Body)
		}
	}
	for _, tc := range []struct{ name, q, want string }{
		{"non-unique field", `mutation { upsertCustomer(input: {email: "z@x.io", name: "Z"}, onConflict: {field: "name"}) { id } }`, "onConflict"},
		{"unknown field", `mutation { batchUpsertCustomer(input: [{email: "z@x.io", name: "Z"}], onConflict: {field: "phone"}) { successCount } }`, "onConflict"},
	} {
		_, msg, ext := f.gql(t, tc.q, nil)
		if !strings.Contains(msg, tc.want) || ext["code"] != "VALIDATION_ERROR" {
			t.Errorf("GraphQL %s: %q %v, want a VALIDATION_ERROR naming %s", tc.name, msg, ext, tc.want)
		}
	}
	if n, ev := f.count(t, "Customer"), f.events(t); n != before || fmt.Sprint(ev) != fmt.Sprint(evBefore) {
		t.Fatalf("refused upserts wrote: %d records (was %d), events %v (was %v)", n, before, ev, evBefore)
	}

	// Scopes: an upsert needs create and update.
	createOnly := f.key2(t, []string{"entity:Customer:create", "entity:Customer:read"})
	if r := f.app.Do(t, "POST", up, createOnly, `{"onConflict": "email", "items": [{"email": "q@x.io", "name": "Q"}]}`); r.Status != 403 || !strings.Contains(string(r.Body), "entity:Customer:update") {
		t.Fatalf("upsert with create only: %d %s", r.Status, r.Body)
	}
}

// key2 makes an API key of the fixture's tenant with scopes.
func (f *writesFixture) key2(t *testing.T, scopes []string) string {
	t.Helper()
	r := f.app.Must(t, 201, "POST", "/api/v1/api-keys", f.key, map[string]any{"name": t.Name(), "scopes": scopes}).JSON(t)
	k, _ := r["key"].(string)
	if k == "" {
		t.Fatalf("api key response has no key: %v", r)
	}
	return k
}

// Nested writes through REST and GraphQL: a create (single or batch)
// connects existing records and creates related ones, with edge
// properties, in one statement with every event; a bad part is a 400
// naming its path, and nothing is written.
func TestNestedWritesThroughRESTAndGraphQL(t *testing.T) {
	t.Parallel()
	f := newWritesFixture(t)
	c1 := f.app.Must(t, 201, "POST", "/api/v1/dynamic/Category", f.key, map[string]any{"title": "desks"}).JSON(t)["id"].(string)
	edges := func(t *testing.T, product string) []map[string]any {
		t.Helper()
		var res struct{ Items []map[string]any }
		f.app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+product+"/relationships/IN_CATEGORY?orderBy=title", f.key, nil).Decode(t, &res)
		return res.Items
	}
	ev0 := f.events(t)

	// REST single create: one connect with a property, one nested create.
	p := f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product", f.key, map[string]any{"name": "oak desk", "sku": "D1",
		"categories": map[string]any{
			"connect": []any{map[string]any{"id": c1, "properties": map[string]any{"rank": 1}}},
			"create":  []any{map[string]any{"title": "oak", "properties": map[string]any{"rank": 2}}},
		}}).JSON(t)
	if p["name"] != "oak desk" || p["categories"] != nil {
		t.Fatalf("created product: %v", p)
	}
	got := edges(t, p["id"].(string))
	if len(got) != 2 || got[0]["title"] != "desks" || got[0]["properties"].(map[string]any)["rank"] != float64(1) ||
		got[1]["title"] != "oak" || got[1]["properties"].(map[string]any)["rank"] != float64(2) {
		t.Fatalf("the product's categories: %v", got)
	}
	ev := f.events(t)
	if ev["entity.created"]-ev0["entity.created"] != 2 || ev["relationship.created"]-ev0["relationship.created"] != 2 {
		t.Fatalf("events of a nested create: %v (before %v): want 2 entity.created, 2 relationship.created", ev, ev0)
	}

	// From the target's side (toField): the edges go from the new products.
	cat := f.app.Must(t, 201, "POST", "/api/v1/dynamic/Category", f.key, map[string]any{"title": "chairs",
		"products": map[string]any{"create": []any{map[string]any{"name": "stool"}}, "connect": []any{map[string]any{"id": p["id"]}}}}).JSON(t)
	var back struct{ Items []map[string]any }
	f.app.Must(t, 200, "GET", "/api/v1/dynamic/Category/"+cat["id"].(string)+"/relationships/IN_CATEGORY?direction=in&orderBy=name", f.key, nil).Decode(t, &back)
	if len(back.Items) != 2 || back.Items[0]["name"] != "oak desk" || back.Items[1]["name"] != "stool" {
		t.Fatalf("products of a category created with nested writes: %v", back.Items)
	}

	// REST batch: each item with its own nested writes.
	var batch struct {
		SuccessCount int
		Successful   []map[string]any
	}
	f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": []any{
		map[string]any{"name": "a", "categories": map[string]any{"connect": []any{map[string]any{"id": c1}}}},
		map[string]any{"name": "b"},
		map[string]any{"name": "c", "IN_CATEGORY": map[string]any{"create": []any{map[string]any{"title": "cc"}}}},
	}}).Decode(t, &batch)
	if batch.SuccessCount != 3 || batch.Successful[0]["name"] != "a" || batch.Successful[2]["name"] != "c" {
		t.Fatalf("batch with nested writes: %+v", batch)
	}
	if e := edges(t, batch.Successful[2]["id"].(string)); len(e) != 1 || e[0]["title"] != "cc" {
		t.Fatalf("batch item c's categories: %v", e)
	}

	// GraphQL create and batch create, read back through the relationship field.
	d, msg, _ := f.gql(t, `mutation($c: ID!) { createProduct(input: {name: "gq", categories: {connect: [{id: $c, properties: {rank: 3}}], create: [{title: "gql"}]}}) { name categories(orderBy: [{field: "title"}]) { title } } }`,
		map[string]any{"c": c1})
	if msg != "" || fmt.Sprint(d["createProduct"]) != "map[categories:[map[title:desks] map[title:gql]] name:gq]" {
		t.Fatalf("createProduct with nested writes: %v %s", d, msg)
	}
	d, msg, _ = f.gql(t, `mutation($c: ID!) { batchCreateProduct(input: [{name: "g1", categories: {connect: [{id: $c}]}}, {name: "g2", categories: {create: [{title: "g2c"}]}}]) { successCount failureCount } }`,
		map[string]any{"c": c1})
	if msg != "" || d["batchCreateProduct"].(map[string]any)["successCount"] != float64(2) {
		t.Fatalf("batchCreateProduct with nested writes: %v %s", d, msg)
	}

	// Bad input: 400 naming the path; nothing written.
	products, categories, links, evBefore := f.count(t, "Product"), f.count(t, "Category"), f.count(t, "IN_CATEGORY"), f.events(t)
	missing := "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"
	for _, tc := range []struct {
		name, path string
		body       any
		field      string
	}{
		{"unknown relationship", "/api/v1/dynamic/Product", map[string]any{"name": "x", "tags": map[string]any{"connect": []any{map[string]any{"id": c1}}}}, "tags"},
		{"missing id", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"create": []any{map[string]any{"title": "t"}}, "connect": []any{map[string]any{"id": c1}, map[string]any{"id": missing}}}}, "categories.connect[1].id"},
		{"malformed id", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"connect": []any{map[string]any{"id": "nope"}}}}, "categories.connect[0].id"},
		{"nested create invalid", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"create": []any{map[string]any{"title": "a"}, map[string]any{"title": "b"}, map[string]any{"title": 7}}}}, "categories.create[2].title"},
		{"nested create missing field", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"create": []any{map[string]any{}}}}, "categories.create[0].title"},
		{"bad edge property", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"connect": []any{map[string]any{"id": c1, "properties": map[string]any{"rank": "high"}}}}}, "categories.connect[0].properties.rank"},
		{"unknown edge property", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"create": []any{map[string]any{"title": "t", "properties": map[string]any{"weight": 1}}}}}, "categories.create[0].properties.weight"},
		{"unknown member", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"link": []any{}}}, "categories.link"},
		{"not an object", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": []any{c1}}, "categories"},
		{"connect not an array", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{"connect": c1}}, "categories.connect"},
		{"parent invalid", "/api/v1/dynamic/Product", map[string]any{"categories": map[string]any{"connect": []any{map[string]any{"id": c1}}}}, "name"},
		{"batch item with a missing id", "/api/v1/dynamic/Product/batch", map[string]any{"items": []any{
			map[string]any{"name": "ok", "categories": map[string]any{"create": []any{map[string]any{"title": "t"}}}},
			map[string]any{"name": "bad", "categories": map[string]any{"connect": []any{map[string]any{"id": missing}}}},
		}}, "categories.connect[0].id"},
		{"batch item with an unknown relationship", "/api/v1/dynamic/Product/batch", map[string]any{"items": []any{
			map[string]any{"name": "ok", "categories": map[string]any{"connect": []any{map[string]any{"id": c1}}}},
			map[string]any{"name": "bad", "labels": map[string]any{"create": []any{}}},
		}}, "labels"},
	} {
		r := f.app.Do(t, "POST", tc.path, f.key, tc.body)
		if r.Status != 400 || bodyErrorField(t, r.Body) != tc.field {
			t.Errorf("%s: status %d, want 400 naming %s: %s", tc.name, r.Status, tc.field, r.Body)
		}
	}
	for _, tc := range []struct{ name, q, want string }{
		{"missing id", `mutation { createProduct(input: {name: "x", categories: {create: [{title: "t"}], connect: [{id: "` + missing + `"}]}}) { id } }`, "categories.connect[0].id"},
	} {
		_, msg, ext := f.gql(t, tc.q, nil)
		if !strings.Contains(msg, tc.want) || ext["code"] != "VALIDATION_ERROR" {
			t.Errorf("GraphQL %s: %q %v, want a VALIDATION_ERROR naming %s", tc.name, msg, ext, tc.want)
		}
	}
	d, msg, _ = f.gql(t, `mutation { batchCreateProduct(input: [{name: "x"}, {name: "y", categories: {create: [{title: "t"}], connect: [{id: "nope"}]}}]) { successCount failed { index error { field } } } }`, nil)
	if res := d["batchCreateProduct"].(map[string]any); msg != "" || res["successCount"] != float64(0) ||
		fmt.Sprint(res["failed"]) != "[map[error:map[field:categories.connect[0].id] index:1]]" {
		t.Errorf("GraphQL batch with a malformed connect id: %v %s", d, msg)
	}
	// GraphQL validates the input types: an unknown relationship field is
	// refused before execution, naming it.
	if _, msg, _ := f.gql(t, `mutation { createProduct(input: {name: "x", tags: {connect: []}}) { id } }`, nil); !strings.Contains(msg, "tags") {
		t.Errorf("GraphQL unknown relationship field: %q", msg)
	}
	if p, c, l, ev := f.count(t, "Product"), f.count(t, "Category"), f.count(t, "IN_CATEGORY"), f.events(t); p != products || c != categories || l != links || fmt.Sprint(ev) != fmt.Sprint(evBefore) {
		t.Fatalf("refused nested writes wrote: products %d→%d, categories %d→%d, edges %d→%d, events %v→%v", products, p, categories, c, links, l, evBefore, ev)
	}

	// Scopes: the relationship's create scope, and the far entity's
	// create scope for nested creates.
	noRel := f.key2(t, []string{"entity:Product:create"})
	if r := f.app.Do(t, "POST", "/api/v1/dynamic/Product", noRel, map[string]any{"name": "x", "categories": map[string]any{"connect": []any{map[string]any{"id": c1}}}}); r.Status != 403 || !strings.Contains(string(r.Body), "relationship:IN_CATEGORY:create") {
		t.Errorf("nested connect without the relationship scope: %d %s", r.Status, r.Body)
	}
	noCat := f.key2(t, []string{"entity:Product:create", "relationship:IN_CATEGORY:create"})
	f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product", noCat, map[string]any{"name": "x", "categories": map[string]any{"connect": []any{map[string]any{"id": c1}}}})
	if r := f.app.Do(t, "POST", "/api/v1/dynamic/Product", noCat, map[string]any{"name": "y", "categories": map[string]any{"create": []any{map[string]any{"title": "t"}}}}); r.Status != 403 || !strings.Contains(string(r.Body), "entity:Category:create") {
		t.Errorf("nested create without the far entity's create scope: %d %s", r.Status, r.Body)
	}
}

// Subscribers tell an upsert's creates from its updates: one upsert that
// creates one customer and updates another is one customerCreated and one
// customerUpdated message, each with its record.
func TestUpsertEventsReachSubscriptions(t *testing.T) {
	t.Parallel()
	f := newWritesFixture(t)
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Customer/upsert", f.key, map[string]any{"onConflict": "email", "items": []any{
		map[string]any{"email": "old@x.io", "name": "Old"}}})
	c := openSocket(t, f.app, f.key)
	for id, q := range map[string]string{"c": `subscription { customerCreated { email name } }`, "u": `subscription { customerUpdated { email name } }`} {
		if err := c.WriteJSON(map[string]any{"id": id, "type": "subscribe", "payload": map[string]any{"query": q}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.WriteJSON(map[string]any{"type": "ping"}); err != nil { // answered once both subscriptions are set up
		t.Fatal(err)
	}
	read := func() map[string]any {
		t.Helper()
		var m map[string]any
		if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := c.ReadJSON(&m); err != nil {
			t.Fatalf("read: %v", err)
		}
		return m
	}
	if m := read(); m["type"] != "pong" {
		t.Fatalf("want pong, got %v", m)
	}
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Customer/upsert", f.key, map[string]any{"onConflict": "email", "items": []any{
		map[string]any{"email": "new@x.io", "name": "New"}, map[string]any{"email": "old@x.io", "name": "Older"}}})
	got := map[string]string{}
	for range 2 {
		m := read()
		b, _ := json.Marshal(m["payload"].(map[string]any)["data"]) // extensions carry the event's cursor
		got[fmt.Sprint(m["id"])] = string(b)
	}
	if got["c"] != `{"customerCreated":{"email":"new@x.io","name":"New"}}` || got["u"] != `{"customerUpdated":{"email":"old@x.io","name":"Older"}}` {
		t.Fatalf("subscription messages: %v", got)
	}
}

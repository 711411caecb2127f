package graphql

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/dds-project/dds/graphql/model/modeltest"
)

func TestMutations(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	d := e.gql(t, s.tenant, s.key, `mutation($in: ProductCreateInput!) { p: createProduct(input: $in) { __typename name stock tags status embedding id } }`,
		map[string]any{"in": map[string]any{"name": "Durian", "tags": []string{"smelly"}, "status": "draft", "embedding": []float64{1, 0, 0}}}).ok(t)
	p := d["p"].(map[string]any)
	id := p["id"].(string)
	delete(p, "id")
	jsonEq(t, p, `{"__typename": "Product", "name": "Durian", "stock": 0, "tags": ["smelly"], "status": "draft", "embedding": [1, 0, 0]}`)

	// Validation: REST semantics, errors with field details.
	r := e.gql(t, s.tenant, s.key, `mutation { createProduct(input: {name: "x", embedding: [1, 2]}) { id } }`, nil)
	if r.code(0) != "VALIDATION_ERROR" || r.Data != nil {
		t.Errorf("invalid vector: %s", r.Body)
	}
	d = e.gql(t, s.tenant, s.key, fmt.Sprintf(`mutation { updateProduct(id: %q, input: {price: 9.5, active: null}) { name price active } }`, id), nil).ok(t)
	jsonEq(t, d, `{"updateProduct": {"name": "Durian", "price": 9.5, "active": null}}`)

	// A mutation selecting relationship fields reads them after the write.
	d = e.gql(t, s.tenant, s.key, fmt.Sprintf(`mutation { updateProduct(id: %q, input: {stock: 1}) { stock categories { name } } }`, s.p[0]), nil).ok(t)
	jsonEq(t, d, `{"updateProduct": {"stock": 1, "categories": [{"name": "Fruit"}]}}`)

	d = e.gql(t, s.tenant, s.key, fmt.Sprintf(`mutation { deleteProduct(id: %q) { name } }`, id), nil).ok(t)
	jsonEq(t, d, `{"deleteProduct": {"name": "Durian"}}`)
	r = e.gql(t, s.tenant, s.key, fmt.Sprintf(`mutation { deleteProduct(id: %q) { name } }`, id), nil)
	if r.code(0) != "NOT_FOUND" {
		t.Errorf("second delete: %s", r.Body)
	}

	// Every write left its event in the outbox, in order.
	var types []string
	if err := e.DB.Select(&types, `SELECT type FROM dds.events WHERE tenant_id = $1 AND entity_id = $2 ORDER BY seq`, s.tenant, id); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(types) != "[entity.created entity.updated entity.deleted]" {
		t.Errorf("events: %v", types)
	}
}

func TestVectorSearch(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	tenant, key := e.tenantWith(t, modeltest.Def(t, "shop.json"))
	e.create(t, tenant, "Product", map[string]any{"name": "x", "embedding": []float64{1, 0, 0}, "stock": 1})
	e.create(t, tenant, "Product", map[string]any{"name": "y", "embedding": []float64{0, 1, 0}, "stock": 2})
	e.create(t, tenant, "Product", map[string]any{"name": "z", "embedding": []float64{0.9, 0.1, 0}, "stock": 3})
	d := e.gql(t, tenant, key, `{ productVectorSearch(input: {field: "embedding", vector: [1, 0, 0], topK: 2}) { score data { name } } }`, nil).ok(t)
	res := d["productVectorSearch"].([]any)
	if len(res) != 2 || res[0].(map[string]any)["score"].(float64) < 0.999 {
		t.Fatalf("%v", res)
	}
	jsonEq(t, res[0].(map[string]any)["data"], `{"name": "x"}`)
	jsonEq(t, res[1].(map[string]any)["data"], `{"name": "z"}`)
	d = e.gql(t, tenant, key, `{ productVectorSearch(input: {field: "embedding", vector: [1, 0, 0], where: {stock: {gt: 1}}}) { data { name } } }`, nil).ok(t)
	jsonEq(t, d, `{"productVectorSearch": [{"data": {"name": "z"}}, {"data": {"name": "y"}}]}`)
	r := e.gql(t, tenant, key, `{ productVectorSearch(input: {field: "embedding", vector: [1, 0]}) { score } }`, nil)
	if r.code(0) != "VALIDATION_ERROR" {
		t.Errorf("dimension mismatch: %s", r.Body)
	}
	// A search's own HNSW candidate list size: topK to 1000.
	d = e.gql(t, tenant, key, `{ productVectorSearch(input: {field: "embedding", vector: [1, 0, 0], topK: 2, efSearch: 500}) { data { name } } }`, nil).ok(t)
	jsonEq(t, d, `{"productVectorSearch": [{"data": {"name": "x"}}, {"data": {"name": "z"}}]}`)
	for _, ef := range []string{"0", "1", "1001"} {
		r := e.gql(t, tenant, key, `{ productVectorSearch(input: {field: "embedding", vector: [1, 0, 0], topK: 2, efSearch: `+ef+`}) { score } }`, nil)
		if r.code(0) != "VALIDATION_ERROR" || !bytes.Contains(r.Body, []byte("efSearch")) {
			t.Errorf("efSearch %s: %s", ef, r.Body)
		}
	}
}

func TestBatchMutations(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	tenant, key := e.tenantWith(t, modeltest.Def(t, "shop.json"))
	d := e.gql(t, tenant, key, `mutation { batchCreateProduct(input: [{name: "a", stock: 1}, {name: "b"}]) {
	  successful { id name stock } failed { index } totalCount successCount failureCount } }`, nil).ok(t)
	r := d["batchCreateProduct"].(map[string]any)
	if r["successCount"].(float64) != 2 || r["failureCount"].(float64) != 0 || len(r["successful"].([]any)) != 2 {
		t.Fatalf("%v", r)
	}
	ids := []any{}
	for _, s := range r["successful"].([]any) {
		ids = append(ids, s.(map[string]any)["id"])
	}
	// One invalid item rejects the whole batch: nothing is written.
	d = e.gql(t, tenant, key, `mutation { batchCreateProduct(input: [{name: "c"}, {name: "d", embedding: [1]}]) {
	  successful { id } failed { index item error { code message field } } successCount failureCount } }`, nil).ok(t)
	r = d["batchCreateProduct"].(map[string]any)
	f := r["failed"].([]any)
	if r["successCount"].(float64) != 0 || len(f) != 1 || f[0].(map[string]any)["index"].(float64) != 1 ||
		f[0].(map[string]any)["error"].(map[string]any)["field"] != "embedding" || f[0].(map[string]any)["error"].(map[string]any)["code"] != "VALIDATION_ERROR" {
		t.Errorf("rejected batch: %v", r)
	}
	d = e.gql(t, tenant, key, `mutation($items: [ProductBatchUpdateInput!]!) { batchUpdateProduct(input: $items) { successful { name stock } successCount } }`,
		map[string]any{"items": []any{map[string]any{"id": ids[0], "data": map[string]any{"stock": 7}}}}).ok(t)
	jsonEq(t, d, `{"batchUpdateProduct": {"successful": [{"name": "a", "stock": 7}], "successCount": 1}}`)
	d = e.gql(t, tenant, key, `mutation($ids: [ID!]!) { batchDeleteProduct(ids: $ids) { successCount } }`, map[string]any{"ids": ids}).ok(t)
	jsonEq(t, d, `{"batchDeleteProduct": {"successCount": 2}}`)
	d = e.gql(t, tenant, key, `{ productsCount }`, nil).ok(t)
	jsonEq(t, d, `{"productsCount": 0}`)
	var n int
	if err := e.DB.Get(&n, `SELECT count(*) FROM dds.events WHERE tenant_id = $1`, tenant); err != nil {
		t.Fatal(err)
	}
	if n != 5 { // 2 created, 1 updated, 2 deleted
		t.Errorf("%d events, want 5", n)
	}
}

func TestEdgeMutations(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	tenant, key := e.tenantWith(t, modeltest.Def(t, "shop.json"))
	u := e.create(t, tenant, "User", map[string]any{"email": "a@x"})
	g := e.create(t, tenant, "Group", map[string]any{"title": "admins"})
	d := e.gql(t, tenant, key, fmt.Sprintf(`mutation { createUserGroupsMemberOfRelationship(from: %q, to: %q, properties: {role: owner}) { id from to properties { role since } } }`, u, g), nil).ok(t)
	edge := d["createUserGroupsMemberOfRelationship"].(map[string]any)
	id := edge["id"].(string)
	if edge["from"] != u || edge["to"] != g {
		t.Errorf("%v", edge)
	}
	jsonEq(t, edge["properties"], `{"role": "owner", "since": null}`)
	d = e.gql(t, tenant, key, fmt.Sprintf(`mutation { updateUserGroupsMemberOfRelationshipById(id: %q, properties: {role: member, since: "2024-05-01T10:00:00Z"}) { properties { role since } } }`, id), nil).ok(t)
	jsonEq(t, d, `{"updateUserGroupsMemberOfRelationshipById": {"properties": {"role": "member", "since": "2024-05-01T10:00:00Z"}}}`)
	d = e.gql(t, tenant, key, fmt.Sprintf(`{ user(id: %q) { groupsConnection(edgeWhere: {role: {equals: member}}) { edges { id properties { role } node { title } } } } }`, u), nil).ok(t)
	jsonEq(t, d, fmt.Sprintf(`{"user": {"groupsConnection": {"edges": [{"id": %q, "properties": {"role": "member"}, "node": {"title": "admins"}}]}}}`, id))
	d = e.gql(t, tenant, key, fmt.Sprintf(`mutation { deleteUserGroupsMemberOfRelationshipById(id: %q) { id from to } }`, id), nil).ok(t)
	jsonEq(t, d, fmt.Sprintf(`{"deleteUserGroupsMemberOfRelationshipById": {"id": %q, "from": %q, "to": %q}}`, id, u, g))
	r := e.gql(t, tenant, key, fmt.Sprintf(`mutation { deleteUserGroupsMemberOfRelationshipById(id: %q) { id } }`, id), nil)
	if r.code(0) != "NOT_FOUND" {
		t.Errorf("second delete: %s", r.Body)
	}
	reader := e.key(t, tenant, "entity:*:*", "relationship:MEMBER_OF:read")
	r = e.gql(t, tenant, reader, fmt.Sprintf(`mutation { createUserGroupsMemberOfRelationship(from: %q, to: %q) { id } }`, u, g), nil)
	if r.code(0) != "GRAPHQL_VALIDATION_FAILED" { // not in this key's schema
		t.Errorf("edge create without scope: %s", r.Body)
	}
}

package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// shop is the schema of the query-surface scenarios: products (soft
// delete) in categories (soft delete, an edge property), with reviews
// (soft delete), and the field types aggregates refuse (JSON, VECTOR).
func shop() map[string]any {
	return map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "softDelete": true, "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "stock", "type": "INTEGER"},
			map[string]any{"name": "status", "type": "ENUM", "values": []string{"draft", "live"}},
			map[string]any{"name": "releasedAt", "type": "TIMESTAMP"},
			map[string]any{"name": "meta", "type": "JSON"},
			map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 3},
		}},
		map[string]any{"name": "Category", "softDelete": true, "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "required": true},
		}},
		map[string]any{"name": "Review", "softDelete": true, "fields": []any{
			map[string]any{"name": "rating", "type": "INTEGER", "required": true},
			map[string]any{"name": "body", "type": "STRING"},
		}},
	}, "relationships": []any{
		map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category", "fromField": "categories", "toField": "products",
			"properties": []any{map[string]any{"name": "rank", "type": "INTEGER"}}},
		map[string]any{"name": "HAS_REVIEW", "from": "Product", "to": "Review", "fromField": "reviews", "toField": "product"},
	}}
}

// errorField is the path a 400's envelope names first: its first detail,
// or for a batch its first failure's field.
func errorField(t *testing.T, body []byte) string {
	t.Helper()
	var env struct {
		Error struct {
			Field   string
			Details []struct{ Field string }
		}
		Failed []struct {
			Error struct{ Field string }
		}
	}
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("not a JSON body: %s", body)
	}
	switch {
	case len(env.Error.Details) > 0:
		return env.Error.Details[0].Field
	case env.Error.Field != "":
		return env.Error.Field
	case len(env.Failed) > 0:
		return env.Failed[0].Error.Field
	}
	return ""
}

// gqlErr posts a GraphQL operation and returns its data and its first
// error's message and code ("" when none).
func (d *deployment) gqlErr(t *testing.T, tenant, key, q string) (map[string]any, string, string) {
	t.Helper()
	var res struct {
		Data   map[string]any
		Errors []struct {
			Message    string
			Extensions struct{ Code string }
		}
	}
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic-gql/"+tenant, key, map[string]any{"query": q}).decode(t, &res)
	if len(res.Errors) > 0 {
		return res.Data, res.Errors[0].Message, res.Errors[0].Extensions.Code
	}
	return res.Data, "", ""
}

func (d *deployment) create(t *testing.T, key, entity string, body map[string]any) string {
	t.Helper()
	var r struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/"+entity, key, body).decode(t, &r)
	return r.ID
}

// total counts an entity's live records.
func (d *deployment) total(t *testing.T, key, entity string) int {
	t.Helper()
	var r struct{ Count int }
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/"+entity+"?includeCount=true&limit=1", key, nil).decode(t, &r)
	return r.Count
}

// A soft-deleted record is as gone to writes as to reads: a nested
// connect naming one (REST create and batch, GraphQL create and batch,
// from either end of the relationship) is the 400 of a missing id naming
// the path, and an edge write reaching one is a 404; none writes anything
// (after the record is restored it has no edges, and the edge that was
// patched keeps its properties).
func TestSoftDeletedRecordsCannotBeConnected(t *testing.T) {
	t.Parallel()
	d := local
	tenant, key := d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, shop())
	live := d.create(t, key, "Category", map[string]any{"title": "desks"})
	gone := d.create(t, key, "Category", map[string]any{"title": "gone"})
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Category/"+gone, key, nil)
	goneProduct := d.create(t, key, "Product", map[string]any{"name": "old"})
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Product/"+goneProduct, key, nil)

	// A live target still connects.
	p := d.create(t, key, "Product", map[string]any{"name": "desk", "categories": map[string]any{
		"connect": []any{map[string]any{"id": live, "properties": map[string]any{"rank": 1}}}}})
	// An edge whose target is then soft-deleted.
	later := d.create(t, key, "Category", map[string]any{"title": "later"})
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product/"+p+"/relationships/IN_CATEGORY", key, map[string]any{"targetId": later, "properties": map[string]any{"rank": 5}})
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Category/"+later, key, nil)

	products, categories := d.total(t, key, "Product"), d.total(t, key, "Category")
	for _, tc := range []struct {
		name, path string
		body       any
		field      string
	}{
		{"connect a deleted target", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{
			"connect": []any{map[string]any{"id": live}, map[string]any{"id": gone}}}}, "categories.connect[1].id"},
		{"connect a deleted target with a create beside it", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{
			"create": []any{map[string]any{"title": "new"}}, "connect": []any{map[string]any{"id": gone}}}}, "categories.connect[0].id"},
		{"connect a deleted source (toField)", "/api/v1/dynamic/Category", map[string]any{"title": "x", "products": map[string]any{
			"connect": []any{map[string]any{"id": goneProduct}}}}, "products.connect[0].id"},
		{"batch item connecting a deleted target", "/api/v1/dynamic/Product/batch", map[string]any{"items": []any{
			map[string]any{"name": "ok", "categories": map[string]any{"connect": []any{map[string]any{"id": live}}}},
			map[string]any{"name": "bad", "categories": map[string]any{"connect": []any{map[string]any{"id": gone}}}},
		}}, "categories.connect[0].id"},
	} {
		r := d.send(t, "POST", tc.path, key, tc.body)
		if r.Status != http.StatusBadRequest || errorField(t, r.Body) != tc.field || !strings.Contains(string(r.Body), "has id") {
			t.Errorf("%s: status %d, want 400 naming %s as a missing id: %s", tc.name, r.Status, tc.field, r.Body)
		}
	}
	_, msg, code := d.gqlErr(t, tenant, key, `mutation { createProduct(input: {name: "x", categories: {connect: [{id: "`+gone+`"}]}}) { id } }`)
	if code != "VALIDATION_ERROR" || !strings.Contains(msg, "categories.connect[0].id") {
		t.Errorf("GraphQL connect of a deleted target: %q %q", msg, code)
	}
	data, msg, _ := d.gqlErr(t, tenant, key, `mutation { batchCreateProduct(input: [{name: "y"}, {name: "z", categories: {connect: [{id: "`+gone+`"}]}}]) { successCount failed { index error { field } } } }`)
	if res, _ := data["batchCreateProduct"].(map[string]any); msg != "" || res["successCount"] != float64(0) ||
		fmt.Sprint(res["failed"]) != "[map[error:map[field:categories.connect[0].id] index:1]]" {
		t.Errorf("GraphQL batch connecting a deleted target: %v %s", data, msg)
	}

	// Edge writes: creating, patching or deleting an edge to a deleted
	// record is a 404.
	base := "/api/v1/dynamic/Product/" + p + "/relationships/IN_CATEGORY"
	for _, tc := range []struct {
		method, path string
		body         any
	}{
		{"POST", base, map[string]any{"targetId": gone}},
		{"PATCH", base + "/" + later, map[string]any{"properties": map[string]any{"rank": 9}}},
		{"DELETE", base + "/" + later, nil},
	} {
		if r := d.send(t, tc.method, tc.path, key, tc.body); r.Status != http.StatusNotFound {
			t.Errorf("%s %s to a deleted category: %d %s, want 404", tc.method, tc.path, r.Status, r.Body)
		}
	}

	// Nothing was written.
	if n, c := d.total(t, key, "Product"), d.total(t, key, "Category"); n != products || c != categories {
		t.Fatalf("refused writes created records: products %d→%d, categories %d→%d", products, n, categories, c)
	}
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Category/"+gone+"/restore", key, nil)
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Category/"+later+"/restore", key, nil)
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Product/"+goneProduct+"/restore", key, nil)
	var in struct{ Items []map[string]any }
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Category/"+gone+"/relationships/IN_CATEGORY?direction=in", key, nil).decode(t, &in)
	if len(in.Items) != 0 {
		t.Fatalf("the deleted category was connected: %v", in.Items)
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Product/"+goneProduct+"/relationships/IN_CATEGORY", key, nil).decode(t, &in)
	if len(in.Items) != 0 {
		t.Fatalf("the deleted product was connected: %v", in.Items)
	}
	d.do(t, http.StatusOK, "GET", base+"?orderBy=title", key, nil).decode(t, &in)
	if len(in.Items) != 2 || in.Items[1]["title"] != "later" || in.Items[1]["properties"].(map[string]any)["rank"] != float64(5) {
		t.Fatalf("the edge to the deleted category was written: %v", in.Items)
	}
}

// "Products with their review count and average rating" through the
// binary: <field>Aggregate on a relationship field, filtered by where,
// with the soft-deleted reviews counting for nothing, and the reviews
// under a where of their own; a function a field does not take, and an
// unknown field in where, are refused naming them.
func TestRelationshipAggregateThroughTheBinary(t *testing.T) {
	t.Parallel()
	d := local
	tenant, key := d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, shop())
	desk := d.create(t, key, "Product", map[string]any{"name": "desk", "reviews": map[string]any{"create": []any{
		map[string]any{"rating": 5}, map[string]any{"rating": 4}, map[string]any{"rating": 1, "body": "spam"}}}})
	d.create(t, key, "Product", map[string]any{"name": "lamp", "reviews": map[string]any{"create": []any{map[string]any{"rating": 3}}}})
	d.create(t, key, "Product", map[string]any{"name": "stool"})
	var spam struct{ Items []map[string]any }
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Review?where="+`%7B%22body%22%3A%22spam%22%7D`, key, nil).decode(t, &spam)
	if len(spam.Items) != 1 {
		t.Fatalf("the spam review: %v", spam.Items)
	}
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Review/"+spam.Items[0]["id"].(string), key, nil)

	data := d.gql(t, tenant, key, `{ products(orderBy: [{field: "name"}]) { name
	  reviewsAggregate { count avg { rating } min { rating } }
	  good: reviewsAggregate(where: {rating: {gte: 4}}) { count } } }`, false)
	got, _ := json.Marshal(data["products"])
	want := `[{"good":{"count":2},"name":"desk","reviewsAggregate":{"avg":{"rating":4.5},"count":2,"min":{"rating":4}}},` +
		`{"good":{"count":0},"name":"lamp","reviewsAggregate":{"avg":{"rating":3},"count":1,"min":{"rating":3}}},` +
		`{"good":{"count":0},"name":"stool","reviewsAggregate":{"avg":{"rating":null},"count":0,"min":{"rating":null}}}]` // keys sorted (a decoded map)
	if string(got) != want {
		t.Errorf("products with their review stats\n got %s\nwant %s", got, want)
	}
	// From the other end: the review's product, and a get by id.
	data = d.gql(t, tenant, key, `{ product(id: "`+desk+`") { name reviewsAggregate { count max { rating } } } }`, false)
	if got, _ := json.Marshal(data["product"]); string(got) != `{"name":"desk","reviewsAggregate":{"count":2,"max":{"rating":5}}}` {
		t.Errorf("a product by id with its review stats: %s", got)
	}
	// The reviews themselves, a nested page under its own where (walked
	// link by link, each review probed with the filter and its soft
	// delete): the deleted spam review matches rating <= 1 and shows for
	// no one.
	data = d.gql(t, tenant, key, `{ products(orderBy: [{field: "name"}]) { name
	  mid: reviews(limit: 1, where: {rating: {lte: 4}}) { rating }
	  low: reviews(where: {rating: {lte: 1}}) { rating } } }`, false)
	got, _ = json.Marshal(data["products"])
	want = `[{"low":[],"mid":[{"rating":4}],"name":"desk"},{"low":[],"mid":[{"rating":3}],"name":"lamp"},{"low":[],"mid":[],"name":"stool"}]`
	if string(got) != want {
		t.Errorf("products with their filtered reviews\n got %s\nwant %s", got, want)
	}
	for _, tc := range []struct{ q, want string }{
		{`{ products { reviewsAggregate { sum { body } } } }`, "body"},
		{`{ categories { productsAggregate { avg { meta } } } }`, "meta"},
		{`{ categories { productsAggregate { max { embedding } } } }`, "embedding"},
		{`{ products { reviewsAggregate(where: {stars: {equals: 1}}) { count } } }`, "stars"},
	} {
		if e := d.gql(t, tenant, key, tc.q, true)["error"].(string); !strings.Contains(e, tc.want) {
			t.Errorf("%s: %q, want an error naming %s", tc.q, e, tc.want)
		}
	}
}

// GraphQL groups do what REST's aggregate does, through the binary: date
// buckets on a TIMESTAMP key, having over aggregates, order by an
// aggregate, limit; both answer the same groups. Bad input (having or
// orderBy naming something that is neither an aggregate nor a key, a
// bucket on a field not grouped or not a date, JSON and VECTOR fields) is
// refused naming the path, on both surfaces.
func TestAggregateGroupsParityThroughTheBinary(t *testing.T) {
	t.Parallel()
	d := local
	tenant, key := d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, shop())
	for _, p := range []map[string]any{
		{"name": "a", "status": "live", "price": 10, "stock": 1, "releasedAt": "2025-01-05T10:00:00Z"},
		{"name": "b", "status": "live", "price": 30, "stock": 2, "releasedAt": "2025-01-20T23:30:00Z"},
		{"name": "c", "status": "draft", "price": 20, "stock": 3, "releasedAt": "2025-01-20T08:00:00Z"},
		{"name": "d", "status": "live", "price": 50, "stock": 4, "releasedAt": "2025-02-02T00:00:00Z"},
		{"name": "e", "status": "live", "price": 5, "stock": 5, "releasedAt": "2025-02-03T00:00:00Z"},
		{"name": "f", "status": "draft", "price": 1, "stock": 6, "releasedAt": "2025-03-01T00:00:00Z"},
	} {
		d.create(t, key, "Product", p)
	}
	// Per status and month, groups of two or more, the largest total first.
	var rest struct{ Groups []map[string]any }
	d.do(t, http.StatusOK, "POST", "/api/v1/dynamic/Product/aggregate", key, map[string]any{
		"groupBy":    []any{"status", map[string]any{"field": "releasedAt", "bucket": "month"}},
		"aggregates": map[string]any{"n": map[string]any{"count": "*"}, "total": map[string]any{"sum": "price"}, "avgStock": map[string]any{"avg": "stock"}},
		"having":     map[string]any{"n": map[string]any{"$gte": 2}},
		"orderBy":    []any{map[string]any{"field": "total", "direction": "DESC"}}, "limit": 2,
	}).decode(t, &rest)
	data := d.gql(t, tenant, key, `{ productsAggregate(groupBy: ["status", "releasedAt"], buckets: [{field: "releasedAt", unit: month}]) {
	  groups(having: {count: {gte: 2}}, orderBy: [{field: "sum.price", direction: DESC}], limit: 2) {
	    key { status releasedAt } n: count total: sum { price } avg { stock } } } }`, false)
	groups := data["productsAggregate"].(map[string]any)["groups"].([]any)
	want := []string{"live 2025-02-01T00:00:00+00:00 2 55 4.5", "live 2025-01-01T00:00:00+00:00 2 40 1.5"}
	if len(rest.Groups) != 2 || len(groups) != 2 {
		t.Fatalf("groups: REST %v, GraphQL %v", rest.Groups, groups)
	}
	for i, w := range want {
		r := rest.Groups[i]
		g := groups[i].(map[string]any)
		rk, gk := r["key"].(map[string]any), g["key"].(map[string]any)
		rs := fmt.Sprint(rk["status"], " ", rk["releasedAt"], " ", r["n"], " ", r["total"], " ", r["avgStock"])
		gs := fmt.Sprint(gk["status"], " ", gk["releasedAt"], " ", g["n"], " ", g["total"].(map[string]any)["price"], " ", g["avg"].(map[string]any)["stock"])
		if rs != w || gs != w {
			t.Errorf("group %d: REST %q, GraphQL %q, want %q", i, rs, gs, w)
		}
	}
	// Having on a min of a timestamp, ordered by a key, weekly buckets.
	data = d.gql(t, tenant, key, `{ productsAggregate(groupBy: ["releasedAt"], buckets: [{field: "releasedAt", unit: week}]) {
	  groups(having: {OR: [{max: {price: {gte: 50}}}, {countDistinct: {status: {equals: 2}}}]}, orderBy: [{field: "releasedAt", direction: DESC}]) { key { releasedAt } count } } }`, false)
	if got, _ := json.Marshal(data["productsAggregate"].(map[string]any)["groups"]); string(got) != `[{"count":1,"key":{"releasedAt":"2025-01-27T00:00:00+00:00"}},{"count":2,"key":{"releasedAt":"2025-01-20T00:00:00+00:00"}}]` {
		t.Errorf("weekly groups with having: %s", got)
	}

	for _, tc := range []struct{ q, want string }{
		{`{ productsAggregate(groupBy: ["status"]) { groups(orderBy: [{field: "nope"}]) { count } } }`, "orderBy[0].field"},
		{`{ productsAggregate(groupBy: ["status"]) { groups(orderBy: [{field: "median.price"}]) { count } } }`, "orderBy[0].field"},
		{`{ productsAggregate(groupBy: ["status"]) { groups(having: {sum: {nope: {gt: 1}}}) { count } } }`, "nope"},
		{`{ productsAggregate(groupBy: ["status"]) { groups(having: {nope: {gt: 1}}) { count } } }`, "nope"},
		{`{ productsAggregate(groupBy: ["status"], buckets: [{field: "releasedAt", unit: day}]) { groups { count } } }`, "buckets[0].field"},
		{`{ productsAggregate(groupBy: ["price"], buckets: [{field: "price", unit: day}]) { groups { count } } }`, "groupBy[0].bucket"},
		{`{ productsAggregate(groupBy: ["releasedAt"], buckets: [{field: "releasedAt", unit: year}]) { groups { count } } }`, "year"},
		{`{ productsAggregate(groupBy: ["meta"]) { groups { count } } }`, "groupBy[0]"},
		{`{ productsAggregate(groupBy: ["embedding"]) { groups { count } } }`, "groupBy[0]"},
		{`{ productsAggregate { sum { meta } } }`, "meta"},
		{`{ productsAggregate { max { embedding } } }`, "embedding"},
	} {
		if e := d.gql(t, tenant, key, tc.q, true)["error"].(string); !strings.Contains(e, tc.want) {
			t.Errorf("%s: %q, want an error naming %s", tc.q, e, tc.want)
		}
	}
	for _, tc := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"groupBy": []any{"status"}, "aggregates": map[string]any{"n": map[string]any{"count": "*"}}, "having": map[string]any{"total": map[string]any{"$gt": 1}}}, "having.total"},
		{map[string]any{"groupBy": []any{"meta"}, "aggregates": map[string]any{"n": map[string]any{"count": "*"}}}, "groupBy[0]"},
		{map[string]any{"aggregates": map[string]any{"v": map[string]any{"max": "embedding"}}}, "aggregates.v.max"},
		{map[string]any{"aggregates": map[string]any{"m": map[string]any{"countDistinct": "meta"}}}, "aggregates.m.countDistinct"},
	} {
		r := d.send(t, "POST", "/api/v1/dynamic/Product/aggregate", key, tc.body)
		if r.Status != http.StatusBadRequest || errorField(t, r.Body) != tc.field {
			t.Errorf("REST %v: %d %s, want 400 naming %s", tc.body, r.Status, r.Body, tc.field)
		}
	}
}

package rest_test

import (
	"fmt"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/dds-project/dds/api/rest"
	"github.com/dds-project/dds/internal/testenv"
)

// store is the schema of the query, batch, relationship and vector tests.
var store = map[string]any{"name": "store", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true, "searchable": true, "maxLength": 40},
		map[string]any{"name": "price", "type": "NUMBER", "indexed": true},
		map[string]any{"name": "stock", "type": "INTEGER", "default": 0},
		map[string]any{"name": "active", "type": "BOOLEAN"},
		map[string]any{"name": "tags", "type": "STRING", "list": true},
		map[string]any{"name": "releasedAt", "type": "TIMESTAMP"},
		map[string]any{"name": "status", "type": "ENUM", "values": []string{"draft", "live"}},
		map[string]any{"name": "sku", "type": "STRING", "unique": true},
		map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 3},
	}},
	map[string]any{"name": "Category", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true},
		map[string]any{"name": "rank", "type": "INTEGER"},
	}},
}, "relationships": []any{
	map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category", "properties": []any{
		map[string]any{"name": "position", "type": "INTEGER"},
		map[string]any{"name": "note", "type": "STRING"},
		map[string]any{"name": "since", "type": "TIMESTAMP"},
	}},
	map[string]any{"name": "SIMILAR", "from": "Product", "to": "Product"},
}}

// storeSetup starts (or reuses) the test server, creates a tenant with the
// store schema and seeds products p[0..3] and categories c[0..1].
type fixture struct {
	app  *testenv.App
	key  string
	tid  string
	p, c []string // ids
}

var seedProducts = []any{
	map[string]any{"name": "Oak desk", "price": 100, "stock": 5, "active": true, "tags": []any{"sale", "new"}, "releasedAt": "2024-01-10T10:00:00Z", "status": "live", "sku": "D-1", "embedding": []any{1, 0, 0}},
	map[string]any{"name": "50% off_chair", "price": 20.5, "stock": 0, "active": false, "tags": []any{"sale"}, "releasedAt": "2024-03-01T00:00:00+02:00", "status": "draft", "sku": "C-1", "embedding": []any{0, 1, 0}},
	map[string]any{"name": "Lamp", "sku": "L-1"},
	map[string]any{"name": "Oak table", "price": 300, "stock": 2, "active": true, "tags": []any{"new"}, "releasedAt": "2023-12-31T23:00:00-05:00", "status": "live", "sku": "T-1", "embedding": []any{0.9, 0.1, 0}},
}

func storeSetup(t *testing.T) *fixture {
	t.Helper()
	t.Parallel()
	return seedTenant(t)
}

// seedTenant is storeSetup without t.Parallel (a second tenant in a test).
func seedTenant(t *testing.T) *fixture {
	t.Helper()
	app := testenv.Server(t)
	tid, key := app.Tenant(t)
	app.Schema(t, key, store)
	f := &fixture{app: app, key: key, tid: tid}
	var res struct {
		Successful []map[string]any `json:"successful"`
	}
	app.Must(t, 201, "POST", "/api/v1/dynamic/Product/batch", key, map[string]any{"items": seedProducts}).Decode(t, &res)
	for _, r := range res.Successful {
		f.p = append(f.p, r["id"].(string))
	}
	app.Must(t, 201, "POST", "/api/v1/dynamic/Category/batch", key, map[string]any{"items": []any{
		map[string]any{"title": "Office", "rank": 1}, map[string]any{"title": "Home", "rank": 2}}}).Decode(t, &res)
	for _, r := range res.Successful {
		f.c = append(f.c, r["id"].(string))
	}
	if len(f.p) != 4 || len(f.c) != 2 {
		t.Fatalf("seed: %d products, %d categories", len(f.p), len(f.c))
	}
	return f
}

type listResult struct {
	Items []map[string]any `json:"items"`
	Count *int             `json:"count"`
}

func itemNames(items []map[string]any, key string, sorted bool) string {
	var out []string
	for _, it := range items {
		out = append(out, fmt.Sprint(it[key]))
	}
	if sorted {
		sort.Strings(out)
	}
	return strings.Join(out, "|")
}

func TestQueryEndpoint(t *testing.T) {
	f := storeSetup(t)
	cases := []struct {
		name   string
		body   string
		status int
		names  string // sorted names, or the error's field for 400
		count  int    // -1: no count expected
	}{
		{"eq", `{"where": {"name": "Lamp"}}`, 200, "Lamp", -1},
		{"neq matches null", `{"where": {"price": {"$neq": 100}}}`, 200, "50% off_chair|Lamp|Oak table", -1},
		{"range", `{"where": {"price": {"$gte": 20.5, "$lt": 300}}}`, 200, "50% off_chair|Oak desk", -1},
		{"timestamps as time", `{"where": {"releasedAt": {"$lt": "2024-01-01T05:00:00Z"}}}`, 200, "Oak table", -1},
		{"in", `{"where": {"status": {"$in": ["draft"]}}}`, 200, "50% off_chair", -1},
		{"notIn includes null", `{"where": {"status": {"$notIn": ["live"]}}}`, 200, "50% off_chair|Lamp", -1},
		{"isNull", `{"where": {"releasedAt": {"$isNull": true}}}`, 200, "Lamp", -1},
		{"contains literal percent", `{"where": {"name": {"$contains": "%"}}}`, 200, "50% off_chair", -1},
		{"startsWith underscore literal", `{"where": {"name": {"$startsWith": "5_"}}}`, 200, "", -1},
		{"endsWith", `{"where": {"name": {"$endsWith": "_chair"}}}`, 200, "50% off_chair", -1},
		{"list contains", `{"where": {"tags": {"$contains": "sale"}}}`, 200, "50% off_chair|Oak desk", -1},
		{"or/and", `{"where": {"$or": [{"name": "Lamp"}, {"$and": [{"active": true}, {"stock": {"$gt": 3}}]}]}}`, 200, "Lamp|Oak desk", -1},
		{"search", `{"search": "oak", "includeCount": true}`, 200, "Oak desk|Oak table", 2},
		{"count with limit", `{"where": {"tags": {"$contains": "new"}}, "limit": 1, "includeCount": true, "orderBy": "price"}`, 200, "Oak desk", 2},
		{"injection value", `{"where": {"name": "x' OR '1'='1"}}`, 200, "", -1},
		{"unknown field", `{"where": {"colour": "red"}}`, 400, "where.colour", -1},
		{"injection field", `{"where": {"name\" OR 1=1 --": "x"}}`, 400, `where.name" OR 1=1 --`, -1},
		{"unknown operator", `{"where": {"name": {"$regex": "a"}}}`, 400, "where.name", -1},
		{"gt on boolean", `{"where": {"active": {"$gt": false}}}`, 400, "where.active", -1},
		{"contains on number", `{"where": {"price": {"$contains": 1}}}`, 400, "where.price", -1},
		{"wrong value type", `{"where": {"stock": "many"}}`, 400, "where.stock", -1},
		{"bad orderBy", `{"orderBy": "nope"}`, 400, "orderBy", -1},
		{"bad direction", `{"orderBy": "price", "orderDirection": "UP"}`, 400, "orderDirection", -1},
		{"bad limit", `{"limit": 100000}`, 400, "limit", -1},
		{"unknown option", `{"filter": {}}`, 400, "filter", -1},
		{"bad select", `{"select": ["nope"]}`, 400, "select", -1},
		{"where not object", `{"where": [1]}`, 400, "where", -1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := f.app.Do(t, "POST", "/api/v1/dynamic/Product/query", f.key, tc.body)
			if r.Status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tc.status, r.Body)
			}
			if tc.status != 200 {
				assertErrField(t, r, tc.names)
				return
			}
			var res listResult
			r.Decode(t, &res)
			if got := itemNames(res.Items, "name", tc.count < 0); got != tc.names {
				t.Fatalf("items %q, want %q", got, tc.names)
			}
			if tc.count >= 0 && (res.Count == nil || *res.Count != tc.count) {
				t.Fatalf("count %v, want %d", res.Count, tc.count)
			}
			if tc.count < 0 && res.Count != nil {
				t.Fatalf("count present without includeCount")
			}
		})
	}

	t.Run("select and traverse", func(t *testing.T) {
		f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product/"+f.p[0]+"/relationships/IN_CATEGORY", f.key, map[string]any{"targetId": f.c[0], "properties": map[string]any{"position": 2}})
		f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product/"+f.p[0]+"/relationships/IN_CATEGORY", f.key, map[string]any{"targetId": f.c[1], "properties": map[string]any{"position": 1}})
		var res listResult
		f.app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", f.key, map[string]any{
			"where": map[string]any{"id": f.p[0]}, "select": []string{"name"},
			"traverse": []any{map[string]any{"relationship": "IN_CATEGORY", "direction": "out", "select": []string{"title"},
				"where": map[string]any{"rank": map[string]any{"$gte": 2}}}},
		}).Decode(t, &res)
		if len(res.Items) != 1 {
			t.Fatalf("items: %+v", res.Items)
		}
		it := res.Items[0]
		if _, has := it["price"]; has {
			t.Errorf("select ignored: %+v", it)
		}
		cats, _ := it["IN_CATEGORY"].([]any)
		if len(cats) != 1 || cats[0].(map[string]any)["title"] != "Home" {
			t.Errorf("traverse: %+v", it["IN_CATEGORY"])
		}
		// Category is only the target of IN_CATEGORY: out matches nothing.
		var catRes struct{ Items []map[string]any }
		f.app.Must(t, 200, "POST", "/api/v1/dynamic/Category/query", f.key, `{"traverse": [{"relationship": "IN_CATEGORY", "direction": "out"}]}`).Decode(t, &catRes)
		for _, it := range catRes.Items {
			if l, ok := it["IN_CATEGORY"].([]any); !ok || len(l) != 0 {
				t.Errorf("traverse out from the target: %+v", it)
			}
		}
		if len(catRes.Items) == 0 {
			t.Error("no categories listed")
		}
	})

	t.Run("entity names are exact", func(t *testing.T) {
		if r := f.app.Do(t, "POST", "/api/v1/dynamic/product/query", f.key, `{}`); r.Status != 404 {
			t.Fatalf("lower-case entity: %d", r.Status)
		}
	})
}

// assertErrField checks a 400 error body names field.
func assertErrField(t *testing.T, r *testenv.Response, field string) {
	t.Helper()
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Details []struct {
				Field string `json:"field"`
			} `json:"details"`
		} `json:"error"`
	}
	r.Decode(t, &body)
	if body.Error.Code != "VALIDATION_ERROR" && body.Error.Code != "BAD_REQUEST" {
		t.Fatalf("error code %q: %s", body.Error.Code, r.Body)
	}
	if field == "" {
		return
	}
	if len(body.Error.Details) == 0 || body.Error.Details[0].Field != field {
		t.Fatalf("error should name %q: %s", field, r.Body)
	}
}

func TestParseListQuery(t *testing.T) {
	q := url.Values{}
	q.Set("where", `{"price": {"$gt": 10}}`)
	q.Set("select", "name, price")
	q.Set("search", "oak")
	q.Set("orderBy", "price")
	q.Set("orderDirection", "desc")
	q.Set("limit", "5")
	q.Set("offset", "10")
	q.Set("includeCount", "true")
	q.Set("traverse", `[{"relationship": "IN_CATEGORY", "select": ["title"], "limit": 3}]`)
	l, err := rest.ParseListQueryForTest(q)
	if err != nil {
		t.Fatal(err)
	}
	if l.Search != "oak" || l.Limit != 5 || l.Offset != 10 || !l.IncludeCount || len(l.OrderBy) != 1 || !l.OrderBy[0].Desc ||
		strings.Join(l.Select.Fields, ",") != "name,price" || len(l.Select.Nested) != 1 || l.Select.Nested[0].Limit != 3 || l.Where == nil {
		t.Fatalf("parsed: %+v", l)
	}
	for _, bad := range []map[string]string{
		{"where": "{not json"}, {"where": `{"a": {"$bogus": 1}}`}, {"limit": "x"}, {"includeCount": "maybe"},
		{"orderBy": "a", "orderDirection": "sideways"}, {"traverse": "{}"}, {"traverse": `[{"direction": "out"}]`},
	} {
		q := url.Values{}
		for k, v := range bad {
			q.Set(k, v)
		}
		if _, err := rest.ParseListQueryForTest(q); err == nil {
			t.Errorf("%v: want an error", bad)
		}
	}
}

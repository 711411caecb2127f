package rest_test

import (
	"net/http"
	"net/url"
	"testing"
)

type edge struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	SourceID   string         `json:"sourceId"`
	TargetID   string         `json:"targetId"`
	Properties map[string]any `json:"properties"`
	CreatedAt  string         `json:"createdAt"`
}

func TestRelationships(t *testing.T) {
	f := storeSetup(t)
	base := func(p string) string { return "/api/v1/dynamic/Product/" + p + "/relationships/IN_CATEGORY" }
	var e1, e2, e3 edge
	f.app.Must(t, 201, "POST", base(f.p[0]), f.key, map[string]any{"targetId": f.c[0], "properties": map[string]any{"position": 2, "note": "first", "since": "2024-01-01T02:00:00+02:00"}}).Decode(t, &e1)
	f.app.Must(t, 201, "POST", base(f.p[0]), f.key, map[string]any{"targetId": f.c[0], "properties": map[string]any{"position": 5}}).Decode(t, &e2) // a second edge to the same pair
	f.app.Must(t, 201, "POST", base(f.p[0]), f.key, map[string]any{"targetId": f.c[1]}).Decode(t, &e3)
	if e1.ID == "" || e1.ID == e2.ID || e1.Type != "IN_CATEGORY" || e1.SourceID != f.p[0] || e1.TargetID != f.c[0] ||
		e1.Properties["position"].(float64) != 2 || e1.Properties["since"] != "2024-01-01T00:00:00Z" || e1.CreatedAt == "" {
		t.Fatalf("created edges: %+v %+v", e1, e2)
	}

	t.Run("create errors", func(t *testing.T) {
		cases := []struct {
			name, path, body string
			status           int
		}{
			{"unknown property", base(f.p[1]), `{"targetId": "` + f.c[0] + `", "properties": {"weight": 1}}`, 400},
			{"property type", base(f.p[1]), `{"targetId": "` + f.c[0] + `", "properties": {"position": "top"}}`, 400},
			{"missing targetId", base(f.p[1]), `{}`, 400},
			{"unknown member", base(f.p[1]), `{"targetId": "` + f.c[0] + `", "weight": 1}`, 400},
			{"target of the wrong entity", base(f.p[1]), `{"targetId": "` + f.p[2] + `"}`, 404},
			{"missing target", base(f.p[1]), `{"targetId": "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}`, 404},
			{"malformed target", base(f.p[1]), `{"targetId": "nope"}`, 404},
			{"missing source", base("0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"), `{"targetId": "` + f.c[0] + `"}`, 404},
			{"unknown relationship", "/api/v1/dynamic/Product/" + f.p[1] + "/relationships/NOPE", `{"targetId": "` + f.c[0] + `"}`, 404},
			{"wrong side", "/api/v1/dynamic/Category/" + f.c[0] + "/relationships/IN_CATEGORY", `{"targetId": "` + f.p[0] + `"}`, 400},
		}
		for _, tc := range cases {
			r := f.app.Do(t, "POST", tc.path, f.key, tc.body)
			if r.Status != tc.status {
				t.Errorf("%s: status %d, want %d: %s", tc.name, r.Status, tc.status, r.Body)
			}
		}
		r := f.app.Do(t, "POST", base(f.p[1]), f.key, `{"targetId": "`+f.p[2]+`"}`)
		if m := string(r.Body); !contains(m, "Category") {
			t.Errorf("404 for a target of the wrong entity should say which entity: %s", m)
		}
	})

	list := func(t *testing.T, path string, q url.Values) []map[string]any {
		t.Helper()
		var res listResult
		f.app.Must(t, 200, "GET", path+"?"+q.Encode(), f.key, nil).Decode(t, &res)
		return res.Items
	}

	t.Run("list", func(t *testing.T) {
		items := list(t, base(f.p[0]), url.Values{})
		if len(items) != 3 {
			t.Fatalf("items: %+v", items)
		}
		rel := items[0]["_relationship"].(map[string]any)
		if items[0]["title"] != "Office" || rel["id"] != e1.ID || rel["type"] != "IN_CATEGORY" || rel["direction"] != "out" || rel["createdAt"] == nil ||
			items[0]["properties"].(map[string]any)["note"] != "first" || items[2]["_relationship"].(map[string]any)["id"] != e3.ID {
			t.Fatalf("first item: %+v", items[0])
		}
		if got := list(t, base(f.p[0]), url.Values{"limit": {"1"}, "offset": {"1"}}); len(got) != 1 || got[0]["_relationship"].(map[string]any)["id"] != e2.ID {
			t.Fatalf("limit/offset: %+v", got)
		}
		if got := list(t, base(f.p[0]), url.Values{"where": {`{"title": "Home"}`}}); len(got) != 1 || got[0]["_relationship"].(map[string]any)["id"] != e3.ID {
			t.Fatalf("where: %+v", got)
		}
		if got := list(t, base(f.p[0]), url.Values{"edgeWhere": {`{"position": {"$gte": 3}}`}}); len(got) != 1 || got[0]["_relationship"].(map[string]any)["id"] != e2.ID {
			t.Fatalf("edgeWhere: %+v", got)
		}
		if got := list(t, base(f.p[0]), url.Values{"edgeWhere": {`{"since": {"$lt": "2024-01-01T00:00:01Z"}}`}}); len(got) != 1 {
			t.Fatalf("edgeWhere on timestamp: %+v", got)
		}
		if got := list(t, base(f.p[0]), url.Values{"orderBy": {"title"}, "orderDirection": {"DESC"}}); got[0]["title"] != "Office" || got[2]["title"] != "Home" {
			t.Fatalf("order: %+v", got)
		}
		in := list(t, "/api/v1/dynamic/Category/"+f.c[0]+"/relationships/IN_CATEGORY", url.Values{"direction": {"in"}})
		if len(in) != 2 || in[0]["name"] != "Oak desk" || in[0]["_relationship"].(map[string]any)["direction"] != "in" {
			t.Fatalf("direction in: %+v", in)
		}
		both := list(t, "/api/v1/dynamic/Category/"+f.c[0]+"/relationships/IN_CATEGORY", url.Values{"direction": {"both"}})
		if len(both) != 2 {
			t.Fatalf("direction both: %+v", both)
		}
		// A direction the entity is not on is a filter matching nothing:
		// Category is only ever the target of IN_CATEGORY (Product -> Category).
		if out := list(t, "/api/v1/dynamic/Category/"+f.c[0]+"/relationships/IN_CATEGORY", url.Values{"direction": {"out"}}); len(out) != 0 {
			t.Fatalf("direction out from the target: %+v", out)
		}
		if in := list(t, base(f.p[0]), url.Values{"direction": {"in"}}); len(in) != 0 {
			t.Fatalf("direction in from the source: %+v", in)
		}
		for _, tc := range []struct {
			q      url.Values
			status int
		}{
			{url.Values{"direction": {"sideways"}}, 400},
			{url.Values{"limit": {"x"}}, 400},
			{url.Values{"limit": {"0"}}, 200},
			{url.Values{"limit": {"5000"}}, 400},
			{url.Values{"where": {`{"nope": 1}`}}, 400},
			{url.Values{"edgeWhere": {`{"title": "x"}`}}, 400},
			{url.Values{"edgeWhere": {`{"position": {"$contains": 1}}`}}, 400},
			{url.Values{"orderBy": {"nope"}}, 400},
		} {
			if r := f.app.Do(t, "GET", base(f.p[0])+"?"+tc.q.Encode(), f.key, nil); r.Status != tc.status {
				t.Errorf("%v: status %d, want %d: %s", tc.q, r.Status, tc.status, r.Body)
			}
		}
		f.app.Must(t, 404, "GET", base("0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"), f.key, nil)
	})

	t.Run("update by target and by id", func(t *testing.T) {
		var res struct{ Items []edge }
		f.app.Must(t, 200, "PATCH", base(f.p[0])+"/"+f.c[0], f.key, `{"properties": {"note": "both", "position": null}}`).Decode(t, &res)
		if len(res.Items) != 2 || res.Items[0].Properties["note"] != "both" || res.Items[1].Properties["note"] != "both" {
			t.Fatalf("update by target: %+v", res.Items)
		}
		if _, has := res.Items[0].Properties["position"]; has {
			t.Fatalf("null should remove a property: %+v", res.Items[0])
		}
		var one edge
		f.app.Must(t, 200, "PATCH", base(f.p[0])+"/by-id/"+e2.ID, f.key, `{"properties": {"position": 9}}`).Decode(t, &one)
		if one.ID != e2.ID || one.Properties["position"].(float64) != 9 || one.Properties["note"] != "both" {
			t.Fatalf("update by id: %+v", one)
		}
		for _, tc := range []struct {
			path, body string
			status     int
		}{
			{base(f.p[0]) + "/" + f.c[0], `{"properties": {"bogus": 1}}`, 400},
			{base(f.p[0]) + "/" + f.c[0], `{}`, 400},
			{base(f.p[1]) + "/" + f.c[0], `{"properties": {"note": "x"}}`, 404}, // no such edge
			{base(f.p[0]) + "/by-id/0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", `{"properties": {"note": "x"}}`, 404},
			{base(f.p[1]) + "/by-id/" + e2.ID, `{"properties": {"note": "x"}}`, 404}, // edge of another record
		} {
			if r := f.app.Do(t, "PATCH", tc.path, f.key, tc.body); r.Status != tc.status {
				t.Errorf("PATCH %s %s: %d, want %d: %s", tc.path, tc.body, r.Status, tc.status, r.Body)
			}
		}
	})

	t.Run("delete by id, by target, and cascade", func(t *testing.T) {
		f.app.Must(t, 204, "DELETE", base(f.p[0])+"/by-id/"+e1.ID, f.key, nil)
		f.app.Must(t, 404, "DELETE", base(f.p[0])+"/by-id/"+e1.ID, f.key, nil)
		if items := list(t, base(f.p[0]), url.Values{}); len(items) != 2 {
			t.Fatalf("after delete by id: %+v", items)
		}
		f.app.Must(t, 204, "DELETE", base(f.p[0])+"/"+f.c[0], f.key, nil)
		f.app.Must(t, 404, "DELETE", base(f.p[0])+"/"+f.c[0], f.key, nil)
		if items := list(t, base(f.p[0]), url.Values{}); len(items) != 1 {
			t.Fatalf("after delete by target: %+v", items)
		}
		f.app.Must(t, 201, "POST", base(f.p[1]), f.key, map[string]any{"targetId": f.c[1]})
		f.app.Must(t, 204, "DELETE", "/api/v1/dynamic/Category/"+f.c[1], f.key, nil)
		if items := list(t, base(f.p[1]), url.Values{}); len(items) != 0 {
			t.Fatalf("deleting the target should remove its edges: %+v", items)
		}
		var n int
		if err := dbOf(t).QueryRow(`SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND entity_id = $2`, f.tid, f.c[1]).Scan(&n); err != nil || n < 1 {
			t.Fatalf("entity delete event: %d %v", n, err)
		}
	})
}

func TestRelationshipScopesAndTenants(t *testing.T) {
	f := storeSetup(t)
	base := "/api/v1/dynamic/Product/" + f.p[0] + "/relationships/IN_CATEGORY"
	var k struct {
		Key string `json:"key"`
	}
	f.app.Must(t, 201, "POST", "/api/v1/api-keys", f.key, map[string]any{"name": "reader", "scopes": []string{"relationship:IN_CATEGORY:read", "entity:*:read"}}).Decode(t, &k)
	f.app.Must(t, 200, "GET", base, k.Key, nil)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", base, `{"targetId": "` + f.c[0] + `"}`},
		{"PATCH", base + "/" + f.c[0], `{"properties": {}}`},
		{"DELETE", base + "/" + f.c[0], ""},
		{"GET", "/api/v1/dynamic/Product/" + f.p[0] + "/relationships/SIMILAR", ""},
		{"POST", "/api/v1/dynamic/Product/batch", `{"items": [{"name": "x"}]}`},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		if r := f.app.Do(t, tc.method, tc.path, k.Key, body); r.Status != http.StatusForbidden {
			t.Errorf("%s %s with a read-only key: %d %s", tc.method, tc.path, r.Status, r.Body)
		}
	}

	// Entity scopes guard query, vector search and batches; no key is 401.
	var k2 struct {
		Key string `json:"key"`
	}
	f.app.Must(t, 201, "POST", "/api/v1/api-keys", f.key, map[string]any{"name": "categories", "scopes": []string{"entity:Category:*"}}).Decode(t, &k2)
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Category/query", k2.Key, map[string]any{})
	for _, tc := range []struct {
		method, path, key, body string
		status                  int
	}{
		{"POST", "/api/v1/dynamic/Product/query", k2.Key, `{}`, 403},
		{"POST", "/api/v1/dynamic/Product/vector-search", k2.Key, `{"field": "embedding", "vector": [1, 0, 0]}`, 403},
		{"PATCH", "/api/v1/dynamic/Product/batch", k2.Key, `{"items": []}`, 403},
		{"DELETE", "/api/v1/dynamic/Product/batch", k.Key, `{"ids": []}`, 403},
		{"GET", base, k2.Key, "", 403},
		{"POST", "/api/v1/dynamic/Product/query", "", `{}`, 401},
		{"GET", base, "", "", 401},
		{"POST", "/api/v1/dynamic/Product/batch", "dds_test_wrongwrongwrong", `{"items": [{"name": "x"}]}`, 401},
	} {
		var body any
		if tc.body != "" {
			body = tc.body
		}
		if r := f.app.Do(t, tc.method, tc.path, tc.key, body); r.Status != tc.status {
			t.Errorf("%s %s: %d, want %d: %s", tc.method, tc.path, r.Status, tc.status, r.Body)
		}
	}

	// Another tenant's ids do not exist here.
	g := seedTenant(t)
	f.app.Must(t, 404, "POST", base, f.key, map[string]any{"targetId": g.c[0]})
	f.app.Must(t, 404, "GET", "/api/v1/dynamic/Product/"+g.p[0]+"/relationships/IN_CATEGORY", f.key, nil)
	r := f.app.Do(t, "PATCH", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": []any{map[string]any{"id": g.p[0], "data": map[string]any{"price": 1}}}})
	if r.Status != 400 || !contains(string(r.Body), "NOT_FOUND") {
		t.Fatalf("batch update of another tenant's record: %d %s", r.Status, r.Body)
	}
	var res listResult
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", f.key, map[string]any{"where": map[string]any{"id": g.p[0]}}).Decode(t, &res)
	if len(res.Items) != 0 {
		t.Fatalf("query found another tenant's record")
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

package rest_test

import (
	"sort"
	"strings"
	"testing"
)

// select returns the record's id plus exactly the selected fields: the
// system timestamps only when they are selected themselves.
func TestSelectReturnsIDPlusSelectedFields(t *testing.T) {
	f := storeSetup(t)
	keysOf := func(m map[string]any) string {
		var k []string
		for n := range m {
			k = append(k, n)
		}
		sort.Strings(k)
		return strings.Join(k, ",")
	}
	var q struct {
		Items []map[string]any `json:"items"`
	}
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", f.key, `{"select": ["name"], "limit": 1}`).Decode(t, &q)
	if len(q.Items) != 1 || keysOf(q.Items[0]) != "id,name" {
		t.Errorf("query select [name]: %v", q.Items)
	}
	q.Items = nil
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", f.key, `{"select": ["name", "createdAt"], "limit": 1}`).Decode(t, &q)
	if len(q.Items) != 1 || keysOf(q.Items[0]) != "createdAt,id,name" {
		t.Errorf("query select [name, createdAt]: %v", q.Items)
	}
	q.Items = nil
	f.app.Must(t, 200, "GET", "/api/v1/dynamic/Product?select=name&limit=1", f.key, nil).Decode(t, &q)
	if len(q.Items) != 1 || keysOf(q.Items[0]) != "id,name" {
		t.Errorf("list ?select=name: %v", q.Items)
	}
	var hits []vectorHit
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Product/vector-search", f.key, `{"field": "embedding", "vector": [1, 0, 0], "topK": 1, "select": ["name"]}`).Decode(t, &hits)
	if len(hits) != 1 || keysOf(hits[0].Data) != "id,name" {
		t.Errorf("vector search select [name]: %+v", hits)
	}
}

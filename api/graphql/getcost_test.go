package graphql_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
)

// BenchmarkGetCost compares the server's cost of one record by id over
// REST and over GraphQL (the query ddsbench sends, with its variable),
// sequentially through the real composition. Profile the server's part
// with -cpuprofile and pprof -focus 'net/http.\(\*conn\).serve'.
func BenchmarkGetCost(b *testing.B) {
	app := testenv.Server(b)
	tenant, key := app.Tenant(b)
	app.Schema(b, key, map[string]any{"name": "getcost", "entities": []any{map[string]any{
		"name": "Product",
		"fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "stock", "type": "INTEGER"},
			map[string]any{"name": "tags", "type": "STRING", "list": true},
		},
	}}})
	client := &http.Client{Timeout: 10 * time.Second}
	do := func(method, url string, body []byte) []byte {
		req, err := http.NewRequest(method, url, bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		if res.StatusCode >= 300 {
			b.Fatalf("%s %s: %d %s", method, url, res.StatusCode, out)
		}
		return out
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(do("POST", app.URL+"/api/v1/dynamic/Product", []byte(`{"name":"a","price":1.5,"stock":3,"tags":["x"]}`)), &created); err != nil {
		b.Fatal(err)
	}
	gql, _ := json.Marshal(map[string]any{
		"query":     `query($id: ID!) { product(id: $id) { id name price stock tags createdAt updatedAt } }`,
		"variables": map[string]any{"id": created.ID},
	})
	b.Run("rest", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			do("GET", app.URL+"/api/v1/dynamic/Product/"+created.ID, nil)
		}
	})
	b.Run("graphql", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			do("POST", app.URL+"/api/v1/dynamic-gql/"+tenant, gql)
		}
	})
}

package rest_test

import (
	"net/http"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// FuzzWritesNeverFailServerSide posts arbitrary bodies to create, patch and
// query: whatever a client sends, the answer is a success or a 4xx, never a
// 5xx. The seeds are the tricky values for each field type; `go test -fuzz`
// explores from there.
func FuzzWritesNeverFailServerSide(f *testing.F) {
	for _, seed := range []string{
		`{"name": "a"}`,
		`{"name": "a", "price": 1e308, "stock": 9223372036854775807}`,
		`{"name": "a", "price": 1e309}`,
		`{"name": "a", "price": -0, "stock": -9223372036854775808}`,
		`{"name": "a", "releasedAt": "0000-01-01T00:00:00Z", "day": "0000-01-01"}`,
		`{"name": "a", "releasedAt": "9999-12-31T23:59:59.999999999+14:00"}`,
		`{"name": "a", "embedding": [3.5e38, 0, 0]}`,
		`{"name": "a", "embedding": [1e-46, -0, 1]}`,
		`{"name": "a", "tags": ["\u0000"]}`,
		`{"name": "a", "attributes": {"deep": [[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]}}`,
		`{"name": "a", "attributes": "\ud800"}`,
		`{"name": "\ud83d\ude00", "status": "live", "sku": ""}`,
		`{"where": {"price": {"$gt": "x"}}}`,
		`{"where": {"$or": [{"name": {"$startsWith": "%_\\"}}, {"tags": {"$contains": 1}}]}, "limit": 1000}`,
		`{"where": {"releasedAt": {"$lt": "0000-01-01"}}}`,
		`{"where": {"name": {"$in": []}}, "orderBy": "embedding"}`,
		`[]`, `null`, `"x"`, `{"name": {"$eq": 1}}`,
	} {
		f.Add(seed)
	}
	type fixture struct {
		app     *testenv.App
		key, id string
	}
	var shared teststack.Once[fixture]
	f.Fuzz(func(t *testing.T, body string) {
		fx := shared.Get(t, func(t testing.TB) (fixture, error) {
			app := testenv.Server(t)
			_, key := app.Tenant(t)
			app.Schema(t, key, catalog)
			id := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "seed"}).JSON(t)["id"].(string)
			return fixture{app, key, id}, nil
		})
		app, key, id := fx.app, fx.key, fx.id
		for _, req := range []struct{ method, path string }{
			{"POST", "/api/v1/dynamic/Product"},
			{"PATCH", "/api/v1/dynamic/Product/" + id},
			{"POST", "/api/v1/dynamic/Product/query"},
		} {
			r := app.Do(t, req.method, req.path, key, body)
			if r.Status >= 500 {
				t.Fatalf("%s %s with %q: status %d: %s", req.method, req.path, body, r.Status, r.Body)
			}
		}
	})
}

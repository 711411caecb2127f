package rest_test

import (
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"
)

type vectorHit struct {
	Data  map[string]any `json:"data"`
	Score float64        `json:"score"`
}

func TestVectorSearch(t *testing.T) {
	f := storeSetup(t)
	url := "/api/v1/dynamic/Product/vector-search"

	t.Run("ranking, score, select", func(t *testing.T) {
		var hits []vectorHit
		f.app.Must(t, 200, "POST", url, f.key, `{"field": "embedding", "vector": [1, 0, 0], "topK": 2, "select": ["name"]}`).Decode(t, &hits)
		if len(hits) != 2 || hits[0].Data["name"] != "Oak desk" || math.Abs(hits[0].Score-1) > 1e-6 || hits[1].Data["name"] != "Oak table" ||
			hits[1].Score >= hits[0].Score || hits[0].Data["id"] == nil {
			t.Fatalf("hits: %+v", hits)
		}
		if _, has := hits[0].Data["price"]; has {
			t.Fatalf("select ignored: %+v", hits[0].Data)
		}
		f.app.Must(t, 200, "POST", url, f.key, `{"field": "embedding", "vector": [-1, 0, 0]}`).Decode(t, &hits)
		if len(hits) != 3 { // Lamp has no vector
			t.Fatalf("default topK over 3 vectors: %+v", hits)
		}
		for _, h := range hits {
			if h.Score < 0 || h.Score > 1 {
				t.Fatalf("score outside [0,1]: %+v", h)
			}
		}
	})

	// The statement text of a search without a filter is kept per schema
	// version and re-bound: each repeat ranks by its own vector, and a bad
	// vector is still refused with the field named.
	t.Run("repeated search binds each vector", func(t *testing.T) {
		body := func(v string) string {
			return `{"field": "embedding", "vector": ` + v + `, "topK": 1, "select": ["name"]}`
		}
		for i := 0; i < 2; i++ {
			var hits []vectorHit
			f.app.Must(t, 200, "POST", url, f.key, body("[1, 0, 0]")).Decode(t, &hits)
			if len(hits) != 1 || hits[0].Data["name"] != "Oak desk" {
				t.Fatalf("round %d, [1,0,0]: %+v", i, hits)
			}
			f.app.Must(t, 200, "POST", url, f.key, body("[-1, 0, 0]")).Decode(t, &hits)
			if len(hits) != 1 || hits[0].Data["name"] == "Oak desk" {
				t.Fatalf("round %d, [-1,0,0] ranked the closest of [1,0,0] first: %+v", i, hits)
			}
			r := f.app.Do(t, "POST", url, f.key, body("[1, 0]"))
			if r.Status != 400 {
				t.Fatalf("round %d, two dimensions: status %d: %s", i, r.Status, r.Body)
			}
			assertErrField(t, r, "vector")
		}
	})

	// A request's own efSearch runs (in its own transaction) and ranks as
	// the default does; a repeat without it still uses the kept text.
	t.Run("own efSearch", func(t *testing.T) {
		for _, body := range []string{
			`{"field": "embedding", "vector": [1, 0, 0], "topK": 2, "efSearch": 2, "select": ["name"]}`,
			`{"field": "embedding", "vector": [1, 0, 0], "topK": 2, "efSearch": 1000, "select": ["name"]}`,
			`{"field": "embedding", "vector": [1, 0, 0], "topK": 2, "select": ["name"]}`,
		} {
			var hits []vectorHit
			f.app.Must(t, 200, "POST", url, f.key, body).Decode(t, &hits)
			if len(hits) != 2 || hits[0].Data["name"] != "Oak desk" || hits[1].Data["name"] != "Oak table" {
				t.Fatalf("%s: %+v", body, hits)
			}
		}
	})

	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct{ body, field string }{
			{`{"field": "name", "vector": [1, 0, 0]}`, "field"},
			{`{"field": "nope", "vector": [1, 0, 0]}`, "field"},
			{`{"vector": [1, 0, 0]}`, "field"},
			{`{"field": "embedding", "vector": [1, 0]}`, "vector"},
			{`{"field": "embedding", "vector": [1, 0, "x"]}`, "vector"},
			{`{"field": "embedding"}`, "vector"},
			{`{"field": "embedding", "vector": [1, 0, 0], "topK": 0}`, "topK"},
			{`{"field": "embedding", "vector": [1, 0, 0], "topK": 101}`, "topK"},
			{`{"field": "embedding", "vector": [1, 0, 0], "topK": "ten"}`, "topK"},
			{`{"field": "embedding", "vector": [1, 0, 0], "efSearch": 0}`, "efSearch"},
			{`{"field": "embedding", "vector": [1, 0, 0], "efSearch": 1001}`, "efSearch"},
			{`{"field": "embedding", "vector": [1, 0, 0], "topK": 20, "efSearch": 19}`, "efSearch"},
			{`{"field": "embedding", "vector": [1, 0, 0], "efSearch": "max"}`, "efSearch"},
			{`{"field": "embedding", "vector": [1, 0, 0], "where": {"nope": 1}}`, "where.nope"},
			{`{"field": "embedding", "vector": [1, 0, 0], "select": ["nope"]}`, "select"},
		} {
			r := f.app.Do(t, "POST", url, f.key, tc.body)
			if r.Status != 400 {
				t.Errorf("%s: status %d: %s", tc.body, r.Status, r.Body)
				continue
			}
			assertErrField(t, r, tc.field)
		}
	})

	t.Run("where after ranking still returns topK", func(t *testing.T) {
		// 600 vectors, 1 in 20 matching the filter: the HNSW scan must
		// continue past its first candidates to find 10 matches.
		rng := rand.New(rand.NewSource(7))
		items := make([]any, 600)
		type vec struct {
			id string
			v  [3]float64
			ok bool
		}
		var all []vec
		for i := range items {
			v := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
			items[i] = map[string]any{"name": fmt.Sprintf("v%d", i), "embedding": []any{v[0], v[1], v[2]}, "active": i%20 == 0, "status": "live"}
			all = append(all, vec{v: v, ok: i%20 == 0})
		}
		var res batchResult
		f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": items}).Decode(t, &res)
		for i := range all {
			all[i].id = res.Successful[i]["id"].(string)
		}
		q := [3]float64{0.3, -0.5, 0.8}
		cos := func(a [3]float64) float64 {
			return (a[0]*q[0] + a[1]*q[1] + a[2]*q[2]) / math.Sqrt((a[0]*a[0]+a[1]*a[1]+a[2]*a[2])*(q[0]*q[0]+q[1]*q[1]+q[2]*q[2]))
		}
		var exact []vec
		for _, v := range all {
			if v.ok {
				exact = append(exact, v)
			}
		}
		sort.Slice(exact, func(i, j int) bool { return cos(exact[i].v) > cos(exact[j].v) })
		var hits []vectorHit
		f.app.Must(t, 200, "POST", url, f.key, map[string]any{"field": "embedding", "vector": q[:], "topK": 10,
			"where": map[string]any{"active": true, "name": map[string]any{"$startsWith": "v"}}}).Decode(t, &hits)
		if len(hits) != 10 {
			t.Fatalf("got %d hits, want 10", len(hits))
		}
		want := map[string]bool{}
		for _, v := range exact[:10] {
			want[v.id] = true
		}
		found := 0
		for i, h := range hits {
			if want[h.Data["id"].(string)] {
				found++
			}
			if i > 0 && h.Score > hits[i-1].Score {
				t.Fatalf("hits not sorted by score: %+v", hits)
			}
		}
		if found < 9 {
			t.Fatalf("recall@10 of filtered search: %d/10", found)
		}
	})
}

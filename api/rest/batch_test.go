package rest_test

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

type batchResult struct {
	Successful []map[string]any `json:"successful"`
	Failed     []struct {
		Index int            `json:"index"`
		Item  any            `json:"item"`
		Error map[string]any `json:"error"`
	} `json:"failed"`
	TotalCount   int                `json:"totalCount"`
	SuccessCount int                `json:"successCount"`
	FailureCount int                `json:"failureCount"`
	Stats        map[string]float64 `json:"stats"`
}

func countOf(t *testing.T, f *fixture, entity string) int {
	t.Helper()
	var res listResult
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/"+entity+"/query", f.key, `{"includeCount": true, "limit": 1}`).Decode(t, &res)
	return *res.Count
}

func eventCount(t *testing.T, f *fixture, typ string) int {
	t.Helper()
	var n int
	if err := testenv.DB(t).QueryRow(`SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND type = $2`, f.tid, typ).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestBatchCreate(t *testing.T) {
	f := storeSetup(t)
	before, createdEvents := countOf(t, f, "Product"), eventCount(t, f, "entity.created")

	t.Run("success: 201, records in order, one event per item, real stats", func(t *testing.T) {
		items := make([]any, 1000)
		for i := range items {
			items[i] = map[string]any{"name": fmt.Sprintf("item %04d", i), "price": i, "tags": []any{"bulk"}, "sku": fmt.Sprintf("B-%d", i), "embedding": []any{i, 1, 0}}
		}
		var res batchResult
		f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": items}).Decode(t, &res)
		if res.TotalCount != 1000 || res.SuccessCount != 1000 || res.FailureCount != 0 || len(res.Successful) != 1000 || len(res.Failed) != 0 {
			t.Fatalf("result counts: total %d success %d failure %d", res.TotalCount, res.SuccessCount, res.FailureCount)
		}
		for i, r := range res.Successful {
			if r["name"] != fmt.Sprintf("item %04d", i) || r["id"] == nil || r["createdAt"] == nil || r["stock"].(float64) != 0 {
				t.Fatalf("item %d: %+v", i, r)
			}
		}
		if res.Stats["processingTimeMs"] <= 0 || res.Stats["databaseTimeMs"] <= 0 || res.Stats["processingTimeMs"] < res.Stats["databaseTimeMs"] {
			t.Fatalf("stats: %+v", res.Stats)
		}
		if got := countOf(t, f, "Product"); got != before+1000 {
			t.Fatalf("count %d, want %d", got, before+1000)
		}
		if got := eventCount(t, f, "entity.created"); got != createdEvents+1000 {
			t.Fatalf("events %d, want %d", got, createdEvents+1000)
		}
	})

	t.Run("rejected: 400 lists every failed item, nothing written", func(t *testing.T) {
		n, ev := countOf(t, f, "Product"), eventCount(t, f, "entity.created")
		items := []any{
			map[string]any{"name": "ok 1"},
			map[string]any{"price": 3},                      // missing required
			map[string]any{"name": "ok 2", "price": "high"}, // wrong type
			"not an object",
			map[string]any{"name": "ok 3", "colour": "red"}, // unknown field
			map[string]any{"name": "dup", "sku": "X-1"},
			map[string]any{"name": "dup", "sku": "X-1"},   // duplicate unique value in the batch
			map[string]any{"name": "taken", "sku": "D-1"}, // unique value already stored
		}
		r := f.app.Do(t, "POST", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": items})
		if r.Status != 400 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var res batchResult
		r.Decode(t, &res)
		want := map[int]string{1: "name", 2: "price", 3: "", 4: "colour", 6: "sku", 7: "sku"}
		if res.FailureCount != len(want) || res.SuccessCount != 0 || len(res.Successful) != 0 || res.TotalCount != len(items) {
			t.Fatalf("counts: %s", r.Body)
		}
		for _, fl := range res.Failed {
			field, ok := want[fl.Index]
			if !ok {
				t.Errorf("unexpected failure %d: %+v", fl.Index, fl)
				continue
			}
			if fl.Error["code"] == nil || fl.Error["message"] == nil || fmt.Sprint(fl.Error["field"]) != field && field != "" {
				t.Errorf("failure %d: %+v", fl.Index, fl.Error)
			}
			if fl.Item == nil {
				t.Errorf("failure %d does not echo its item", fl.Index)
			}
		}
		if got := countOf(t, f, "Product"); got != n {
			t.Fatalf("a rejected batch wrote: count %d, want %d", got, n)
		}
		if got := eventCount(t, f, "entity.created"); got != ev {
			t.Fatalf("a rejected batch emitted events: %d, want %d", got, ev)
		}
	})

	t.Run("limits and shape", func(t *testing.T) {
		tooMany := make([]any, 1001)
		for i := range tooMany {
			tooMany[i] = map[string]any{"name": "x"}
		}
		cases := []struct {
			name, method, body string
			field              string
		}{
			{"1001 items", "POST", "", "items"},
			{"no items", "POST", `{}`, "items"},
			{"items not array", "POST", `{"items": {}}`, "items"},
			{"empty", "POST", `{"items": []}`, "items"},
			{"unknown member", "POST", `{"items": [{"name": "a"}], "extra": 1}`, "extra"},
			{"delete without ids", "DELETE", `{"items": []}`, "ids"},
		}
		for _, tc := range cases {
			body := any(tc.body)
			if tc.body == "" {
				body = map[string]any{"items": tooMany}
			}
			r := f.app.Do(t, tc.method, "/api/v1/dynamic/Product/batch", f.key, body)
			if r.Status != 400 {
				t.Errorf("%s: status %d: %s", tc.name, r.Status, r.Body)
				continue
			}
			assertErrField(t, r, tc.field)
		}
	})
}

func TestBatchUpdateDelete(t *testing.T) {
	f := storeSetup(t)
	updated := eventCount(t, f, "entity.updated")

	t.Run("update patches only named fields", func(t *testing.T) {
		var res batchResult
		f.app.Must(t, 200, "PATCH", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": []any{
			map[string]any{"id": f.p[1], "data": map[string]any{"price": 25}},
			map[string]any{"id": f.p[0], "data": map[string]any{"stock": 9, "tags": []any{"x"}}},
		}}).Decode(t, &res)
		if res.SuccessCount != 2 || res.Successful[0]["id"] != f.p[1] || res.Successful[0]["price"].(float64) != 25 ||
			res.Successful[0]["name"] != "50% off_chair" || res.Successful[1]["stock"].(float64) != 9 || res.Successful[1]["price"].(float64) != 100 {
			t.Fatalf("update: %+v", res.Successful)
		}
		if got := eventCount(t, f, "entity.updated"); got != updated+2 {
			t.Fatalf("events %d, want %d", got, updated+2)
		}
	})

	t.Run("update rejected: missing id, unknown id, bad data, duplicate", func(t *testing.T) {
		r := f.app.Do(t, "PATCH", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": []any{
			map[string]any{"id": f.p[2], "data": map[string]any{"price": 1}},
			map[string]any{"data": map[string]any{"price": 1}},
			map[string]any{"id": f.p[3], "data": map[string]any{"price": "x"}},
			map[string]any{"id": f.p[2], "data": map[string]any{"price": 2}},
		}})
		if r.Status != 400 {
			t.Fatalf("status %d: %s", r.Status, r.Body)
		}
		var res batchResult
		r.Decode(t, &res)
		if res.FailureCount != 3 || res.Failed[0].Index != 1 || res.Failed[0].Error["field"] != "id" || res.Failed[1].Error["field"] != "price" || res.Failed[2].Index != 3 {
			t.Fatalf("failures: %s", r.Body)
		}
		r = f.app.Do(t, "PATCH", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": []any{
			map[string]any{"id": f.p[2], "data": map[string]any{"price": 1}},
			map[string]any{"id": "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", "data": map[string]any{"price": 1}},
		}})
		r.Decode(t, &res)
		if r.Status != 400 || res.FailureCount != 1 || res.Failed[0].Index != 1 || res.Failed[0].Error["code"] != "NOT_FOUND" {
			t.Fatalf("unknown id: %d %s", r.Status, r.Body)
		}
		var lamp map[string]any
		f.app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+f.p[2], f.key, nil).Decode(t, &lamp)
		if lamp["price"] != nil {
			t.Fatalf("rejected batch updated a record: %+v", lamp)
		}
	})

	t.Run("delete", func(t *testing.T) {
		deleted := eventCount(t, f, "entity.deleted")
		r := f.app.Do(t, "DELETE", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"ids": []any{f.p[2], "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", 5}})
		var res batchResult
		r.Decode(t, &res)
		if r.Status != 400 || res.FailureCount != 1 || res.Failed[0].Index != 2 {
			t.Fatalf("bad id type: %d %s", r.Status, r.Body)
		}
		r = f.app.Do(t, "DELETE", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"ids": []any{f.p[2], "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}})
		r.Decode(t, &res)
		if r.Status != 400 || res.FailureCount != 1 || res.Failed[0].Index != 1 || res.Failed[0].Error["code"] != "NOT_FOUND" {
			t.Fatalf("unknown id: %d %s", r.Status, r.Body)
		}
		f.app.Must(t, 200, "GET", "/api/v1/dynamic/Product/"+f.p[2], f.key, nil)
		f.app.Must(t, 200, "DELETE", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"ids": []any{f.p[2], f.p[3]}}).Decode(t, &res)
		if res.SuccessCount != 2 || res.Successful[0]["id"] != f.p[2] || res.Successful[1]["name"] != "Oak table" {
			t.Fatalf("delete result: %+v", res)
		}
		f.app.Must(t, 404, "GET", "/api/v1/dynamic/Product/"+f.p[3], f.key, nil)
		if got := eventCount(t, f, "entity.deleted"); got != deleted+2 {
			t.Fatalf("events %d, want %d", got, deleted+2)
		}
	})
}

// TestConcurrentWriters runs batches and single creates at once: every
// batch commits whole, and a unique value claimed by racing batches ends
// up in exactly one of them (the loser gets 409 and writes nothing).
func TestConcurrentWriters(t *testing.T) {
	f := storeSetup(t)
	before := countOf(t, f, "Product")
	const writers, per = 8, 50
	var wg sync.WaitGroup
	statuses := make([]int, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			items := make([]any, per)
			for i := range items {
				items[i] = map[string]any{"name": fmt.Sprintf("w%d-%d", w, i), "sku": fmt.Sprintf("W%d-%d", w, i)}
			}
			if w%2 == 1 {
				items[0] = map[string]any{"name": "contested", "sku": "CONTESTED"}
			}
			statuses[w] = f.app.Do(t, "POST", "/api/v1/dynamic/Product/batch", f.key, map[string]any{"items": items}).Status
		}(w)
	}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f.app.Must(t, 201, "POST", "/api/v1/dynamic/Product", f.key, map[string]any{"name": fmt.Sprintf("single %d", i)})
		}(i)
	}
	wg.Wait()
	ok, contestedWins := 0, 0
	for w, s := range statuses {
		switch s {
		case 201:
			ok++
			if w%2 == 1 {
				contestedWins++
			}
		case 409, 400:
			if w%2 == 0 {
				t.Errorf("writer %d without contested value failed: %d", w, s)
			}
		default:
			t.Errorf("writer %d: status %d", w, s)
		}
	}
	if contestedWins != 1 {
		t.Fatalf("%d batches claimed the same unique value (statuses %v)", contestedWins, statuses)
	}
	if got, want := countOf(t, f, "Product"), before+ok*per+20; got != want {
		t.Fatalf("count %d, want %d (a batch was partly written?)", got, want)
	}
	var res listResult
	f.app.Must(t, 200, "POST", "/api/v1/dynamic/Product/query", f.key, `{"where": {"sku": "CONTESTED"}}`).Decode(t, &res)
	if len(res.Items) != 1 {
		t.Fatalf("contested rows: %d", len(res.Items))
	}
	_ = strings.TrimSpace
}

func dbOf(t *testing.T) interface {
	QueryRow(string, ...any) *sql.Row
} {
	return testenv.DB(t)
}

package operation

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/schema"
)

func cachingEngine() *Frontend {
	return NewFrontend(Limits{})
}

// TestPreparedOperationsFollowTheModel: a document prepared for one model
// (schema version × visibility) is never served to another: a narrower key
// and a changed schema validate it afresh against what they may see.
func TestPreparedOperationsFollowTheModel(t *testing.T) {
	eng := cachingEngine()
	def := modeltest.Def(t, "shop.json")
	full, err := model.Build(def)
	if err != nil {
		t.Fatal(err)
	}
	q := `{ categories { name } products { id } }`
	first, res := eng.Prepare(context.Background(), full, protocol.Request{Query: q})
	if res != nil {
		t.Fatalf("full model: %+v", res.Errors)
	}
	again, res := eng.Prepare(context.Background(), full, protocol.Request{Query: q})
	if res != nil || again.Op != first.Op {
		t.Fatalf("the same document for the same model was prepared twice (%v)", res)
	}

	// A key that may read products only: Category is not in its schema.
	narrow, err := model.Visible(def, principal(t, "entity:Product:read"))
	if err != nil {
		t.Fatal(err)
	}
	if _, res := eng.Prepare(context.Background(), narrow, protocol.Request{Query: q}); res == nil ||
		res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "categories") {
		t.Fatalf("a narrow key got the full key's plan: %+v", res)
	}

	// The next schema version drops Category.
	var next schema.Definition
	b, _ := json.Marshal(def)
	_ = json.Unmarshal(b, &next)
	next.Relationships = nil
	for i := range next.Entities {
		if next.Entities[i].Name == "Category" {
			next.Entities = append(next.Entities[:i], next.Entities[i+1:]...)
			break
		}
	}
	changed, err := model.Build(&next)
	if err != nil {
		t.Fatal(err)
	}
	if _, res := eng.Prepare(context.Background(), changed, protocol.Request{Query: q}); res == nil ||
		res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" {
		t.Fatalf("a changed schema got the old version's plan: %+v", res)
	}
	// Refusals are not cached; the full model's entry is still there.
	if n, _ := eng.cache.stats(); n != 1 {
		t.Errorf("%d cached operations, want 1 (only the one that prepared)", n)
	}
}

// TestPreparedOperationsRecheckVariables: a cached document whose limits
// depend on its variables is measured again with each request's, and its
// variables are validated per request.
func TestPreparedOperationsRecheckVariables(t *testing.T) {
	eng := cachingEngine()
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	q := `query($n: Int, $m: Int = 2) { products(limit: $n) { categories(limit: $m) { products(limit: $n) { id name } } } }`
	pr, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q, Variables: map[string]any{"n": json.Number("5")}})
	if res != nil {
		t.Fatalf("small limits: %+v", res.Errors)
	}
	if pr.Vars["m"] != int64(2) {
		t.Errorf("default of $m: %#v", pr.Vars["m"])
	}
	_, res = eng.Prepare(context.Background(), m, protocol.Request{Query: q, Variables: map[string]any{"n": json.Number("100000")}})
	if res == nil || !strings.Contains(res.Errors[0].Message, "complexity") {
		t.Fatalf("the cached plan skipped the limits for other variables: %+v", res)
	}
	_, res = eng.Prepare(context.Background(), m, protocol.Request{Query: q, Variables: map[string]any{"n": "many"}})
	if res == nil || res.Errors[0].Extensions["code"] != "BAD_REQUEST" {
		t.Fatalf("a string for $n: Int: %+v", res)
	}
	if pr, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q, Variables: map[string]any{"n": json.Number("3")}}); res != nil || pr.Vars["n"] != json.Number("3") {
		t.Fatalf("after refusals the document still prepares: %+v", res)
	}
	// A single value for a list-typed variable is a list of one; the
	// request's own map is left as sent.
	sent := map[string]any{"ids": "x"}
	pr, res = eng.Prepare(context.Background(), m, protocol.Request{Query: `query($ids: [ID!]) { products(where: {id: {in: $ids}}) { id } }`, Variables: sent})
	if res != nil {
		t.Fatalf("single value for a list: %+v", res.Errors)
	}
	if l, ok := pr.Vars["ids"].([]any); !ok || len(l) != 1 || l[0] != "x" || sent["ids"] != "x" {
		t.Errorf("coerced %#v, sent %#v", pr.Vars["ids"], sent["ids"])
	}
}

// TestPreparedOperationsBounded: the cache holds at most its entries and
// bytes, evicting the least recently used.
func TestPreparedOperationsBounded(t *testing.T) {
	eng := cachingEngine()
	eng.cache = newOpCache(3, 1<<30)
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, res := eng.Prepare(context.Background(), m, protocol.Request{Query: fmt.Sprintf("{ a%d: productsCount }", i)}); res != nil {
			t.Fatal(res.Errors)
		}
	}
	if n, _ := eng.cache.stats(); n != 3 {
		t.Errorf("%d entries, bound 3", n)
	}
	pr, _ := eng.Prepare(context.Background(), m, protocol.Request{Query: "{ a0: productsCount }"})
	size := pr.Op.size
	eng.cache = newOpCache(100, 2*size+size/2)
	for i := 0; i < 10; i++ {
		eng.Prepare(context.Background(), m, protocol.Request{Query: fmt.Sprintf("{ a%d: productsCount }", i)})
	}
	if n, bytes := eng.cache.stats(); n != 2 || bytes > 2*size+size/2 {
		t.Errorf("%d entries of %d bytes, bound %d bytes", n, bytes, 2*size+size/2)
	}
}

// TestPreparedOperationsConcurrent: many goroutines preparing and
// executing the same and different documents share plans safely (run
// under -race by make test).
func TestPreparedOperationsConcurrent(t *testing.T) {
	eng := cachingEngine()
	eng.cache = newOpCache(8, 1<<30)
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				q := fmt.Sprintf(`query($n: Int) { products(limit: $n) { id ...F } x%d: productsCount } fragment F on Product { name }`, (g+i)%12)
				pr, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q, Variables: map[string]any{"n": json.Number("2")}})
				if res != nil {
					t.Error(res.Errors)
					return
				}
				if fs := pr.Op.SelectionSet; len(fs) != 2 || fs[0].(*Field).ArgumentMap(pr.Vars)["limit"] != json.Number("2") {
					t.Errorf("plan: %+v", fs)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPreparedOperationsDoNotPinModels: the cache holds models weakly, so
// the models of a replaced schema version can be collected while their
// operations wait for eviction.
func TestPreparedOperationsDoNotPinModels(t *testing.T) {
	eng := cachingEngine()
	def := modeltest.Def(t, "shop.json")
	prepare := func() {
		m, err := model.Build(def)
		if err != nil {
			t.Fatal(err)
		}
		if _, res := eng.Prepare(context.Background(), m, protocol.Request{Query: "{ productsCount }"}); res != nil {
			t.Fatal(res.Errors)
		}
	}
	prepare()
	var keys []opKey
	eng.cache.mu.Lock()
	for k := range eng.cache.items {
		keys = append(keys, k)
	}
	eng.cache.mu.Unlock()
	if len(keys) != 1 {
		t.Fatalf("%d entries", len(keys))
	}
	for i := 0; i < 10 && keys[0].m.Value() != nil; i++ {
		runtime.GC()
	}
	if keys[0].m.Value() != nil {
		t.Error("the cache keeps an unreferenced model alive")
	}
}

// TestPreparedOperationsOfSeveralOperations: a document whose other
// operation is invalid is never cached (each request fails afresh), and a
// valid one is cached per operation name, each entry executing its own.
func TestPreparedOperationsOfSeveralOperations(t *testing.T) {
	eng := cachingEngine()
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := "query A { products { id } }\nquery B { nope }"
	for i := 0; i < 2; i++ {
		if _, res := eng.Prepare(context.Background(), m, protocol.Request{Query: bad, OperationName: "A"}); res == nil ||
			res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "nope") {
			t.Fatalf("round %d: an invalid sibling was accepted: %+v", i, res)
		}
	}
	if n, _ := eng.cache.stats(); n != 0 {
		t.Fatalf("a failure was cached: %d entries", n)
	}
	good := "query A { products { id } }\nquery B { categories { name } }"
	for _, name := range []string{"A", "B"} {
		first, res := eng.Prepare(context.Background(), m, protocol.Request{Query: good, OperationName: name})
		if res != nil {
			t.Fatalf("%s: %+v", name, res.Errors)
		}
		again, res := eng.Prepare(context.Background(), m, protocol.Request{Query: good, OperationName: name})
		if res != nil || again.Op != first.Op || executed(first.Op.doc) != name {
			t.Fatalf("%s: not served from the cache, or another operation (%q, %v)", name, executed(first.Op.doc), res)
		}
	}
	if n, _ := eng.cache.stats(); n != 2 {
		t.Fatalf("want one entry per operation name, got %d", n)
	}
}

package operation

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/graphql/protocol"
)

// doubling is the hostile document of doubling fragment spreads: n levels,
// each spreading the next twice, so expanding it visits 2^n leaves.
func doubling(n int, on, root, leaf string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{ %s }\n", strings.ReplaceAll(root, "@", "...F0"))
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "fragment F%d on %s { ...F%d ...F%d }\n", i, on, i+1, i+1)
	}
	fmt.Fprintf(&b, "fragment F%d on %s { %s }\n", n, on, leaf)
	return b.String()
}

func repeated(field string, n int) string { return strings.TrimSpace(strings.Repeat(field+" ", n)) }

func limitsEngine(t testing.TB) (*Frontend, *model.Model) {
	t.Helper()
	m, err := model.Build(modeltest.Def(t, "shop.json"))
	if err != nil {
		t.Fatal(err)
	}
	eng := NewFrontend(Limits{})
	// No cache of prepared operations: every Prepare does the whole work,
	// which is what a new hostile document costs.
	eng.cache = newOpCache(0, 0)
	return eng, m
}

// TestHostileDocumentsRefused: the two documents that used to pin a CPU
// core (doubling fragment spreads; 20,000 repeated fields) are refused by
// the limits with the complexity error, whatever the operation's root.
func TestHostileDocumentsRefused(t *testing.T) {
	eng, m := limitsEngine(t)
	for name, q := range map[string]string{
		"doubling spreads":              doubling(40, "Query", "@", "productsCount"),
		"doubling spreads in a list":    doubling(40, "Product", "products { @ }", "id"),
		"doubling spreads in __schema":  doubling(40, "__Type", "__schema { types { @ } }", "name"),
		"doubling spreads, unused":      doubling(40, "Query", "productsCount", "productsCount"),
		"20000 repeated fields":         "{ products { " + repeated("id", 20000) + " } }",
		"repeated fields in a fragment": "{ products { ...R } } fragment R on Product { " + repeated("id", 20000) + " }",
		// Every operation is validated: the inlining cap counts them all.
		"many operations spreading one fragment": manyOperations("products(limit: 1) { ...F }") + "fragment F on Product { " + repeated("id", 1000) + " }",
	} {
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q})
		if res == nil || len(res.Errors) != 1 || res.Errors[0].Extensions["code"] != "BAD_REQUEST" ||
			!strings.Contains(res.Errors[0].Message, "complexity") && !strings.Contains(res.Errors[0].Message, "selections once its fragments are inlined") {
			t.Errorf("%s: want one complexity or expansion error, got %+v", name, res)
		}
	}
}

func TestLimitsDepthAliasesCycles(t *testing.T) {
	eng, m := limitsEngine(t)
	deep := "{ " + strings.Repeat("products(limit: 1) { categories(limit: 1) { ", 7) + "name" + strings.Repeat(" } }", 7) + " }"
	var aliases strings.Builder
	aliases.WriteString("{ ...A ...A } fragment A on Query {")
	for i := 0; i < 26; i++ {
		fmt.Fprintf(&aliases, " a%d: productsCount", i)
	}
	aliases.WriteString(" }")
	for _, c := range []struct{ name, q, code, msg string }{
		{"depth", deep, "BAD_REQUEST", "levels deep"},
		{"depth through fragments", "{ ...D } fragment D on Query { products(limit: 1) { ...P } } fragment P on Product { " +
			strings.Repeat("categories(limit: 1) { products(limit: 1) { ", 6) + "id" + strings.Repeat(" } }", 6) + " }", "BAD_REQUEST", "levels deep"},
		{"aliases counted per spread", aliases.String(), "BAD_REQUEST", "aliases"},
		{"fragment cycle", "{ products { ...A } } fragment A on Product { ...B } fragment B on Product { id ...A }", "GRAPHQL_VALIDATION_FAILED", "A"},
		{"unknown fragment", "{ products { ...Nope } }", "GRAPHQL_VALIDATION_FAILED", "Nope"},
	} {
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: c.q})
		if res == nil || len(res.Errors) == 0 || res.Errors[0].Extensions["code"] != c.code || !strings.Contains(res.Errors[0].Message, c.msg) {
			t.Errorf("%s: want %s %q, got %+v", c.name, c.code, c.msg, res)
		}
	}
	// Under the limits: a fragment spread many times is measured once and accepted.
	ok := "{ a: products(limit: 2) { ...P } b: products(limit: 2) { ...P } } fragment P on Product { id name categories(limit: 2) { name } }"
	if _, res := eng.Prepare(context.Background(), m, protocol.Request{Query: ok}); res != nil {
		t.Errorf("reused fragment: %+v", res.Errors)
	}
}

// TestLimitsHonourCancellation: a client that went away stops the walk.
func TestLimitsHonourCancellation(t *testing.T) {
	eng, m := limitsEngine(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, res := eng.Prepare(ctx, m, protocol.Request{Query: `{ product(id: "x") { ` + repeated("id", 10000) + " } }"})
	if res == nil || !strings.Contains(res.Errors[0].Message, "cancelled") {
		t.Errorf("cancelled request: %+v", res)
	}
}

// randomDocument builds a document from hostile pieces: nested lists,
// fragment spreads (including doubling chains and cycles), inline
// fragments, aliases and repeated fields, under the size limit.
func randomDocument(r *rand.Rand) string {
	nFrag := r.IntN(12)
	budget := DefaultLimits.MaxDocumentBytes // characters left to emit, roughly
	var b strings.Builder
	var sel func(on string, depth int) string
	sel = func(on string, depth int) string {
		var s strings.Builder
		s.WriteString("{ ")
		n := 1 + r.IntN(6)
		if r.IntN(8) == 0 {
			n = 1 + r.IntN(3000)
		}
		for i := 0; i < n; i++ {
			budget -= 4
			switch k := r.IntN(10); {
			case k < 4 || depth > 14 || budget < 0:
				s.WriteString("id ")
			case k < 6:
				if r.IntN(2) == 0 {
					fmt.Fprintf(&s, "a%d: ", r.IntN(80))
				}
				field := map[string]string{"Product": "categories", "Category": "products"}[on]
				next := map[string]string{"Product": "Category", "Category": "Product"}[on]
				fmt.Fprintf(&s, "%s(limit: %d) %s ", field, r.IntN(200), sel(next, depth+1))
			case k < 8 && nFrag > 0:
				fmt.Fprintf(&s, "...F%d ", r.IntN(nFrag))
			default:
				fmt.Fprintf(&s, "... on %s %s ", on, sel(on, depth+1))
			}
		}
		s.WriteString("}")
		return s.String()
	}
	fmt.Fprintf(&b, "{ products %s }\n", sel("Product", 1))
	for i := 0; i < nFrag; i++ {
		next := i + 1 // a doubling chain, and now and then a cycle
		if next == nFrag || r.IntN(10) == 0 {
			next = r.IntN(nFrag)
		}
		fmt.Fprintf(&b, "fragment F%d on Product { ...F%d ...F%d %s }\n", i, next, next, strings.Trim(sel("Product", 1), "{}"))
	}
	return b.String()
}

// TestLimitsProperty: any generated document under the size limit, and
// every document of the hostile corpus, is accepted or refused by Prepare
// (never a panic, always an answer whose errors carry a code). The CPU
// bound is measured by BenchmarkLimitsWorstCase.
func TestLimitsProperty(t *testing.T) {
	eng, m := limitsEngine(t)
	for name, q := range hostileCorpus() {
		if len(q) > DefaultLimits.MaxDocumentBytes {
			t.Errorf("%s: %d bytes, over the size limit the corpus stays under", name, len(q))
		}
		_, res := eng.Prepare(context.Background(), m, corpusRequest(name, q))
		if res != nil && (len(res.Errors) == 0 || res.Errors[0].Extensions["code"] == nil) {
			t.Errorf("%s: refusal without a coded error: %+v", name, res)
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		q := randomDocument(r)
		if len(q) > DefaultLimits.MaxDocumentBytes {
			continue
		}
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q})
		if res != nil && (len(res.Errors) == 0 || res.Errors[0].Extensions["code"] == nil) {
			t.Fatalf("document %d: refusal without a coded error: %+v", i, res)
		}
	}
}

func conflicting(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "categories(limit: %d) { id } ", i%3+1)
	}
	return b.String()
}

// fragments is n spreads (spreads) or the n fragment definitions
// <prefix>0... on Product, the i-th selecting body(i).
func fragments(prefix string, n int, spreads bool, body func(i int) string) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		if spreads {
			fmt.Fprintf(&b, "...%s%d ", prefix, i)
		} else {
			fmt.Fprintf(&b, " fragment %s%d on Product { %s }", prefix, i, body(i))
		}
	}
	return b.String()
}

// manyFragments: each selecting the same relationship with other arguments.
func manyFragments(n int, spreads bool) string {
	return fragments("G", n, spreads, func(i int) string { return fmt.Sprintf("categories(limit: %d) { id }", i+1) })
}

// sameLeaves: all selecting the same leaf fields.
func sameLeaves(n int, spreads bool) string {
	return fragments("L", n, spreads, func(int) string { return "id name price stock active tags releasedAt launchDate attributes status" })
}

func numbered(prefix string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%s%d ", prefix, i)
	}
	return b.String()
}

// hostileCorpus are the worst documents known, each under the size limit.
func hostileCorpus() map[string]string {
	return map[string]string{
		"doubling-40":             doubling(40, "Query", "@", "productsCount"),
		"doubling-40-introspect":  doubling(40, "__Type", "__schema { types { @ } }", "name"),
		"repeat-20000-list":       "{ products { " + repeated("id", 20000) + " } }",
		"repeat-20000-single":     `{ product(id: "x") { ` + repeated("id", 20000) + " } }",
		"repeat-5000-fragment":    `{ product(id: "x") { ...R } } fragment R on Product { ` + repeated("id", 5000) + " }",
		"repeat-1900-objects":     `{ product(id: "x") { ` + repeated("categories(limit: 1) { id name }", 1900) + " } }",
		"conflicting-2000":        `{ product(id: "x") { ` + conflicting(2000) + " } }",
		"repeat-inline-2900":      `{ product(id: "x") { ` + repeated("... on Product { id }", 2900) + " } }",
		"spreads-of-800-frags":    `{ product(id: "x") { ` + manyFragments(800, true) + " } }" + manyFragments(800, false),
		"nested-inline-fragments": "{ products { " + strings.Repeat("... on Product { ", 3000) + "id" + strings.Repeat(" }", 3000) + " } }",
		// The library's normalizer removes duplicate fields one at a time,
		// rescanning the set after each: the same leaves from many fragments.
		"same-leaves-from-400-frags":  `{ product(id: "x") { ` + sameLeaves(400, true) + " } }" + sameLeaves(400, false),
		"unknown-fields-then-repeats": `{ product(id: "x") { ` + numbered("u", 2000) + repeated("id", 2000) + " } }",
		// Every operation of a document is validated, not only the one
		// executed: many operations, valid or not, or sharing a fragment.
		"many-small-operations":        manyOperations("productsCount"),
		"many-invalid-operations":      manyOperations("nope"),
		"many-operations-one-fragment": manyOperations("products(limit: 1) { ...F }") + "fragment F on Product { " + repeated("id", 10000) + " }",
	}
}

// corpusRequest is the request of a corpus document: the documents of
// many operations execute the first.
func corpusRequest(name, q string) protocol.Request {
	if strings.HasPrefix(name, "many-") {
		return protocol.Request{Query: q, OperationName: "Q0"}
	}
	return protocol.Request{Query: q}
}

// manyOperations is a document of as many operations selecting sel as fit
// in about half the size limit.
func manyOperations(sel string) string {
	var b strings.Builder
	for i := 0; b.Len() < DefaultLimits.MaxDocumentBytes/2; i++ {
		fmt.Fprintf(&b, "query Q%d { %s }\n", i, sel)
	}
	return b.String()
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkLimitsWorstCase reports the CPU one Prepare (parse, limits,
// validation) takes for each hostile document and for random ones; the
// largest is printed as the measured bound (not asserted: the machine is shared).
func BenchmarkLimitsWorstCase(b *testing.B) {
	eng, m := limitsEngine(b)
	docs := hostileCorpus()
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 200; i++ {
		if q := randomDocument(r); len(q) <= DefaultLimits.MaxDocumentBytes {
			docs[fmt.Sprintf("random-%03d", i)] = q
		}
	}
	var worst, worstWall time.Duration
	var worstName string
	for name, q := range docs {
		start, cpu0 := time.Now(), processCPU()
		eng.Prepare(context.Background(), m, corpusRequest(name, q))
		if d := processCPU() - cpu0; d > worst {
			worst, worstWall, worstName = d, time.Since(start), name
		}
	}
	// Process CPU (user+system, GC included) is what a document costs the
	// server; wall time on a shared machine includes time others took.
	fmt.Printf("worst document: %s, %v CPU (%v wall) for one Prepare (%d documents, each <= %d bytes)\n",
		worstName, worst, worstWall, len(docs), DefaultLimits.MaxDocumentBytes)
	for _, name := range []string{"many-small-operations", "many-invalid-operations", "doubling-40", "repeat-20000-list", "repeat-20000-single", "spreads-of-800-frags", "same-leaves-from-400-frags", "repeat-5000-fragment"} {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				eng.Prepare(context.Background(), m, corpusRequest(name, docs[name]))
			}
		})
	}
}

// TestNoDeferDirective: @defer is not implemented, so it is neither in the
// schema introspection shows nor accepted in a document, as in the SDL.
func TestNoDeferDirective(t *testing.T) {
	eng, m := limitsEngine(t)
	if strings.Contains(m.SDL, "@defer") {
		t.Error("the SDL declares @defer")
	}
	for _, d := range m.Intro().Directives {
		if d.Name == "defer" {
			t.Error("the introspection data declares @defer")
		}
	}
	if _, ok := m.Doc().Index.FirstNodeByNameStr("defer"); ok {
		t.Error("the schema introspection reads declares @defer")
	}
	_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: `{ products { id ... @defer { name } } }`})
	if res == nil || res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" {
		t.Errorf("@defer accepted: %+v", res)
	}
}

// TestRepeatedSelectionsMerged: repeated fields under the complexity limit
// (which validation used to compare pairwise) are merged before
// validation; what merging meets that cannot merge is refused at once.
func TestRepeatedSelectionsMerged(t *testing.T) {
	eng, m := limitsEngine(t)
	pr, res := eng.Prepare(context.Background(), m, protocol.Request{Query: `{ product(id: "x") { ` + repeated("id", 20000) + " } }"})
	if res != nil {
		t.Fatalf("20000 repeated fields of one record: %+v", res.Errors)
	}
	if f := pr.Op.SelectionSet[0].(*Field); len(f.SelectionSet) != 1 {
		t.Errorf("the repeated fields were not merged: %d selections", len(f.SelectionSet))
	}
	for _, c := range []struct{ name, q, msg string }{
		{"conflicting arguments", `{ product(id: "x") { ` + conflicting(2000) + " } }", `Fields "categories" conflict`},
		{"alias over another field", `{ products { id id: name } }`, `Fields "id" conflict`},
		{"error inside merged selections", `{ products { categories { id } categories { nope } } }`, `nope`},
	} {
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: c.q})
		if res == nil || res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, c.msg) {
			t.Errorf("%s: want a validation error %q, got %+v", c.name, c.msg, res)
		}
	}
}

// TestValidationFollowsVisibility: validation reads the model a credential
// gets, so a root field its scopes hide is not a field of its schema.
func TestValidationFollowsVisibility(t *testing.T) {
	def := modeltest.Def(t, "shop.json")
	eng, _ := limitsEngine(t)
	for _, scopes := range [][]string{
		{"entity:Product:read"},
		{"entity:Product:read", "entity:Category:read", "relationship:IN_CATEGORY:read"},
		{"entity:Product:read", "entity:Category:read"},
		{"entity:Product:create"},
		{"entity:*:read", "relationship:MEMBER_OF:create"},
	} {
		m, err := model.Visible(def, principal(t, scopes...))
		if err != nil {
			t.Fatalf("%v: %v", scopes, err)
		}
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: "mutation { deleteUser(id: \"x\") { id } }"})
		if res == nil || res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("%v: a hidden root field validated: %+v", scopes, res)
		}
	}
}

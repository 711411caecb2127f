package operation

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/model/modeltest"
	"github.com/dds-project/dds/graphql/protocol"
)

// TestWholeDocumentValidated: a document is valid only when every one of
// its operations is, whichever is executed (as graphql-js, Hasura and
// PostGraphile have it): an invalid sibling operation fails the request,
// located at its bad field, with the chosen operation's errors first.
func TestWholeDocumentValidated(t *testing.T) {
	eng, m := limitsEngine(t)
	type loc = protocol.Location
	for _, c := range []struct {
		name, q, op string
		code, msg   string   // "" code: accepted
		locs        []loc    // of each error, in order
		msgs        []string // each error's message contains
	}{
		{name: "valid siblings, A executed", q: "query A { products { id } }\nquery B { categories { name } }", op: "A"},
		{name: "valid siblings, B executed", q: "query A { products { id } }\nquery B { categories { name } }", op: "B"},
		{name: "invalid sibling", q: "query A { products { id } }\nquery B { nope }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", locs: []loc{{Line: 2, Column: 11}}, msgs: []string{"nope"}},
		{name: "invalid sibling, nested", q: "query A { products { id } }\nquery B {\n  products {\n    nope\n  }\n}", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", locs: []loc{{Line: 4, Column: 5}}, msgs: []string{"nope"}},
		{name: "chosen and sibling invalid", q: "query A { zap }\nquery B { nope }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", locs: []loc{{Line: 1, Column: 11}, {Line: 2, Column: 11}}, msgs: []string{"zap", "nope"}},
		{name: "sibling's missing argument", q: "query A { products { id } }\nquery B { product { id } }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", locs: []loc{{Line: 2, Column: 11}}},
		{name: "sibling's undefined variable", q: "query A { products { id } }\nquery B { products(limit: $n) { id } }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", msgs: []string{"n"}},
		{name: "fragment used only by an invalid sibling", q: "query A { products { id } }\nquery B { products { ...F } }\nfragment F on Product { nope }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", locs: []loc{{Line: 3, Column: 25}}, msgs: []string{"nope"}},
		{name: "fragment shared, valid", q: "query A { products { ...F } }\nquery B { products { ...F } }\nfragment F on Product { id name }", op: "B"},
		{name: "unused fragment", q: "query A { products { id } }\nquery B { categories { name } }\nfragment F on Product { id }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", locs: []loc{{Line: 3, Column: 1}}, msgs: []string{"F"}},
		{name: "sibling subscription of two root fields (the library names no place)", q: "query A { products { id } }\nsubscription B { productCreated { id } productUpdated { id } }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", msgs: []string{"B must only have one root selection"}},
		{name: "sibling subscription of one root field", q: "query A { products { id } }\nsubscription B { productCreated { id } }", op: "A"},
		{name: "sibling mutation invalid", q: "query A { products { id } }\nmutation B { createProduct(input: {nope: 1}) { id } }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED"},
		{name: "operationName missing", q: "query A { products { id } }\nquery B { nope }",
			code: "BAD_REQUEST", msgs: []string{"operationName is required"}},
		{name: "unknown operationName", q: "query A { products { id } }\nquery B { categories { name } }", op: "C",
			code: "BAD_REQUEST", msgs: []string{`unknown operation "C"`}},
		{name: "duplicate operation names", q: "query A { products { id } }\nquery A { categories { name } }", op: "A",
			code: "GRAPHQL_VALIDATION_FAILED", msgs: []string{"A"}},
		{name: "anonymous with a sibling", q: "{ products { id } }\nquery B { categories { name } }", op: "B",
			code: "GRAPHQL_VALIDATION_FAILED", msgs: []string{"anonymous"}},
	} {
		p, res := eng.Prepare(context.Background(), m, protocol.Request{Query: c.q, OperationName: c.op})
		if c.code == "" {
			if res != nil {
				t.Errorf("%s: refused: %+v", c.name, res.Errors)
			} else if got := executed(p.Op.doc); got != c.op {
				t.Errorf("%s: prepared operation %q", c.name, got)
			}
			continue
		}
		if res == nil || len(res.Errors) == 0 {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		for _, e := range res.Errors {
			if e.Extensions["code"] != c.code {
				t.Errorf("%s: want %s, got %+v", c.name, c.code, res.Errors)
			}
			if c.code == "GRAPHQL_VALIDATION_FAILED" && len(e.Locations) == 0 && !strings.Contains(c.name, "names") && !strings.Contains(c.name, "anonymous") {
				t.Errorf("%s: an error without a location: %+v", c.name, e)
			}
		}
		if c.locs != nil {
			if len(res.Errors) != len(c.locs) {
				t.Errorf("%s: want %d errors, got %+v", c.name, len(c.locs), res.Errors)
				continue
			}
			for i, l := range c.locs {
				if len(res.Errors[i].Locations) == 0 || res.Errors[i].Locations[0] != l {
					t.Errorf("%s: error %d: want at %v, got %+v", c.name, i, l, res.Errors[i])
				}
			}
		}
		for i, msg := range c.msgs {
			if i >= len(res.Errors) || !strings.Contains(res.Errors[i].Message, msg) {
				t.Errorf("%s: error %d: want %q, got %+v", c.name, i, msg, res.Errors)
			}
		}
	}
}

// executed is the name of the operation the normalized document keeps.
func executed(doc *ast.Document) string {
	for _, n := range doc.RootNodes {
		if n.Kind == ast.NodeKindOperationDefinition {
			return doc.OperationDefinitionNameString(n.Ref)
		}
	}
	return ""
}

// TestSiblingOperationsSeeTheKeysSchema: a sibling operation is validated
// against what the credential may see, as the executed one is: a narrow
// key's document naming a type it cannot see fails whichever operation
// is executed.
func TestSiblingOperationsSeeTheKeysSchema(t *testing.T) {
	eng, _ := limitsEngine(t)
	def := modeltest.Def(t, "shop.json")
	narrow, err := model.Visible(def, principal(t, "entity:Product:read"))
	if err != nil {
		t.Fatal(err)
	}
	q := "query A { products { id } }\nquery B { categories { name } }"
	if _, res := eng.Prepare(context.Background(), narrow, protocol.Request{Query: q, OperationName: "B"}); res == nil ||
		res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" || !strings.Contains(res.Errors[0].Message, "categories") {
		t.Fatalf("executed: %+v", res)
	}
	_, res := eng.Prepare(context.Background(), narrow, protocol.Request{Query: q, OperationName: "A"})
	if res == nil || len(res.Errors) != 1 || res.Errors[0].Extensions["code"] != "GRAPHQL_VALIDATION_FAILED" ||
		!strings.Contains(res.Errors[0].Message, "categories") || len(res.Errors[0].Locations) == 0 || res.Errors[0].Locations[0] != (protocol.Location{Line: 2, Column: 11}) {
		t.Fatalf("sibling: %+v", res)
	}
	full, err := model.Build(def)
	if err != nil {
		t.Fatal(err)
	}
	if _, res := eng.Prepare(context.Background(), full, protocol.Request{Query: q, OperationName: "A"}); res != nil {
		t.Fatalf("the full key: %+v", res.Errors)
	}
}

// TestManyOperationsRefusedOrLinear: the inlining cap counts the copies of
// all operations together, so operations spreading one large fragment
// cannot multiply the library's work; many small operations are accepted.
func TestManyOperationsRefusedOrLinear(t *testing.T) {
	eng, m := limitsEngine(t)
	var b strings.Builder
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&b, "query Q%d { products(limit: 1) { ...F } }\n", i)
	}
	b.WriteString("fragment F on Product { " + repeated("id", 1000) + " }")
	_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: b.String(), OperationName: "Q0"})
	if res == nil || len(res.Errors) != 1 || !strings.Contains(res.Errors[0].Message, "selections once its fragments are inlined") {
		t.Errorf("40 operations × 1,000 copied selections: %+v", res)
	}
	b.Reset()
	for i := 0; b.Len() < DefaultLimits.MaxDocumentBytes-100; i++ {
		fmt.Fprintf(&b, "query Q%d { productsCount }\n", i)
	}
	if _, res := eng.Prepare(context.Background(), m, protocol.Request{Query: b.String(), OperationName: "Q7"}); res != nil {
		t.Errorf("many small operations: %+v", res.Errors)
	}
}

package operation

import (
	"context"
	"testing"

	"github.com/dds-project/dds/graphql/protocol"
)

// TestRequestErrorsLocated: parse and validation errors carry the code and
// the location in the document clients expect, also where the library
// reports only the path of the selection set it found the error in.
func TestRequestErrorsLocated(t *testing.T) {
	eng, m := limitsEngine(t)
	for _, c := range []struct {
		name, q, code string
		line, col     int
	}{
		{"syntax", "{\n  products(limit: 1 { id } }", "GRAPHQL_PARSE_FAILED", 2, 21},
		{"unexpected end", "{ products { id", "GRAPHQL_PARSE_FAILED", 1, 16},
		{"unknown field", "{\n  products {\n    id\n    nope\n  }\n}", "GRAPHQL_VALIDATION_FAILED", 4, 5},
		{"unknown field under an alias", "{ p: products { categories { nope } } }", "GRAPHQL_VALIDATION_FAILED", 1, 30},
		{"unknown root field", "{ nope }", "GRAPHQL_VALIDATION_FAILED", 1, 3},
		{"missing required argument", "{ products { id }\n  product { id } }", "GRAPHQL_VALIDATION_FAILED", 2, 3},
		{"wrong argument type", `{ products(limit: "x") { id } }`, "GRAPHQL_VALIDATION_FAILED", 1, 19},
		{"unknown fragment", "{ products { ...Nope } }", "GRAPHQL_VALIDATION_FAILED", 1, 14},
		{"fragment never used", "{ products { id } }\nfragment F on Product { id }", "GRAPHQL_VALIDATION_FAILED", 2, 1},
	} {
		_, res := eng.Prepare(context.Background(), m, protocol.Request{Query: c.q})
		if res == nil || len(res.Errors) == 0 {
			t.Errorf("%s: accepted", c.name)
			continue
		}
		e := res.Errors[0]
		if e.Extensions["code"] != c.code || len(e.Locations) == 0 || e.Locations[0] != (protocol.Location{Line: c.line, Column: c.col}) {
			t.Errorf("%s: want %s at %d:%d, got %+v", c.name, c.code, c.line, c.col, res.Errors)
		}
	}
}

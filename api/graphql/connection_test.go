package graphql

import (
	"encoding/base64"
	"fmt"
	"reflect"
	"testing"

	"github.com/dds-project/dds/graphql/model/modeltest"
)

type page struct {
	names            []string
	start, end       string
	hasNext, hasPrev bool
	total            float64
}

func getPage(t *testing.T, e *env, tenant, key, args string) page {
	t.Helper()
	d := e.gql(t, tenant, key, fmt.Sprintf(`{ productsConnection(%s) {
	  totalCount edges { cursor node { name } } pageInfo { hasNextPage hasPreviousPage startCursor endCursor } } }`, args), nil).ok(t)
	c := d["productsConnection"].(map[string]any)
	var p page
	for _, ed := range c["edges"].([]any) {
		p.names = append(p.names, ed.(map[string]any)["node"].(map[string]any)["name"].(string))
	}
	pi := c["pageInfo"].(map[string]any)
	p.hasNext, p.hasPrev = pi["hasNextPage"].(bool), pi["hasPreviousPage"].(bool)
	p.start, _ = pi["startCursor"].(string)
	p.end, _ = pi["endCursor"].(string)
	p.total = c["totalCount"].(float64)
	return p
}

// Cursor paging walks the whole set forward and backward over ties in the
// order key (several products share a price, one has none).
func TestConnectionPagingOverTies(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	tenant, key := e.tenantWith(t, modeltest.Def(t, "shop.json"))
	prices := []any{2, 1, 2, 2, nil, 1, 3}
	for i, pr := range prices {
		f := map[string]any{"name": fmt.Sprintf("p%d", i)}
		if pr != nil {
			f["price"] = pr
		}
		e.create(t, tenant, "Product", f)
	}
	for _, order := range []string{`[{field: "price"}]`, `[{field: "price", direction: DESC}]`, `[{field: "createdAt", direction: DESC}]`} {
		t.Run(order, func(t *testing.T) {
			all := getPage(t, e, tenant, key, "first: 100, orderBy: "+order).names
			if len(all) != len(prices) {
				t.Fatalf("all: %v", all)
			}
			// forward, two at a time
			var fwd []string
			after := ""
			for i := 0; ; i++ {
				args := "first: 2, orderBy: " + order
				if after != "" {
					args += fmt.Sprintf(", after: %q", after)
				}
				p := getPage(t, e, tenant, key, args)
				if p.total != float64(len(prices)) {
					t.Fatalf("totalCount %v", p.total)
				}
				if p.hasPrev != (after != "") {
					t.Errorf("hasPreviousPage %v on page %d", p.hasPrev, i)
				}
				fwd = append(fwd, p.names...)
				if !p.hasNext {
					break
				}
				after = p.end
			}
			if !reflect.DeepEqual(fwd, all) {
				t.Errorf("forward %v, want %v", fwd, all)
			}
			// backward, three at a time, from the end
			var back []string
			before := ""
			for {
				args := "last: 3, orderBy: " + order
				if before != "" {
					args += fmt.Sprintf(", before: %q", before)
				}
				p := getPage(t, e, tenant, key, args)
				if p.hasNext != (before != "") {
					t.Errorf("hasNextPage %v", p.hasNext)
				}
				back = append(append([]string{}, p.names...), back...)
				if !p.hasPrev {
					break
				}
				before = p.start
			}
			if !reflect.DeepEqual(back, all) {
				t.Errorf("backward %v, want %v", back, all)
			}
		})
	}
}

func TestConnectionArgumentErrors(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	tenant, key := e.tenantWith(t, modeltest.Def(t, "shop.json"))
	e.create(t, tenant, "Product", map[string]any{"name": "a"})
	p := getPage(t, e, tenant, key, "first: 1")
	for _, args := range []string{
		"first: 1, last: 1", "first: 101", "last: 101", "first: -1",
		`first: 1, after: "garbage"`,
		fmt.Sprintf(`first: 1, after: %q, orderBy: [{field: "name"}]`, p.end), // a cursor of another order
		// A cursor of a descending order made before the tie-breaking id
		// followed the last key's direction (its keys end in an
		// ascending id): refused, not read in the wrong direction.
		fmt.Sprintf(`first: 1, after: %q, orderBy: [{field: "createdAt", direction: DESC}]`,
			base64.RawURLEncoding.EncodeToString([]byte(`{"k":["createdAt:desc","id"],"v":["2025-01-01T00:00:00Z","00000000-0000-7000-8000-000000000001"]}`))),
	} {
		r := e.gql(t, tenant, key, fmt.Sprintf(`{ productsConnection(%s) { totalCount } }`, args), nil)
		if r.Status != 200 || len(r.Errors) != 1 || r.code(0) != "VALIDATION_ERROR" || r.Data != nil {
			t.Errorf("%s: %d %s", args, r.Status, r.Body)
		}
	}
}

package graphql

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/query"
)

// Lists with relationship selections that Postgres can build as the
// response has them are written from its bytes (exact.go); every other
// selection is reshaped by Go. Both ways must give the same bytes: each
// query runs through a server writing Postgres' JSON as it stands and one
// with that turned off (noExact), over the same records.
func TestExactOutputWritesWhatTheStreamWrites(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	odd := e.create(t, s.tenant, "Product", map[string]any{
		"name": "Tarte \"Tatin\" \\ é 🍎 \u2028 <&> \t tab", "price": -0.000125, "stock": 9007199254740993,
		"tags": []string{"a, \n b", "ü"}, "attributes": map[string]any{"k": []any{1, "x\ny", map[string]any{"z": nil}}},
		"embedding": []float64{0.5, -1, 1e-7}, "launchDate": "2024-02-29", "releasedAt": "2024-01-01T12:34:56.789Z"})
	e.link(t, s.tenant, "IN_CATEGORY", odd, s.c[0], map[string]any{"position": 3})
	e.link(t, s.tenant, "IN_CATEGORY", odd, s.c[1], nil)

	// The same front end twice, over stores that report what they run.
	var mu sync.Mutex
	var ran []string
	store := e.Store.Observed(func(st query.Statement) {
		mu.Lock()
		ran = append(ran, st.SQL)
		mu.Unlock()
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	exactR, streamR := api.NewRouter(e.Authn, nil, 16<<20), api.NewRouter(e.Authn, nil, 16<<20)
	New(store, nil, Limits{MaxComplexity: 1 << 30}, log).Routes(exactR)
	streamed := New(e.Store, nil, Limits{MaxComplexity: 1 << 30}, log)
	streamed.engine.noExact = true
	streamed.Routes(streamR)
	exactSrv, streamSrv := httptest.NewServer(exactR), httptest.NewServer(streamR)
	defer exactSrv.Close()
	defer streamSrv.Close()

	const everything = `id createdAt updatedAt name price stock active tags releasedAt launchDate attributes status embedding`
	for _, c := range []struct {
		name, query string
		vars        map[string]any
		exact       bool // written as Postgres built it
	}{
		{"the bench's nested query", `{ products(orderBy: [{field: "name"}]) { id name price categories { id name products { id name price } } } }`, nil, true},
		{"every column type, escapes and unicode", `{ products(orderBy: [{field: "name"}]) { ` + everything + ` categories { ` + `id name rank` + ` } } }`, nil, true},
		{"aliases, repeated fields, __typename", `{ list: products(orderBy: [{field: "name"}], limit: 2, offset: 1) { __typename a: name b: name t: __typename name
		    cats: categories(limit: 1) { n: name __typename } again: categories(orderBy: [{field: "name", direction: DESC}]) { name } } }`, nil, true},
		{"fragments and inline fragments", `query { products(orderBy: [{field: "name"}]) { ...P categories { ... on Category { rank } ...C } } }
		    fragment P on Product { name ... on Product { price } } fragment C on Category { name products(limit: 1) { ...P } }`, nil, true},
		{"one field merged from two occurrences", `{ products(orderBy: [{field: "name"}]) { categories { name } categories { rank } } }`, nil, true},
		{"@include from a variable", `query($i: Boolean!) { products(orderBy: [{field: "name"}]) { name categories @include(if: $i) { name } c2: categories @skip(if: $i) { id } } }`,
			map[string]any{"i": true}, true},
		{"@include false", `query($i: Boolean!) { products(orderBy: [{field: "name"}]) { name categories @include(if: $i) { name } c2: categories @skip(if: $i) { id } } }`,
			map[string]any{"i": false}, true},
		{"empty nested lists and an empty page", `{ a: products(orderBy: [{field: "name"}]) { name categories(where: {name: {equals: "none"}}) { name } }
		    b: products(limit: 0) { name categories { name } } }`, nil, true},
		{"three levels", `{ categories(orderBy: [{field: "name"}]) { name products(orderBy: [{field: "name"}]) { name categories(orderBy: [{field: "rank"}]) { rank } } } }`, nil, true},
		{"file metadata: reshaped", `{ products(orderBy: [{field: "name"}]) { name manual manualFile { fileName } categories { name } } }`, nil, false},
		{"relationship properties: reshaped", `{ products(orderBy: [{field: "name"}]) { name categoriesConnection { edges { id properties { position } node { name } } } } }`, nil, false},
		{"nested properties under a list: reshaped", `{ products(orderBy: [{field: "name"}]) { name categories { name productsConnection(limit: 2) { edges { properties { __typename position } node { name } } } } } }`, nil, false},
		{"connection with cursors", `{ productsConnection(first: 2, orderBy: [{field: "name"}]) { totalCount edges { cursor node { name categories { name } } } pageInfo { hasNextPage endCursor } } }`, nil, false},
		{"flat list", `{ products(orderBy: [{field: "name"}]) { ` + everything + ` } }`, nil, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			mu.Lock()
			ran = nil
			mu.Unlock()
			fast := (&env{URL: exactSrv.URL}).gql(t, s.tenant, s.key, c.query, c.vars)
			slow := (&env{URL: streamSrv.URL}).gql(t, s.tenant, s.key, c.query, c.vars)
			fast.ok(t)
			if !bytes.Equal(fast.Body, slow.Body) {
				t.Fatalf("written as Postgres built it:\n%s\nreshaped:\n%s", fast.Body, slow.Body)
			}
			mu.Lock()
			defer mu.Unlock()
			exact := len(ran) > 0
			for _, sql := range ran {
				exact = exact && !strings.Contains(sql, `AS "_n`) && strings.Contains(sql, `'[]'::json) AS "`)
			}
			if exact != c.exact {
				t.Errorf("written as Postgres built it = %v, want %v; statements: %q", exact, c.exact, ran)
			}
		})
	}
}

func TestWriteExactItemsDropsOnlyJSONAggSeparators(t *testing.T) {
	for raw, want := range map[string]string{
		`{"items" : [{"a":1}, ` + "\n " + `{"a":"x, \n y"}]}`: `[{"a":1},{"a":"x, \n y"}]`,
		`{"items" : []}`: `[]`,
		`{"items" : [{"l":[{"b":1}, ` + "\n " + `{"b":2}]}, ` + "\n " + `{}]}`: `[{"l":[{"b":1},{"b":2}]},{}]`,
	} {
		var b bytes.Buffer
		i, err := memberAt([]byte(raw), "items")
		if err != nil || !writeExactItems(&b, []byte(raw), i) || b.String() != want {
			t.Errorf("%s: wrote %s (%v), want %s", raw, b.String(), err, want)
		}
	}
	for _, raw := range []string{
		`{"items" : [{"a":1},` + "\n" + `{"a":2}]}`, // a newline in another form
		`{"items" : [{"a":1}], "count" : 1}`,        // more than the items
		`{"items" : null}`,
		"{\"items\" : [{\"a\":1}, \n {\"a\":2}]}\n",
	} {
		b := bytes.NewBufferString("keep")
		i, _ := memberAt([]byte(raw), "items")
		if writeExactItems(b, []byte(raw), i) || b.String() != "keep" {
			t.Errorf("%q: written as it stands: %s", raw, b.String())
		}
	}
}

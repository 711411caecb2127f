package graphql

import (
	"bytes"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/dds-project/dds/api"
	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/query"
)

// Lists (flat, or with relationship selections) that Postgres can build as
// the response has them are written from its bytes (graphql/exec/exact.go); every other
// selection is reshaped by Go. Both ways must give the same bytes: each
// query runs through a server writing Postgres' JSON as it stands and one
// with that turned off (noExact), over the same records.
func TestExactOutputWritesWhatTheStreamWrites(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	odd := createOdd(t, e, s.tenant)
	e.link(t, s.tenant, "IN_CATEGORY", odd, s.c[0], map[string]any{"position": 3})
	e.link(t, s.tenant, "IN_CATEGORY", odd, s.c[1], nil)

	narrow := e.key(t, s.tenant, "entity:Product:read")
	srv := newExactServers(t, e)

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
		{"relationship aggregates", `{ categories(orderBy: [{field: "rank"}]) { name productsAggregate { __typename count avg { price } total: sum { stock }
		    max { __typename price name } } live: productsAggregate(where: {status: {equals: live}}) { n: count c: count } none: productsAggregate(where: {name: {equals: "none"}}) { count min { price } } } }`, nil, true},
		{"relationship aggregate only __typename, and under a nested list", `{ products(orderBy: [{field: "name"}]) { name a: categoriesAggregate { __typename }
		    categories(orderBy: [{field: "name"}]) { name productsAggregate { count avg { price } } } } }`, nil, true},
		{"relationship aggregate, fragments and @include", `query($i: Boolean!) { categories(orderBy: [{field: "rank"}]) { ...C productsAggregate { sum @include(if: $i) { stock } } } }
		    fragment C on Category { name productsAggregate { count ... on ProductRelatedAggregate { max { price } } } }`, map[string]any{"i": true}, true},
		{"relationship aggregate with file metadata: reshaped", `{ products(orderBy: [{field: "name"}]) { name manualFile { fileName } categoriesAggregate { count } } }`, nil, false},
		{"relationship aggregate beside edges: reshaped", `{ categories(orderBy: [{field: "rank"}]) { name productsAggregate { count } productsConnection { edges { node { name } } } } }`, nil, false},
		{"file metadata: reshaped", `{ products(orderBy: [{field: "name"}]) { name manual manualFile { fileName } categories { name } } }`, nil, false},
		{"relationship properties: reshaped", `{ products(orderBy: [{field: "name"}]) { name categoriesConnection { edges { id properties { position } node { name } } } } }`, nil, false},
		{"nested properties under a list: reshaped", `{ products(orderBy: [{field: "name"}]) { name categories { name productsConnection(limit: 2) { edges { properties { __typename position } node { name } } } } } }`, nil, false},
		{"connection with cursors", `{ productsConnection(first: 2, orderBy: [{field: "name"}]) { totalCount edges { cursor node { name categories { name } } } pageInfo { hasNextPage endCursor } } }`, nil, false},
		{"flat list, every column type, escapes and unicode", `{ products(orderBy: [{field: "name"}]) { ` + everything + ` } }`, nil, true},
		{"flat list, where, orderBy, limit and offset literals", `{ products(where: {price: {gte: 1}, name: {contains: "a"}}, orderBy: [{field: "price", direction: DESC}, {field: "name"}], limit: 2, offset: 1) { name price } }`, nil, true},
		{"flat list, arguments from variables", `query($n: Float!, $o: [ProductOrderBy!], $l: Int, $off: Int) { products(where: {price: {gte: $n}}, orderBy: $o, limit: $l, offset: $off) { id name price } }`,
			map[string]any{"n": 0.5, "o": []any{map[string]any{"field": "name", "direction": "DESC"}}, "l": 3, "off": 0}, true},
		{"flat list, aliases, repeated fields, __typename", `{ list: products(orderBy: [{field: "name"}]) { __typename a: name b: name t: __typename name name id: price key: id } }`, nil, true},
		{"flat list, only __typename", `{ products(orderBy: [{field: "name"}]) { __typename } }`, nil, true},
		{"flat list, fragments", `query { products(orderBy: [{field: "name"}]) { ...P ... on Product { stock } } } fragment P on Product { name price }`, nil, true},
		{"flat list, empty", `{ products(where: {name: {equals: "none"}}) { id name } }`, nil, true},
		{"flat list, one field given twice (normalized into one)", `{ products(orderBy: [{field: "name"}]) { name } products(orderBy: [{field: "name"}]) { price } }`, nil, true},
		{"flat list, @include from a variable (members built per request)", `query($i: Boolean!) { products(orderBy: [{field: "name"}]) { name price @include(if: $i) } }`, map[string]any{"i": true}, true},
		{"flat list, @include false", `query($i: Boolean!) { products(orderBy: [{field: "name"}]) { name price @include(if: $i) } }`, map[string]any{"i": false}, true},
		{"flat list, file metadata: reshaped", `{ products(orderBy: [{field: "name"}]) { name manualFile { fileName } } }`, nil, false},
		{"flat list with a narrow key", `{ products(orderBy: [{field: "name"}]) { id name price createdAt } }`, nil, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			key := s.key
			if strings.Contains(c.name, "narrow key") {
				key = narrow
			}
			// The first request builds what the operation keeps (a flat
			// list's members, and its statement when its arguments are
			// literals), the second runs what was kept.
			first, _ := srv.both(t, s.tenant, key, c.query, c.vars)
			fast, ran := srv.both(t, s.tenant, key, c.query, c.vars)
			fast.ok(t)
			if !bytes.Equal(first.Body, fast.Body) {
				t.Fatalf("the second answer differs:\n%s\n%s", first.Body, fast.Body)
			}
			// A reshaped statement selects its rows' id first, unnamed,
			// and names nested selections _n1, _n2…; the exact one names
			// every member.
			exact := len(ran) > 0
			for _, sql := range ran {
				exact = exact && !strings.Contains(sql, `AS "_n`) && !strings.Contains(sql, `(SELECT t."id",`) && !strings.Contains(sql, `(SELECT t."id")`)
			}
			if exact != c.exact {
				t.Errorf("written as Postgres built it = %v, want %v; statements: %q", exact, c.exact, ran)
			}
		})
	}
}

// A kept flat list whose arguments are variables binds each request's
// values: its statement is not kept from the first request.
func TestExactFlatListBindsEachRequestsVariables(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	srv := newExactServers(t, e)
	const q = `query($n: Float!, $l: Int) { products(where: {price: {gte: $n}}, orderBy: [{field: "price"}], limit: $l) { name price } }`
	for _, c := range []struct {
		vars map[string]any
		want string
	}{
		{map[string]any{"n": 1, "l": 5}, `{"products":[{"name":"Apple","price":1.5},{"name":"Carrot cake","price":3}]}`},
		{map[string]any{"n": 0, "l": 1}, `{"products":[{"name":"Banana","price":0.5}]}`},
		{map[string]any{"n": 2, "l": 5}, `{"products":[{"name":"Carrot cake","price":3}]}`},
	} {
		res, ran := srv.both(t, s.tenant, s.key, q, c.vars)
		jsonEq(t, res.ok(t), c.want)
		if len(ran) != 1 || strings.Contains(ran[0], `(SELECT t."id",`) {
			t.Errorf("ran %q, want one statement building the response's members", ran)
		}
	}
}

// createOdd creates a Product with every column type set, escapes and
// unicode in its strings.
func createOdd(t *testing.T, e *env, tenant string) string {
	return e.create(t, tenant, "Product", map[string]any{
		"name": "Tarte \"Tatin\" \\ é 🍎 \u2028 <&> \t tab", "price": -0.000125, "stock": 9007199254740993,
		"tags": []string{"a, \n b", "ü"}, "attributes": map[string]any{"k": []any{1, "x\ny", map[string]any{"z": nil}}},
		"embedding": []float64{0.5, -1, 1e-7}, "launchDate": "2024-02-29", "releasedAt": "2024-01-01T12:34:56.789Z"})
}

// exactServers is the same GraphQL front end twice over one environment:
// one writing Postgres' JSON as it stands where it can, reporting the
// statements it runs, and one reshaping every result (noExact).
type exactServers struct {
	exact, stream string
	mu            sync.Mutex
	ran           []string
}

func newExactServers(t *testing.T, e *env) *exactServers {
	srv := &exactServers{}
	store := e.Store.Observed(func(st query.Statement) {
		srv.mu.Lock()
		srv.ran = append(srv.ran, st.SQL)
		srv.mu.Unlock()
	})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	exactR, streamR := api.NewRouter(e.Authn, nil, 16<<20), api.NewRouter(e.Authn, nil, 16<<20)
	NewHandler(gql.NewEngine(store, Limits{MaxComplexity: 1 << 30}, log), store, nil, log).Routes(exactR)
	streamed := NewHandler(gql.NewEngine(e.Store, Limits{MaxComplexity: 1 << 30}, log, gql.WithoutExactOutput()), e.Store, nil, log)
	streamed.Routes(streamR)
	exactSrv, streamSrv := httptest.NewServer(exactR), httptest.NewServer(streamR)
	t.Cleanup(exactSrv.Close)
	t.Cleanup(streamSrv.Close)
	srv.exact, srv.stream = exactSrv.URL, streamSrv.URL
	return srv
}

// both sends the query to both servers, fails unless they answer the same
// bytes, and returns the answer and the statements the first one ran.
func (srv *exactServers) both(t *testing.T, tenant, key, q string, vars map[string]any) (*gqlResp, []string) {
	t.Helper()
	srv.mu.Lock()
	srv.ran = nil
	srv.mu.Unlock()
	fast := (&env{URL: srv.exact}).gql(t, tenant, key, q, vars)
	slow := (&env{URL: srv.stream}).gql(t, tenant, key, q, vars)
	if fast.Status != slow.Status || !bytes.Equal(fast.Body, slow.Body) {
		t.Fatalf("written as Postgres built it (%d):\n%s\nreshaped (%d):\n%s", fast.Status, fast.Body, slow.Status, slow.Body)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return fast, srv.ran
}

// A get by id of a flat selection runs a statement building the
// response's object (graphql/exec/exact.go), kept; so does one with
// relationship lists and aggregates, compiled per request; every other get
// (file metadata, edges, a flat selection with a directive) runs REST's
// statement and is reshaped. Both answer the same bytes, a missing record
// null.
func TestExactGetWritesWhatTheStreamWrites(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	odd := createOdd(t, e, s.tenant)
	other := newShop(t) // another tenant
	narrow := e.key(t, s.tenant, "entity:Product:read")
	srv := newExactServers(t, e)

	const everything = `id createdAt updatedAt name price stock active tags releasedAt launchDate attributes status embedding manual`
	const byVar = `query($id: ID!) { product(id: $id) { `
	for _, c := range []struct {
		name, key, query string
		id               string
		want             string // the data, when the test says it; "" to compare only
		exact            bool   // ran the statement building the response's object
		statements       int
	}{
		{"the bench's get", s.key, byVar + `id name price stock active createdAt updatedAt } }`, s.p[0], "", true, 1},
		{"every column type, escapes and unicode", s.key, byVar + everything + ` } }`, odd, "", true, 1},
		{"nulls", s.key, byVar + everything + ` } }`, s.p[2], "", true, 1},
		{"aliases, repeated fields, __typename", s.key, byVar + `__typename a: name b: name t: __typename name id: price key: id } }`, s.p[1],
			`{"product":{"__typename":"Product","a":"Banana","b":"Banana","t":"Product","name":"Banana","id":0.5,"key":"` + s.p[1] + `"}}`, true, 1},
		{"only __typename", s.key, byVar + `__typename } }`, s.p[0], `{"product":{"__typename":"Product"}}`, true, 1},
		{"fragments", s.key, `query($id: ID!) { product(id: $id) { ...P ... on Product { stock } } } fragment P on Product { name price }`, s.p[0], "", true, 1},
		{"a narrow key", narrow, byVar + `name price createdAt } }`, s.p[0], "", true, 1},
		{"an id in capitals", s.key, byVar + `id name } }`, strings.ToUpper(s.p[0]), "", true, 1},
		{"an id in braces", s.key, byVar + `id name } }`, "{" + s.p[0] + "}", "", true, 1},
		{"a missing id", s.key, byVar + `id name } }`, uuid.NewString(), `{"product":null}`, true, 1},
		{"another tenant's id", s.key, byVar + `id name } }`, other.p[0], `{"product":null}`, true, 1},
		{"not an id", s.key, byVar + `id name } }`, "1 OR 1=1", `{"product":null}`, false, 0},
		{"a field given twice (normalized into one)", s.key, `query($id: ID!) { product(id: $id) { name } product(id: $id) { price } }`, s.p[0], "", true, 1},
		{"@include from a variable: REST's statement", s.key, `query($id: ID!, $i: Boolean!) { product(id: $id) { name price @include(if: $i) } }`, s.p[0], "", false, 1},
		{"file metadata: REST's statement", s.key, byVar + `name manualFile { fileName } } }`, s.p[0], "", false, 1},
		{"relationships", s.key, byVar + `name categories(orderBy: [{field: "name"}]) { name rank __typename } } }`, odd, "", true, 1},
		{"relationship aggregates", s.key, `query($id: ID!) { category(id: $id) { name productsAggregate { __typename count avg { price } total: sum { stock }
		    max { __typename price name } } live: productsAggregate(where: {status: {equals: live}}) { n: count c: count } none: productsAggregate(where: {name: {equals: "none"}}) { count min { price } } } }`, s.c[0],
			`{"category":{"name":"Fruit","productsAggregate":{"__typename":"ProductRelatedAggregate","count":2,"avg":{"price":1},"total":{"stock":10},
			  "max":{"__typename":"ProductAggregateMax","price":1.5,"name":"Banana"}},"live":{"n":1,"c":1},"none":{"count":0,"min":{"price":null}}}}`, true, 1},
		{"relationship aggregates and lists two levels deep", s.key, byVar + `name categoriesAggregate { count } categories(orderBy: [{field: "name"}]) { name
		    productsAggregate { count avg { price } } products(orderBy: [{field: "name"}]) { name categories { rank } } } } }`, s.p[0], "", true, 1},
		{"relationship aggregate, where from a variable", s.key, `query($id: ID!, $i: Boolean!) { category(id: $id) { productsAggregate(where: {active: {equals: $i}}) { count } } }`, s.c[0],
			`{"category":{"productsAggregate":{"count":1}}}`, true, 1},
		{"relationship aggregate, @include from a variable", s.key, `query($id: ID!, $i: Boolean!) { category(id: $id) { name productsAggregate @include(if: $i) { count } } }`, s.c[0],
			`{"category":{"name":"Fruit","productsAggregate":{"count":2}}}`, true, 1},
		{"relationship aggregate of a missing id", s.key, `query($id: ID!) { category(id: $id) { name productsAggregate { count } } }`, uuid.NewString(), `{"category":null}`, true, 1},
		{"relationship aggregate with file metadata: REST's statement", s.key, byVar + `name manualFile { fileName } categoriesAggregate { count } } }`, s.p[0], "", false, 1},
		{"relationship aggregate beside edges: REST's statement", s.key, `query($id: ID!) { category(id: $id) { productsAggregate { count } productsConnection { edges { node { name } } } } }`, s.c[0], "", false, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv.both(t, s.tenant, c.key, c.query, map[string]any{"id": c.id, "i": true}) // the first builds the statement, the second reuses it
			res, ran := srv.both(t, s.tenant, c.key, c.query, map[string]any{"id": c.id, "i": true})
			data := res.ok(t)
			if c.want != "" {
				jsonEq(t, data, c.want)
			}
			if len(ran) != c.statements {
				t.Fatalf("ran %d statements, want %d: %q", len(ran), c.statements, ran)
			}
			for _, sql := range ran {
				// REST's statement selects the id first, unnamed; the
				// exact one names every member.
				// exact one names every member (and nested selections by
				// their response keys, not _n1, _n2…).
				exact := !strings.Contains(sql, `AS "_n`) && !strings.Contains(sql, `(SELECT t."id",`) && !strings.Contains(sql, `(SELECT t."id")`)
				if exact != c.exact {
					t.Errorf("written as Postgres built it = %v, want %v: %s", exact, c.exact, sql)
				}
			}
		})
	}
}

package graphql

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestFlatSelectionAnswersAsTheGeneralPath: a prepared operation's first
// request builds its record selection per request (the general path) and
// keeps it when it is flat; later requests answer from what was kept. Each
// query here runs twice on its own tenant's model, so the two answers are
// the general path's and the memo's, and must be the same bytes; selections
// that depend on the request (a directive with a variable, a field merged
// from two occurrences, relationships) answer what their variables ask.
func TestFlatSelectionAnswersAsTheGeneralPath(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	get := func(sel string) string { return `query($id: ID!) { product(id: $id) ` + sel + ` }` }
	for _, c := range []struct {
		name, query string
		vars        map[string]any
		want        string // a member the answer holds
	}{
		{"members out of Postgres' order", get(`{ id name price stock tags createdAt updatedAt }`), map[string]any{"id": s.p[0]}, `"name":"Apple"`},
		{"aliases and __typename", get(`{ __typename n: name id t: __typename price }`), map[string]any{"id": s.p[0]}, `"t":"Product"`},
		{"fragments", `query($id: ID!) { product(id: $id) { ...F ... on Product { stock } } } fragment F on Product { name }`, map[string]any{"id": s.p[1]}, `"name":"Banana"`},
		{"no such record", get(`{ id name }`), map[string]any{"id": "0193a3c2-0000-7000-8000-000000000000"}, `"product":null`},
		{"not an id", get(`{ id name }`), map[string]any{"id": "nope"}, `"product":null`},
		{"a list", `{ products(orderBy: [{field: "createdAt"}]) { name id } }`, nil, `{"name":"Apple"`},
		{"a relationship", get(`{ name categories { name } }`), map[string]any{"id": s.p[0]}, `"categories":[{"name":"Fruit"}]`},
		{"a field twice", `query($id: ID!) { product(id: $id) { id } product(id: $id) { name } }`, map[string]any{"id": s.p[2]}, `"name":"Carrot cake"`},
	} {
		first := e.gql(t, s.tenant, s.key, c.query, c.vars)
		again := e.gql(t, s.tenant, s.key, c.query, c.vars)
		first.ok(t)
		if again.Status != first.Status || !bytes.Equal(again.Body, first.Body) {
			t.Errorf("%s: first %d %s\nagain %d %s", c.name, first.Status, first.Body, again.Status, again.Body)
		}
		if !strings.Contains(string(first.Body), c.want) {
			t.Errorf("%s: %s lacks %s", c.name, first.Body, c.want)
		}
	}

	// A directive reading a variable: each request answers its own.
	q := `query($id: ID!, $w: Boolean!) { product(id: $id) { id name @include(if: $w) price } }`
	for _, w := range []bool{true, false, true, false} {
		body := string(e.gql(t, s.tenant, s.key, q, map[string]any{"id": s.p[0], "w": w}).Body)
		if strings.Contains(body, `"name"`) != w {
			t.Errorf("@include(if: %v): %s", w, body)
		}
	}

	// Refusals stay refusals: a key that may read only categories does not
	// see Product (another model, so another prepared operation), before and
	// after the full key's requests kept the selection; a key that may see
	// Product but has a narrower model is refused nothing it may read.
	narrow := e.key(t, s.tenant, "entity:Category:read")
	for i := 0; i < 2; i++ {
		r := e.gql(t, s.tenant, narrow, get(`{ id name price stock tags createdAt updatedAt }`), map[string]any{"id": s.p[0]})
		if r.Status != http.StatusBadRequest || r.code(0) != "GRAPHQL_VALIDATION_FAILED" {
			t.Errorf("narrow key, request %d: %d %s", i, r.Status, r.Body)
		}
	}
	reader := e.key(t, s.tenant, "entity:Product:read")
	var bodies []string
	for i := 0; i < 2; i++ {
		r := e.gql(t, s.tenant, reader, get(`{ id name price stock tags createdAt updatedAt }`), map[string]any{"id": s.p[0]})
		r.ok(t)
		bodies = append(bodies, string(r.Body))
	}
	full := e.gql(t, s.tenant, s.key, get(`{ id name price stock tags createdAt updatedAt }`), map[string]any{"id": s.p[0]})
	if bodies[0] != bodies[1] || bodies[0] != string(full.Body) {
		t.Errorf("a reader's answers %q differ from the full key's %s", bodies, full.Body)
	}
}

// TestUsualHeadersNeedNoParsing: the Accept values answered without
// parsing get what parsing gives them.
func TestUsualHeadersNeedNoParsing(t *testing.T) {
	for _, h := range []string{mediaJSON, mediaGraphQLResponse, "*/*", "", "text/html", "application/json; q=0.5, application/graphql-response+json"} {
		if got, want := accepts(h), parseAccept(h); got != want {
			t.Errorf("Accept %q: %q, parsed %q", h, got, want)
		}
	}
}

// TestContentTypeOfPOST: the usual Content-Type is taken as it is, any
// other is parsed: parameters and case are allowed, another type is 415.
func TestContentTypeOfPOST(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	s := newShop(t)
	for _, c := range []struct {
		ct   string
		want int
	}{
		{"application/json", http.StatusOK},
		{"application/json; charset=utf-8", http.StatusOK},
		{"Application/JSON", http.StatusOK},
		{"text/plain", http.StatusUnsupportedMediaType},
		{"", http.StatusUnsupportedMediaType},
	} {
		req, _ := http.NewRequest("POST", e.URL+"/api/v1/dynamic-gql/"+s.tenant, strings.NewReader(`{"query":"{ products { id } }"}`))
		if c.ct != "" {
			req.Header.Set("Content-Type", c.ct)
		}
		req.Header.Set("Authorization", "Bearer "+s.key)
		if r := do(t, req); r.Status != c.want {
			t.Errorf("Content-Type %q: %d %s, want %d", c.ct, r.Status, r.Body, c.want)
		}
	}
}

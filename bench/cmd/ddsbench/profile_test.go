package main

import (
	"bytes"
	"context"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/api/graphql"
	"github.com/dds-project/dds/api/rest"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/bench/load"
	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/query"
)

// fixture is an in-process DDS server with a seeded Product tenant.
type fixture struct {
	app *testenv.App
	key string
	b   *bench
	ids []string
}

func newFixture(t testing.TB, records int) *fixture {
	t.Helper()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, schemaDef)
	ctx := context.Background()
	b, err := resolve(ctx, app.Server.DB, tenantID)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := b.seed(ctx, records)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{app: app, key: key, b: b, ids: ids}
}

// TestCeilingsRunTheStatementsDDSRuns guards the bench's fairness: the
// direct statements and the minimal handlers it compiles return what DDS
// returns for the same read and the same create (so a change to
// records.Store.Create that the bench's copy misses fails here).
func TestCeilingsRunTheStatementsDDSRuns(t *testing.T) {
	f := newFixture(t, 10)
	ctx := context.Background()
	client := load.Client(2)
	get, err := load.MinimalServer(f.b.db.DB, f.b.getSQL, minimalGetArgs)
	if err != nil {
		t.Fatal(err)
	}
	defer get.Close()
	create, err := load.MinimalServer(f.b.db.DB, f.b.create.sql, f.b.minimalCreateArgs)
	if err != nil {
		t.Fatal(err)
	}
	defer create.Close()
	if err := checkSameGet(ctx, f.b, client, f.app.URL, get.URL, f.key, f.ids[3]); err != nil {
		t.Fatal(err)
	}
	if err := checkSameCreate(ctx, f.b, client, f.app.URL, create.URL, f.key); err != nil {
		t.Fatal(err)
	}
	// Each create wrote its entity.created event, as DDS does.
	var events int
	if err := f.b.db.GetContext(ctx, &events, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND type = 'entity.created'`, f.b.scope.TenantID); err != nil {
		t.Fatal(err)
	}
	if events != 3 {
		t.Fatalf("%d entity.created events, want 3 (direct, DDS, minimal handler)", events)
	}
	// A batch through DDS and through the minimal handler's one INSERT
	// writes the same records, each with its event.
	batch, err := load.MinimalServer(f.b.db.DB, f.b.batch.sql, f.b.batch.args)
	if err != nil {
		t.Fatal(err)
	}
	defer batch.Close()
	if err := checkSameBatch(ctx, f.b, client, f.app.URL, batch.URL, f.key); err != nil {
		t.Fatal(err)
	}
}

// TestNestedCeilingRunsTheStatementDDSRuns guards the nested section: the
// statement the minimal handler compiles from nestedPlan is the one DDS's
// GraphQL runs for gqlNestedQuery (same text, same values), and both return
// the same 20 × 10 × 10 records.
func TestNestedCeilingRunsTheStatementDDSRuns(t *testing.T) {
	f := newFixture(t, 200)
	if err := f.b.seedNested(context.Background(), f.ids); err != nil {
		t.Fatal(err)
	}
	checkCeiling(t, f, nestedPlan, gqlNestedQuery, func(ctx context.Context, gqlURL, minURL string) error {
		return checkSameNested(ctx, gqlURL, minURL, "", f.key)
	})
}

// TestFlatCeilingRunsTheStatementDDSRuns guards the flat section: the
// statement the minimal handler compiles from flatPlan is the one DDS's
// GraphQL runs for gqlFlatQuery (same text, same values), and both return
// the same 20 records, member for member.
func TestFlatCeilingRunsTheStatementDDSRuns(t *testing.T) {
	f := newFixture(t, 100)
	checkCeiling(t, f, flatPlan, gqlFlatQuery, func(ctx context.Context, gqlURL, minURL string) error {
		return checkSameFlat(ctx, gqlURL, minURL, f.key)
	})
}

// checkCeiling fails unless the minimal handler running plan's statement
// answers what DDS's GraphQL answers for gqlQuery (by same) and DDS runs
// that statement, text and values, once.
func checkCeiling(t *testing.T, f *fixture, plan query.List, gqlQuery string, same func(ctx context.Context, gqlURL, minURL string) error) {
	t.Helper()
	ctx := context.Background()
	st, err := f.b.scope.ListStatement(plan)
	if err != nil {
		t.Fatal(err)
	}
	// The values as compiled (none when the limits are literals and the
	// offsets 0), never nil: nil tells the minimal handler the request is bad.
	m, err := load.MinimalServer(f.b.db.DB, st.SQL, func(*http.Request) []any { return append([]any{}, st.Args...) })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gqlPath := "/api/v1/dynamic-gql/" + f.b.scope.TenantID
	if err := same(ctx, f.app.URL+gqlPath, m.URL); err != nil {
		t.Fatal(err)
	}

	// The same GraphQL front end over a store that reports what it runs.
	o := observe(t, f)
	if _, err := load.Call(ctx, load.Client(1), "POST", o.url+gqlPath, f.key, gqlBody(gqlQuery, nil), http.StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	ran := o.take()
	if len(ran) != 1 {
		t.Fatalf("DDS ran %d statements, want 1", len(ran))
	}
	if ran[0].SQL != st.SQL || !reflect.DeepEqual(ran[0].Args, st.Args) {
		t.Fatalf("DDS ran\n%s\n%v\nthe minimal handler runs\n%s\n%v", ran[0].SQL, ran[0].Args, st.SQL, st.Args)
	}
}

// TestListSectionRunsOneStatementForRESTAndGraphQL guards the list
// section: REST's filtered list runs the statement the minimal handler
// runs (REST's ceiling), and GraphQL's products(where:) the same list with
// Postgres building the response's members (gqlListPlan: the same filter,
// order, page and values, so the same rows and plan), each once.
func TestListSectionRunsOneStatementForRESTAndGraphQL(t *testing.T) {
	f := newFixture(t, 100)
	ctx := context.Background()
	rest, err := f.b.scope.ListStatement(listPlan(48))
	if err != nil {
		t.Fatal(err)
	}
	gql, err := f.b.scope.ListStatement(gqlListPlan(48))
	if err != nil {
		t.Fatal(err)
	}
	// Everything but the members each record is built with is REST's.
	restPage, _, _ := strings.Cut(rest.SQL, "CROSS JOIN LATERAL")
	gqlPage, _, _ := strings.Cut(gql.SQL, "CROSS JOIN LATERAL")
	if restPage != gqlPage || !reflect.DeepEqual(rest.Args, gql.Args) {
		t.Fatalf("GraphQL's list reads other rows than REST's:\n%s\n%s", rest.SQL, gql.SQL)
	}
	o := observe(t, f)
	for _, c := range []struct {
		name, path string
		body       []byte
		want       query.Statement
	}{
		{"REST", "/api/v1/dynamic/" + entity + "/query", restListBody(48), rest},
		{"GraphQL", "/api/v1/dynamic-gql/" + f.b.scope.TenantID, gqlBody(gqlListQuery, map[string]any{"n": 48}), gql},
	} {
		want := c.want
		o.take()
		if _, err := load.Call(ctx, load.Client(1), "POST", o.url+c.path, f.key, c.body, http.StatusOK, nil); err != nil {
			t.Fatal(err)
		}
		if ran := o.take(); len(ran) != 1 {
			t.Errorf("%s ran %d statements, want 1", c.name, len(ran))
		} else if ran[0].SQL != want.SQL || !reflect.DeepEqual(ran[0].Args, want.Args) {
			t.Errorf("%s ran\n%s\n%#v\nwant\n%s\n%#v", c.name, ran[0].SQL, ran[0].Args, want.SQL, want.Args)
		}
	}
}

// observed is DDS's GraphQL and REST front ends over the fixture's store,
// reporting the statements they run.
type observed struct {
	url string
	mu  sync.Mutex
	ran []query.Statement
}

func observe(t *testing.T, f *fixture) *observed {
	return observeWith(t, f, auth.NewAuthenticator(f.app.Server.DB, "test", []byte("bench-observed-test-secret-0123456789abc"), time.Minute, slog.New(slog.DiscardHandler)))
}

// observeWith is observe authenticating with authn.
func observeWith(t *testing.T, f *fixture, authn *auth.Authenticator) *observed {
	o := &observed{}
	log := slog.New(slog.DiscardHandler)
	store := f.app.Server.Records.Observed(func(s query.Statement) {
		o.mu.Lock()
		o.ran = append(o.ran, s)
		o.mu.Unlock()
	})
	router := api.NewRouter(authn, nil, 1<<20)
	graphql.NewHandler(gql.NewEngine(store, gql.Limits{}, log), store, nil, log).Routes(router)
	r := rest.New(store, nil)
	r.Routes(router)
	r.QueryRoutes(router)
	srv := httptest.NewServer(router)
	t.Cleanup(srv.Close)
	o.url = srv.URL
	return o
}

// take returns the statements run since the last take.
func (o *observed) take() []query.Statement {
	o.mu.Lock()
	defer o.mu.Unlock()
	ran := o.ran
	o.ran = nil
	return ran
}

// The benchmarks run the DDS load in-process so that a CPU profile shows
// where the server spends its time:
//
//	go test ./bench/cmd/ddsbench -run '^$' -bench . -benchtime 20000x -cpuprofile /tmp/cpu.out
//	go tool pprof -top -cum /tmp/cpu.out
//
// (the profile also holds the load generator; focus with
// -focus 'net/http.\(\*conn\).serve').
func BenchmarkGetDDS(b *testing.B) {
	f := newFixture(b, 10000)
	url := f.app.URL + "/api/v1/dynamic/" + entity + "/"
	benchLoad(b, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "GET", url+f.ids[rand.IntN(len(f.ids))], nil)
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+f.key)
		}
		return req, err
	})
}

// BenchmarkGraphQLGetDDS is GET's read through GraphQL's product(id:), the
// same statement (profile it next to BenchmarkGetDDS).
func BenchmarkGraphQLGetDDS(b *testing.B) {
	f := newFixture(b, 10000)
	url := f.app.URL + "/api/v1/dynamic-gql/" + f.b.scope.TenantID
	bodies := make([][]byte, len(f.ids))
	for i, id := range f.ids {
		bodies[i] = gqlBody(gqlGetQuery, map[string]any{"id": id})
	}
	benchPost(b, f.key, url, func() []byte { return bodies[rand.IntN(len(bodies))] })
}

func BenchmarkCreateDDS(b *testing.B) {
	f := newFixture(b, 1)
	url := f.app.URL + "/api/v1/dynamic/" + entity
	benchPost(b, f.key, url, randomBody)
}

// BenchmarkCreateMinimal is BenchmarkCreateDDS against the minimal handler
// (DDS's create statement through pgx, in-process too): the difference of
// the two profiles is what DDS adds to a create.
func BenchmarkCreateMinimal(b *testing.B) {
	f := newFixture(b, 1)
	m, err := load.MinimalServer(f.b.db.DB, f.b.create.sql, f.b.minimalCreateArgs)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	benchLoad(b, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", m.URL+"/p", bytes.NewReader(randomBody()))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
}

func benchLoad(b *testing.B, fn func(ctx context.Context) (*http.Request, error)) {
	client := load.Client(load.DefaultConcurrency)
	b.ResetTimer()
	res := load.HTTP(context.Background(), b.Name(), load.Options{MaxRequests: int64(b.N), Duration: 2 * time.Minute}, client, fn)
	b.StopTimer()
	if res.Errors > 0 {
		b.Fatalf("%d errors: %s", res.Errors, res.FirstError)
	}
	b.ReportMetric(res.RPS, "req/s")
	b.ReportMetric(float64(res.P50.Microseconds()), "p50-µs")
	b.ReportMetric(float64(res.P99.Microseconds()), "p99-µs")
}

// BenchmarkNestedDDS is the nested section's GraphQL request in-process
// (2,000 products, categories seeded as the section seeds them), for a
// CPU profile of the server's part of it.
func BenchmarkNestedDDS(b *testing.B) {
	f := newFixture(b, nestedLinked)
	if err := f.b.seedNested(context.Background(), f.ids); err != nil {
		b.Fatal(err)
	}
	benchGraphQL(b, f, gqlNestedQuery)
}

// BenchmarkFlatDDS is the flat section's GraphQL list in-process, for a
// CPU profile of the server's part of it.
func BenchmarkFlatDDS(b *testing.B) {
	f := newFixture(b, 1000)
	benchGraphQL(b, f, gqlFlatQuery)
}

// benchGraphQL loads DDS's GraphQL with one query without variables.
func benchGraphQL(b *testing.B, f *fixture, q string) {
	url := f.app.URL + "/api/v1/dynamic-gql/" + f.b.scope.TenantID
	body := gqlBody(q, nil)
	benchPost(b, f.key, url, func() []byte { return body })
}

// benchPost loads DDS with JSON POSTs to url under key, each body from body.
func benchPost(b *testing.B, key, url string, body func() []byte) {
	benchLoad(b, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body()))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+key)
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
}

// BenchmarkListDDS is the list section's REST request (price ≥ N, newest
// first, 20 rows) in-process, for a CPU profile of REST's list.
func BenchmarkListDDS(b *testing.B) {
	f := newFixture(b, 10000)
	url := f.app.URL + "/api/v1/dynamic/" + entity + "/query"
	bodies := make([][]byte, 100)
	for i := range bodies {
		bodies[i] = restListBody(float64(rand.IntN(1000)))
	}
	benchPost(b, f.key, url, func() []byte { return bodies[rand.IntN(len(bodies))] })
}

// BenchmarkDeepDDS is the deep section's GraphQL page (20 products after
// the 5,000th of the newest-first feed, by cursor) in-process, for a CPU
// profile of the server's part of it.
func BenchmarkDeepDDS(b *testing.B) {
	f := newFixture(b, 2*deepRows)
	url := f.app.URL + "/api/v1/dynamic-gql/" + f.b.scope.TenantID
	cursor, _, err := deepCursors(context.Background(), url, "", f.key)
	if err != nil {
		b.Fatal(err)
	}
	body := gqlBody(gqlDeepQuery, map[string]any{"after": cursor})
	benchPost(b, f.key, url, func() []byte { return body })
}

// BenchmarkCategoryAggDDS is the aggcategory section's GraphQL query (20
// categories with their products' count and average price) in-process,
// for a CPU profile of the server's part of it.
func BenchmarkCategoryAggDDS(b *testing.B) {
	f := newFixture(b, nestedLinked)
	if err := f.b.seedNested(context.Background(), f.ids); err != nil {
		b.Fatal(err)
	}
	benchGraphQL(b, f, gqlCategoryAggQuery)
}

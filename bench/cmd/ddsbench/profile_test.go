package main

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/internal/testenv"
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

func BenchmarkCreateDDS(b *testing.B) {
	f := newFixture(b, 1)
	url := f.app.URL + "/api/v1/dynamic/" + entity
	benchLoad(b, func(ctx context.Context) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(randomBody()))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+f.key)
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

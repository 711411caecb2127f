package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
)

func TestRunStopsAtMaxRequestsAndCountsErrors(t *testing.T) {
	var calls atomic.Int64
	res := Run(context.Background(), "count", Options{Concurrency: 4, Duration: time.Minute, MaxRequests: 1000},
		func(ctx context.Context) error {
			if calls.Add(1)%10 == 0 {
				return errors.New("every tenth fails")
			}
			return nil
		})
	if res.Requests != 1000 || calls.Load() != 1000 {
		t.Fatalf("requests %d, calls %d, want 1000", res.Requests, calls.Load())
	}
	if res.Errors != 100 {
		t.Fatalf("errors %d, want 100", res.Errors)
	}
	if res.FirstError != "every tenth fails" {
		t.Fatalf("first error %q", res.FirstError)
	}
	if res.RPS <= 0 || res.Name != "count" {
		t.Fatalf("result %+v", res)
	}
}

func TestRunStopsAtDuration(t *testing.T) {
	start := time.Now()
	res := Direct(context.Background(), "time", 3, 200*time.Millisecond, func(ctx context.Context) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("run took %s, bounded by 200ms", el)
	}
	if res.Requests == 0 || res.Errors != 0 {
		t.Fatalf("result %+v", res)
	}
	if res.P50 < time.Millisecond || res.P50 > res.P99 || res.P99 > res.Max {
		t.Fatalf("percentiles out of order: %+v", res)
	}
}

func TestRunEndsWhenCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	res := Run(ctx, "cancel", Options{Concurrency: 2, Duration: time.Minute}, func(ctx context.Context) error {
		<-ctx.Done() // a call that never finishes by itself
		return ctx.Err()
	})
	if res.Elapsed > 10*time.Second || res.Errors != 0 {
		t.Fatalf("cancelled calls are neither waited for nor errors: %+v", res)
	}
}

func TestMergeCombinesRounds(t *testing.T) {
	a := Run(context.Background(), "a", Options{Concurrency: 1, MaxRequests: 10, Duration: time.Minute}, func(context.Context) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	b := Run(context.Background(), "b", Options{Concurrency: 1, MaxRequests: 10, Duration: time.Minute}, func(context.Context) error {
		time.Sleep(5 * time.Millisecond)
		return errors.New("slow and failing")
	})
	c := Run(context.Background(), "c", Options{Concurrency: 1, MaxRequests: 10, Duration: time.Minute}, func(context.Context) error {
		time.Sleep(20 * time.Millisecond)
		return nil
	})
	m := Merge("m", a, b, c)
	if m.Name != "m" || m.Requests != 30 || m.Errors != 10 || m.Elapsed != a.Elapsed+b.Elapsed+c.Elapsed {
		t.Fatalf("merged %+v", m)
	}
	if want := 20 / m.Elapsed.Seconds(); m.RPS != want {
		t.Fatalf("rps %v, want %v", m.RPS, want)
	}
	// 20 successful samples: 10 of ~1ms, 10 of ~20ms.
	if m.P50 >= 20*time.Millisecond || m.P90 < 20*time.Millisecond || m.Max != c.Max {
		t.Fatalf("percentiles over all samples: %+v", m)
	}
	if m.FirstError != "slow and failing" {
		t.Fatalf("first error %q", m.FirstError)
	}
}

func TestPercentile(t *testing.T) {
	var lat []time.Duration
	for i := 1; i <= 100; i++ {
		lat = append(lat, time.Duration(i))
	}
	for _, tc := range []struct {
		p    float64
		want time.Duration
	}{{50, 50}, {90, 90}, {99, 99}, {100, 100}, {0, 1}} {
		if got := Percentile(lat, tc.p); got != tc.want {
			t.Errorf("p%v = %d, want %d", tc.p, got, tc.want)
		}
	}
	if Percentile(nil, 50) != 0 {
		t.Error("percentile of nothing must be 0")
	}
	if Percentile([]time.Duration{7}, 99) != 7 {
		t.Error("percentile of one sample is that sample")
	}
}

func TestHTTPCountsNon2xxAsErrors(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%4 == 0 {
			http.Error(w, "nope", http.StatusTeapot)
			return
		}
		_, _ = io.WriteString(w, `{"ok":true}`) // a failed write is the client's to see
	}))
	defer srv.Close()
	res := HTTP(context.Background(), "http", Options{Concurrency: 2, MaxRequests: 400, Duration: time.Minute}, Client(2),
		func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
		})
	if res.Requests != 400 || res.Errors != 100 {
		t.Fatalf("requests %d errors %d, want 400 and 100", res.Requests, res.Errors)
	}
	if !strings.Contains(res.FirstError, "status 418") {
		t.Fatalf("first error %q should name the status", res.FirstError)
	}
}

func TestReadRSSOfSelf(t *testing.T) {
	rss, hwm, err := ReadRSS(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if rss <= 0 || hwm < rss {
		t.Fatalf("rss %d hwm %d", rss, hwm)
	}
	s := SampleRSS(os.Getpid(), 10*time.Millisecond)
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	time.Sleep(30 * time.Millisecond) // let the sampler tick while buf is resident
	peak, err := s.Stop()
	if err != nil {
		t.Fatal(err)
	}
	if peak < rss+32<<20 {
		t.Fatalf("peak %s should include the 64 MB just touched (before: %s)", MB(peak), MB(rss))
	}
	_ = buf[len(buf)-1]
	if _, _, err := ReadRSS(1 << 30); err == nil {
		t.Fatal("reading a missing process must fail")
	}
}

func TestTablePrintsRatios(t *testing.T) {
	base := Result{Name: "ceiling", RPS: 1000, P50: 2 * time.Millisecond, P99: 9 * time.Millisecond}
	r := Result{Name: "dds", RPS: 800, P50: 3 * time.Millisecond, P99: 12 * time.Millisecond, Errors: 2, Requests: 10, FirstError: "boom"}
	var tbl Table
	tbl.Section("GET")
	other := Result{Name: "other", RPS: 4000}
	tbl.Add(base)
	tbl.Add(r, base, other)
	var out bytes.Buffer
	tbl.Print(&out)
	s := out.String()
	for _, want := range []string{"req/s", "— GET", "ceiling", "80.0% of ceiling, 20.0% of other", "3.00ms", "12.0ms", "dds: first error: boom"} {
		if !strings.Contains(s, want) {
			t.Errorf("table lacks %q:\n%s", want, s)
		}
	}
}

func TestMinimalServerRunsTheStatement(t *testing.T) {
	db := testenv.DB(t).DB
	m, err := MinimalServer(db, `SELECT json_build_object('n', $1::int * 2) WHERE $1::int > 0`, func(r *http.Request) []any {
		v := r.URL.Query().Get("n")
		if v == "" {
			return nil
		}
		return []any{v}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	get := func(q string) (int, string) {
		resp, err := http.Get(m.URL + "/?" + q)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	if st, body := get("n=21"); st != 200 || body != `{"n" : 42}` {
		t.Fatalf("got %d %s", st, body)
	}
	if st, _ := get("n=-1"); st != 404 {
		t.Fatalf("no row: got %d, want 404", st)
	}
	if st, _ := get(""); st != 400 {
		t.Fatalf("nil args: got %d, want 400", st)
	}
	if st, _ := get("n=x"); st != 500 {
		t.Fatalf("database error: got %d, want 500", st)
	}
}

func TestRecall(t *testing.T) {
	exact := [][]string{{"a", "b"}, {"c", "d"}}
	if got := Recall(exact, [][]string{{"b", "a"}, {"c", "x"}}); got != 0.75 {
		t.Fatalf("recall = %v, want 0.75", got)
	}
	if got := Recall(exact, nil); got != 0 {
		t.Fatalf("recall of nothing found = %v, want 0", got)
	}
}

func TestWithOptions(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"postgres://u@h:1/db?sslmode=disable", "postgres://u@h:1/db?options=-c%20hnsw.ef_search%3D100&sslmode=disable"},
		{"host=h dbname=db", "host=h dbname=db options='-c hnsw.ef_search=100'"},
	} {
		if got := WithOptions(tc.in, "-c hnsw.ef_search=100"); got != tc.want {
			t.Errorf("WithOptions(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCallSendsJSONAndChecksTheStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/missing" {
			w.WriteHeader(http.StatusNotFound)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"auth": r.Header.Get("Authorization"), "type": r.Header.Get("Content-Type"), "body": string(b)})
	}))
	defer srv.Close()
	ctx := context.Background()
	var got map[string]string
	if _, err := Call(ctx, srv.Client(), "POST", srv.URL+"/x", "k", map[string]int{"a": 1}, http.StatusCreated, &got); err != nil {
		t.Fatal(err)
	}
	if got["auth"] != "Bearer k" || got["type"] != "application/json" || got["body"] != `{"a":1}` {
		t.Fatalf("value body: server saw %v", got)
	}
	if _, err := Call(ctx, srv.Client(), "POST", srv.URL+"/x", "", []byte(`[1]`), 0, &got); err != nil || got["body"] != "[1]" || got["auth"] != "" {
		t.Fatalf("raw body, any 2xx: %v, server saw %v", err, got)
	}
	if _, err := Call(ctx, srv.Client(), "GET", srv.URL+"/x", "", []byte(nil), 0, &got); err != nil || got["type"] != "" || got["body"] != "" {
		t.Fatalf("nil []byte is no body: %v, server saw %v", err, got)
	}
	_, err := Call(ctx, srv.Client(), "GET", srv.URL+"/missing", "", nil, http.StatusOK, nil)
	if err == nil || !strings.Contains(err.Error(), "GET /missing: status 404, want 200") {
		t.Fatalf("a wrong status: %v", err)
	}
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/tcpproxy"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// TestReadReplicasNeverHideAWrite runs two `dds serve` processes over one
// primary and its streaming replica (DATABASE_REPLICA_URLS, through a TCP
// proxy the test can cut) and checks what a client relies on:
//   - a write acknowledged by server A is seen by the very next read on
//     server B (get, list, GraphQL), many clients at once, while B serves
//     reads from the replica (dds_db_reads_total{target="replica"});
//   - with replay paused on the replica, reads still see every write (the
//     primary serves them), and the replica is used again once resumed;
//   - with the replica gone, reads keep answering (the ones in flight run
//     again on the primary), and go back to the replica when it returns.
func TestReadReplicasNeverHideAWrite(t *testing.T) {
	teststack.Need(t, "DDS_TEST_REPLICA_URL")
	testenv.DB(t) // migrated
	primary := withParam(t, testenv.DatabaseURL(t), "synchronous_commit", "on")
	replicaURL, err := url.Parse(os.Getenv("DDS_TEST_REPLICA_URL"))
	if err != nil {
		t.Fatal(err)
	}
	replicaDB, err := db.Open(context.Background(), replicaURL.String(), 2)
	if err != nil {
		t.Fatalf("the replica: %v", err)
	}
	defer replicaDB.Close()
	proxy := tcpproxy.Start(t, replicaURL.Host)
	proxied := *replicaURL
	proxied.Host = proxy.Addr()

	bin := ddsBinary(t)
	env := append(os.Environ(), "DATABASE_URL="+primary, "DATABASE_REPLICA_URLS="+proxied.String(),
		"DDS_ENV=test", "DDS_JWT_SECRET=test-jwt-secret-0123456789abcdef0123456789", "DDS_OPERATOR_TOKEN="+testenv.OperatorToken,
		"DDS_RATE_GLOBAL=0", "DDS_RATE_AUTH=0", "DDS_RATE_TENANT=0", "DDS_PUBLIC_URL=", "DDS_LOG_LEVEL=info",
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+t.TempDir(), "FILE_STORAGE_LOCAL_SECRET=test-local-storage-secret-0123456789")
	a, b := startServe(t, bin, env, "a"), startServe(t, bin, env, "b")

	tenant := b.do(t, "POST", "/api/v1/tenants", testenv.OperatorToken, map[string]any{"name": "replicas"})
	var created struct{ TenantID, APIKey string }
	tenant.decode(t, http.StatusCreated, &created)
	key := created.APIKey
	a.do(t, "POST", "/api/v1/schemas", key, map[string]any{"name": "replicas", "entities": []any{map[string]any{"name": "Note",
		"fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}}).decode(t, http.StatusCreated, nil)
	b.awaitMetric(t, "dds_db_replicas_usable", func(v float64) bool { return v == 1 })

	// Writers on A, readers of their own writes on B: never a miss.
	var next atomic.Int64
	writeThenRead := func(t *testing.T, clients, each int) (misses []string) {
		t.Helper()
		var mu sync.Mutex
		var wg sync.WaitGroup
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					n := next.Add(1)
					var rec struct{ ID string }
					a.do(t, "POST", "/api/v1/dynamic/Note", key, map[string]any{"n": n}).decode(t, http.StatusCreated, &rec)
					miss := ""
					if r := b.do(t, "GET", "/api/v1/dynamic/Note/"+rec.ID, key, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), fmt.Sprintf(`"n":%d`, n)) {
						miss = fmt.Sprintf("get %s: %d %.100s", rec.ID, r.status, r.body)
					} else if r := b.do(t, "GET", "/api/v1/dynamic/Note?where="+url.QueryEscape(fmt.Sprintf(`{"n":%d}`, n)), key, nil); r.status != http.StatusOK || !strings.Contains(string(r.body), rec.ID) {
						miss = fmt.Sprintf("list n=%d: %d %.100s", n, r.status, r.body)
					} else if r := b.do(t, "POST", "/api/v1/dynamic-gql/"+created.TenantID, key, map[string]any{
						"query": `query($id: ID!) { note(id: $id) { n } }`, "variables": map[string]any{"id": rec.ID}}); r.status != http.StatusOK || !strings.Contains(string(r.body), fmt.Sprintf(`"n":%d`, n)) {
						miss = fmt.Sprintf("graphql note %s: %d %.100s", rec.ID, r.status, r.body)
					}
					if miss != "" {
						mu.Lock()
						misses = append(misses, miss)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return misses
	}
	// readOnly reads one record on B n times and returns how many reads
	// the replica served.
	var probe struct{ ID string }
	a.do(t, "POST", "/api/v1/dynamic/Note", key, map[string]any{"n": 0}).decode(t, http.StatusCreated, &probe)
	readOnly := func(t *testing.T, n int) float64 {
		t.Helper()
		before := b.metric(t, `dds_db_reads_total{target="replica"}`)
		for range n {
			b.do(t, "GET", "/api/v1/dynamic/Note/"+probe.ID, key, nil).decode(t, http.StatusOK, nil)
		}
		return b.metric(t, `dds_db_reads_total{target="replica"}`) - before
	}
	// replicaServes reads in rounds of n until one is served by the replica
	// (up to 30 s): other tests' writes on the shared primary keep its WAL
	// moving, so right after replay resumes, or on a busy machine, a round
	// can find the replica a few milliseconds behind every barrier and go
	// to the primary — correct, and not what this waits for.
	replicaServes := func(t *testing.T, n int) float64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if got := readOnly(t, n); got > 0 || time.Now().After(deadline) {
				return got
			}
		}
	}

	t.Run("read your writes across servers", func(t *testing.T) {
		before := b.metric(t, `dds_db_reads_total{target="replica"}`)
		if misses := writeThenRead(t, 8, 25); len(misses) > 0 {
			t.Fatalf("%d reads on B missed a write A had acknowledged, e.g. %v", len(misses), misses[:min(3, len(misses))])
		}
		t.Logf("600 reads right after their writes: %v served by the replica", b.metric(t, `dds_db_reads_total{target="replica"}`)-before)
		if got := replicaServes(t, 100); got == 0 {
			t.Fatal("with a healthy replica and no writes, no read of B went to the replica")
		} else {
			t.Logf("100 reads without writes: %v served by the replica", got)
		}
	})

	t.Run("replay paused", func(t *testing.T) {
		replicaDB.MustExec(`SELECT pg_wal_replay_pause()`)
		resumed := false
		defer func() {
			if !resumed {
				replicaDB.MustExec(`SELECT pg_wal_replay_resume()`)
			}
		}()
		if misses := writeThenRead(t, 4, 25); len(misses) > 0 {
			t.Fatalf("with replay paused, %d reads missed their write, e.g. %v", len(misses), misses[:min(3, len(misses))])
		}
		replicaDB.MustExec(`SELECT pg_wal_replay_resume()`)
		resumed = true
		b.awaitMetric(t, "dds_db_replicas_usable", func(v float64) bool { return v == 1 })
		if got := replicaServes(t, 50); got == 0 {
			t.Fatal("after replay resumed, no read went to the replica")
		}
	})

	t.Run("replica gone and back", func(t *testing.T) {
		// Readers hammer B while the replica goes away under them.
		stop := make(chan struct{})
		var failed []string
		var mu sync.Mutex
		var wg sync.WaitGroup
		var cut time.Time
		var reads atomic.Int64
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					reads.Add(1)
					if r := b.do(t, "GET", "/api/v1/dynamic/Note/"+probe.ID, key, nil); r.status != http.StatusOK {
						mu.Lock()
						failed = append(failed, fmt.Sprintf("%s after the cut: %d %.100s", time.Since(cut).Round(time.Millisecond), r.status, r.body))
						mu.Unlock()
					}
				}
			}()
		}
		for reads.Load() < 50 {
			time.Sleep(time.Millisecond) // the readers run before the fault
		}
		mu.Lock()
		cut = time.Now()
		mu.Unlock()
		proxy.Close()
		b.awaitMetric(t, "dds_db_replicas_usable", func(v float64) bool { return v == 0 })
		for start := reads.Load(); reads.Load() < start+200; {
			time.Sleep(time.Millisecond) // reads go on without the replica
		}
		close(stop)
		wg.Wait()
		if len(failed) > 0 {
			t.Fatalf("%d reads failed when the replica went away (of %d), e.g. %v", len(failed), reads.Load(), failed[:min(3, len(failed))])
		}
		if r := b.do(t, "GET", "/readyz", "", nil); r.status != http.StatusOK {
			t.Fatalf("/readyz without the replica: %d %s", r.status, r.body)
		}
		if misses := writeThenRead(t, 4, 10); len(misses) > 0 {
			t.Fatalf("without the replica, %d reads missed their write, e.g. %v", len(misses), misses[:min(3, len(misses))])
		}
		tcpproxy.StartOn(t, proxy.Addr(), replicaURL.Host)
		b.awaitMetric(t, "dds_db_replicas_usable", func(v float64) bool { return v == 1 })
		if got := replicaServes(t, 50); got == 0 {
			t.Fatal("after the replica came back, no read went to it")
		}
	})
}

// withParam returns raw with the query parameter name=value (a run-time
// parameter pgx sends at connection). The test stack's Postgres commits
// asynchronously; production commits synchronously, where the barrier is
// the write position (see db.barrierSQL).
func withParam(t *testing.T, raw, name, value string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set(name, value)
	u.RawQuery = q.Encode()
	return u.String()
}

// ddsServer is one `dds serve` process on a free port, stopped (by PID)
// when the test ends.
type ddsServer struct {
	url    string
	client *http.Client
}

func startServe(t *testing.T, bin string, env []string, name string) *ddsServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logPath := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append([]string{}, env...), "DDS_HTTP_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("server %s log (tail):\n%s", name, b[max(0, len(b)-3000):])
		}
	})
	s := &ddsServer{url: "http://" + addr, client: &http.Client{Timeout: 30 * time.Second}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if r, err := s.client.Get(s.url + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-done:
			b, _ := os.ReadFile(logPath)
			t.Fatalf("dds serve %s exited:\n%s", name, b)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("dds serve %s not ready within 60 s", name)
		}
		time.Sleep(50 * time.Millisecond) // the process starts on its own schedule
	}
}

type reply struct {
	status int
	body   []byte
}

func (r reply) decode(t *testing.T, want int, v any) {
	t.Helper()
	if r.status != want {
		t.Fatalf("status %d, want %d: %s", r.status, want, r.body)
	}
	if v != nil {
		if err := json.Unmarshal(r.body, v); err != nil {
			t.Fatalf("decode: %v: %s", err, r.body)
		}
	}
}

func (s *ddsServer) do(t *testing.T, method, path, key string, body any) reply {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return reply{body: []byte(err.Error())}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, body: b}
}

// metric reads one series of the server's /metrics (0 when absent).
func (s *ddsServer) metric(t *testing.T, series string) float64 {
	t.Helper()
	r := s.do(t, "GET", "/metrics", "", nil)
	sc := bufio.NewScanner(bytes.NewReader(r.body))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return f
		}
	}
	return 0
}

// awaitMetric waits up to 10 s for series to satisfy ok.
func (s *ddsServer) awaitMetric(t *testing.T, series string, ok func(float64) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok(s.metric(t, series)) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is %v after 10 s", series, s.metric(t, series))
		}
		time.Sleep(20 * time.Millisecond) // the replica poll runs every 50 ms
	}
}

package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/server"
)

// logBuffer collects JSON log lines written concurrently.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines returns the decoded lines whose msg is msg.
func (b *logBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %s", sc.Bytes())
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// startLogged runs a server logging JSON at info into the returned buffer.
func startLogged(t *testing.T, cfg *config.Config) (*testenv.App, *logBuffer) {
	t.Helper()
	testenv.DB(t)
	logs := &logBuffer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.PublicURL = "http://" + ln.Addr().String()
	s, err := server.New(context.Background(), cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Start(context.Background(), ln))
	return &testenv.App{URL: "http://" + ln.Addr().String(), Server: s, Client: http.DefaultClient}, logs
}

func TestAccessLogAndMetrics(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.AccessLogSample = 1
	cfg.RateTenant = 4
	app, logs := startLogged(t, cfg)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, notes)
	id := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "a"}).JSON(t)["id"].(string)
	r := app.Do(t, "GET", "/api/v1/dynamic/Note/"+id, key, nil, "X-Request-Id", "trace-me-1")
	if r.Status != http.StatusOK {
		t.Fatalf("get: %d %s", r.Status, r.Body)
	}
	for r.Status != http.StatusTooManyRequests { // the tenant limit is 4 a minute
		r = app.Do(t, "GET", "/api/v1/dynamic/Note/"+id, key, nil)
	}

	var line map[string]any
	for _, l := range logs.lines(t, "request") {
		if l["request_id"] == "trace-me-1" {
			line = l
		}
	}
	if line == nil {
		t.Fatal("no access-log line for request trace-me-1")
	}
	want := map[string]any{"level": "INFO", "method": "GET", "route": "GET /api/v1/dynamic/{entity}/{id}", "status": float64(200), "tenant": tenantID}
	for k, v := range want {
		if line[k] != v {
			t.Errorf("access log %s = %v, want %v (line %v)", k, line[k], v, line)
		}
	}
	if _, ok := line["duration"]; !ok {
		t.Errorf("access log has no duration: %v", line)
	}
	if strings.Contains(toJSON(t, line), id) {
		t.Errorf("the access log carries the raw path with the record id: %v", line)
	}

	metrics := string(app.Must(t, http.StatusOK, "GET", "/metrics", "", nil).Body)
	for _, m := range []string{
		`dds_rate_limit_rejections_total{layer="tenant"} 1`,
		`go_sql_in_use_connections{db_name="dds"}`,
		`go_sql_wait_count_total{db_name="dds"}`,
		`dds_graphql_subscriptions_active 0`,
		`dds_graphql_feed_reads_total{kind="filter"} 0`,
		`dds_graphql_feed_horizon_held_total 0`,
		`dds_graphql_feed_stage_seconds_count{stage="written"} 0`,
		`dds_graphql_feed_commit_stage_seconds_count{stage="written"} 0`,
	} {
		if !strings.Contains(metrics, m) {
			t.Errorf("/metrics lacks %s", m)
		}
	}
}

// With sampling off, ordinary requests leave no access-log line but a 5xx
// still does, with its cause in the error line.
func TestAccessLogSamplingKeepsFailures(t *testing.T) {
	cfg, proxy := proxiedConfig(t)
	cfg.AccessLogSample = 0
	app, logs := startLogged(t, cfg)
	_, key := app.Tenant(t)
	app.Schema(t, key, notes)
	app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Note", key, nil)
	if n := len(logs.lines(t, "request")); n != 0 {
		t.Fatalf("%d access-log lines with sampling 0, want none", n)
	}
	proxy.Close()
	app.Do(t, "GET", "/api/v1/dynamic/Note", key, nil, "X-Request-Id", "down-1")
	found := map[string]bool{}
	for _, msg := range []string{"request", "request failed"} {
		for _, l := range logs.lines(t, msg) {
			if l["request_id"] == "down-1" {
				found[msg] = true
				// the public message, then the cause (a refused dial or a connection cut mid-read)
				if errText, _ := l["err"].(string); msg == "request failed" && !strings.Contains(errText, "retry later: ") {
					t.Errorf("the failure line does not carry its cause: %v", l)
				}
			}
		}
	}
	if !found["request"] || !found["request failed"] {
		t.Fatalf("a 503 must leave an access line and a failure line with its cause, got %v", found)
	}
}

func toJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

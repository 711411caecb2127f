package server_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
)

// A client that sends its headers and then trickles its body is answered
// and disconnected once DDS_BODY_TIMEOUT has passed, instead of holding a
// goroutine and a file descriptor for as long as it likes; a body that
// arrives in time on the same server is unaffected.
func TestATricklingBodyIsCutOff(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.BodyTimeout = 300 * time.Millisecond
	app := testenv.NewServer(t, cfg)
	_, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{
		map[string]any{"name": "Note", "fields": []any{map[string]any{"name": "text", "type": "STRING"}}},
	}})

	conn, err := net.Dial("tcp", strings.TrimPrefix(app.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"text":"trickled"}`
	if _, err := fmt.Fprintf(conn, "POST /api/v1/dynamic/Note HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		key, len(body), body[:1]); err != nil {
		t.Fatal(err)
	}
	// The rest of the body never comes. The server must answer on its own;
	// the client-side deadline only keeps a broken server from hanging the test.
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the server never answered a trickling body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("trickling body: HTTP %d, want 400", resp.StatusCode)
	}
	if n := app.Must(t, 200, "GET", "/api/v1/dynamic/Note?includeCount=true", key, nil).JSON(t)["count"]; fmt.Sprint(n) != "0" {
		t.Fatalf("a refused body wrote %v records", n)
	}
	app.Must(t, 201, "POST", "/api/v1/dynamic/Note", key, map[string]any{"text": "in time"})
}

// Health probes and metric scrapes come from one balancer or scraper
// address: they never count against, nor are refused by, the per-IP limit.
func TestProbesAreNotRateLimited(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.RateGlobal = 3
	app := testenv.NewServer(t, cfg)
	for i := range 10 {
		for _, path := range []string{"/livez", "/readyz", "/healthz", "/metrics"} {
			if r := app.Do(t, "GET", path, "", nil); r.Status != http.StatusOK {
				t.Fatalf("probe %d of %s: HTTP %d, want 200", i, path, r.Status)
			}
		}
	}
	statuses := []int{}
	for range 4 {
		statuses = append(statuses, app.Do(t, "GET", "/api/v1/openapi.json", "", nil).Status)
	}
	if statuses[3] != http.StatusTooManyRequests {
		t.Fatalf("API requests after 40 probes: %v, want the 4th refused by the limit of 3", statuses)
	}
}

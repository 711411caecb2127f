package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// A browser-style EventSource client (the eventsource package) follows the
// change feed of one `dds serve` while a writer keeps creating records; it
// is killed mid-stream, and a new client resumes on a second `dds serve`
// over the same database with the last cursor it printed (Last-Event-ID, as
// a browser sends it on reconnect). Across the two clients every create
// arrives exactly once, in the order written.
func TestChangeFeedResumesOnAnotherServer(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)

	// A second server over the same database (another replica).
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	probes, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	replica := "http://" + fmt.Sprintf("127.0.0.1:%d", port)
	p, err := startProcess(bin, []string{"serve"}, append(slices.Clone(d.env),
		fmt.Sprintf("DDS_HTTP_ADDR=127.0.0.1:%d", port), fmt.Sprintf("DDS_WORKER_HTTP_ADDR=127.0.0.1:%d", probes), "DDS_PUBLIC_URL="+replica),
		filepath.Join(t.TempDir(), "replica.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.stop)

	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make test`")
	}
	follow := func(base, lastID string) (*exec.Cmd, *lines) {
		args := []string{filepath.Join(npmDir, "clients", "events.mjs"), base + "/api/v1/events?entities=Note&types=entity.created", key}
		if lastID != "" {
			args = append(args, lastID)
		}
		cmd := exec.CommandContext(t.Context(), node, args...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		l := readLines(out)
		l.await(t, 30*time.Second, "the EventSource to open", func(m json.RawMessage) bool {
			if strings.Contains(string(m), `"error"`) {
				t.Fatalf("EventSource failed: %s (stderr: %s)", m, stderr.String())
			}
			return strings.Contains(string(m), `"open":true`)
		})
		return cmd, l
	}
	type line struct {
		ID    string
		Event struct {
			ID       string
			EntityID string
		}
	}
	parse := func(m json.RawMessage) line {
		var x line
		if err := json.Unmarshal(m, &x); err != nil {
			t.Fatal(err)
		}
		return x
	}

	first, l1 := follow(d.URL, "")
	const total = 60
	var (
		mu      sync.Mutex
		written []string
	)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := range total {
			var rec struct{ ID string }
			d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": fmt.Sprint("n", i)}).decode(t, &rec)
			mu.Lock()
			written = append(written, rec.ID)
			mu.Unlock()
		}
	}()
	var got []string
	last := ""
	for len(got) < 15 {
		m := parse(l1.await(t, 30*time.Second, "an event on the first server", func(m json.RawMessage) bool { return strings.Contains(string(m), `"id"`) }))
		if m.ID != m.Event.ID {
			t.Fatalf("the SSE id %q is not the event's cursor %q", m.ID, m.Event.ID)
		}
		got, last = append(got, m.Event.EntityID), m.ID
	}
	_ = first.Process.Kill() // mid-stream, while the writer writes
	_ = first.Wait()

	_, l2 := follow(replica, last)
	<-writerDone
	for len(got) < total {
		m := parse(l2.await(t, 30*time.Second, "an event on the second server", func(m json.RawMessage) bool { return strings.Contains(string(m), `"id"`) }))
		got = append(got, m.Event.EntityID)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, written) {
		t.Fatalf("the two clients together got\n %v\nwant every create once, in order:\n %v", got, written)
	}
	// Nothing more arrives (no duplicate after the last).
	if extra, ok := l2.find(500*time.Millisecond, func(m json.RawMessage) bool { return strings.Contains(string(m), `"id"`) }); ok {
		t.Fatalf("an event after the last create: %s", extra)
	}
}

// Package crashtest kills the webhook worker (relay + delivery worker) with
// SIGKILL while 500 (DDS_CRASH_WRITES) writes are being relayed and delivered, restarts it and
// checks that every committed write reached the receiver.
package crashtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// DDS_CRASH_WRITES sets the number of writes (default 500); the duplicate
// bound in docs/webhooks.md was measured with 3000.
func crashWrites(t *testing.T) int {
	n := 500
	if v := os.Getenv("DDS_CRASH_WRITES"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 200 {
			t.Fatalf("DDS_CRASH_WRITES=%q: want an integer >= 200", v)
		}
	}
	return n
}

func TestSIGKILLDuringDeliveryLosesNothing(t *testing.T) {
	writes := crashWrites(t)
	url := webhooktest.DBURL(t)
	srv, err := webhooktest.StartTemporal()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop() //nolint:errcheck // best-effort shutdown of the test's Temporal dev server; its exit status is not under test

	dir := t.TempDir()
	bin := filepath.Join(dir, "crashworker")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dds-project/dds/relay/internal/crashworker").CombinedOutput(); err != nil {
		t.Fatalf("build crashworker: %v\n%s", err, out)
	}

	// The receiver answers 200 after a few milliseconds, so that batches are
	// in flight when the worker dies.
	var mu sync.Mutex
	byEvent := map[string][]string{} // payload id -> webhook-id of every request
	var delivered atomic.Int32
	rc := webhooktest.NewReceiver(t, func(r webhooktest.Request) int {
		var p webhook.Payload
		if err := json.Unmarshal(r.Body, &p); err != nil {
			return 400
		}
		mu.Lock()
		if len(byEvent[p.ID]) == 0 {
			delivered.Add(1)
		}
		byEvent[p.ID] = append(byEvent[p.ID], r.Header.Get("webhook-id"))
		mu.Unlock()
		time.Sleep(3 * time.Millisecond)
		return 200
	})
	caFile := filepath.Join(dir, "ca.pem")
	if err := webhooktest.WriteCertPEM(caFile, rc.Certificate()); err != nil {
		t.Fatal(err)
	}

	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "-lease", "3s")
		cmd.Env = append(os.Environ(), "DATABASE_URL="+url, "TEMPORAL_ADDRESS="+srv.FrontendHostPort(), "DDS_TASK_QUEUE=dds-crash",
			"DDS_WEBHOOK_CA_FILE="+caFile, "DDS_WEBHOOK_ALLOW_PRIVATE=true")
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if !bufio.NewScanner(out).Scan() {
			t.Fatal("crashworker did not start")
		}
		return cmd
	}

	cfg := testenv.Config(t)
	cfg.DatabaseURL = url
	cfg.WebhookAllowPrivate = true
	app := testenv.NewServer(t, cfg)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}})
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": rc.URL + "/hook", "eventTypes": outbox.Types})

	// The writes from 8 concurrent clients.
	var committed atomic.Int32
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if r := app.Do(t, "POST", "/api/v1/dynamic/Product", key, map[string]any{"n": i}); r.Status == http.StatusCreated {
					committed.Add(1)
				} else {
					t.Errorf("write %d: %d %s", i, r.Status, r.Body)
				}
			}
		}()
	}
	go func() {
		for i := range writes {
			next <- i
		}
		close(next)
	}()

	// The worker starts on a backlog of half the writes (so it relays at
	// full speed, the worst case for repeats) while the rest are written,
	// and is killed mid-stream: some events delivered, others in flight or
	// not yet written.
	webhooktest.Eventually(t, 120*time.Second, "half the writes committed", func() bool { return int(committed.Load()) >= writes/2 })
	worker := start()
	webhooktest.Eventually(t, 60*time.Second, "a quarter of the deliveries", func() bool { return int(delivered.Load()) >= writes/4 })
	if err := worker.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = worker.Wait()
	atKill := delivered.Load()
	var unrelayed int
	_ = app.Server.DB.Get(&unrelayed, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND relayed_at IS NULL`, tenantID)
	t.Logf("SIGKILL after %d distinct deliveries, %d writes committed, %d events not yet relayed", atKill, committed.Load(), unrelayed)
	wg.Wait()
	if int(committed.Load()) != writes {
		t.Fatalf("%d of %d writes committed", committed.Load(), writes)
	}

	start() // restart
	webhooktest.Eventually(t, time.Duration(max(90, writes/20))*time.Second, fmt.Sprintf("%d distinct deliveries", writes), func() bool { return int(delivered.Load()) >= writes })
	webhooktest.Eventually(t, 30*time.Second, "every event relayed and every delivery succeeded", func() bool {
		var pending, open int
		_ = app.Server.DB.Get(&pending, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND relayed_at IS NULL`, tenantID)
		_ = app.Server.DB.Get(&open, `SELECT count(*) FROM dds.webhook_deliveries WHERE tenant_id = $1 AND status <> 'succeeded'`, tenantID)
		return pending == 0 && open == 0
	})

	var ids []string
	if err := app.Server.DB.Select(&ids, `SELECT id FROM dds.events WHERE tenant_id = $1`, tenantID); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ids) != writes || len(byEvent) != writes {
		t.Fatalf("%d events committed, %d distinct event ids delivered; want %d each", len(ids), len(byEvent), writes)
	}
	dups := 0
	for _, id := range ids {
		hs := byEvent[id]
		if len(hs) == 0 {
			t.Fatalf("committed event %s never delivered", id)
		}
		for _, h := range hs {
			if h != id {
				t.Fatalf("event %s delivered with webhook-id %s", id, h)
			}
		}
		dups += len(hs) - 1
	}
	t.Logf("%d events delivered, %d duplicate deliveries (each with the same webhook-id)", len(byEvent), dups)
}

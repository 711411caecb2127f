package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver records the arrival time and event id of every delivery.
type receiver struct {
	srv *httptest.Server
	mu  sync.Mutex
	at  []time.Time
	ids map[string]int
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{ids: map[string]int{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		_, _ = io.Copy(io.Discard, req.Body)
		r.mu.Lock()
		r.at = append(r.at, now)
		r.ids[req.Header.Get("webhook-id")]++
		r.mu.Unlock()
	}))
	t.Cleanup(r.srv.Close)
	return r
}

// distinct is the number of distinct event ids received.
func (r *receiver) distinct() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// maxPerSecond is the most arrivals in any window [t, t+1s).
func (r *receiver) maxPerSecond() (int, time.Time) {
	r.mu.Lock()
	at := append([]time.Time(nil), r.at...)
	r.mu.Unlock()
	return mostPerSecond(at)
}

// mostPerSecond is the most of times in any window [t, t+1s), and its t.
func mostPerSecond(at []time.Time) (int, time.Time) {
	at = append([]time.Time(nil), at...)
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	best, when := 0, time.Time{}
	for i := range at {
		n := sort.Search(len(at), func(j int) bool { return !at[j].Before(at[i].Add(time.Second)) }) - i
		if n > best {
			best, when = n, at[i]
		}
	}
	return best, when
}

// startWorker starts one more `dds worker` on d (same database and task
// queue), stopped when the test ends.
func startWorker(t *testing.T, d *deployment) {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	env := append(append([]string(nil), d.env...), fmt.Sprintf("DDS_WORKER_HTTP_ADDR=127.0.0.1:%d", port))
	p, err := startProcess(bin, []string{"worker"}, env, filepath.Join(os.TempDir(), fmt.Sprintf("dds-e2e-worker2-%d.log", port)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.stop()
		os.Remove(p.log)
	})
	// The worker answers its health endpoint once it runs (relay included).
	deadline := time.Now().Add(60 * time.Second)
	for {
		if p.exited() {
			t.Fatalf("second worker exited:\n%s", p.logTail())
		}
		if res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/readyz", port)); err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("second worker not ready:\n%s", p.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A webhook with rateLimit never receives more than that many deliveries
// in any one-second window, with two workers relaying side by side, and
// receives every event; an unlimited webhook of the same tenant and one of
// another tenant get theirs while the limited one still has a backlog.
func TestWebhookRateLimitAcrossWorkers(t *testing.T) {
	d := local
	startWorker(t, d)
	_, key, _ := tenantWithSchema(t, d)
	_, otherKey, _ := tenantWithSchema(t, d)

	// Bad values are a 400 naming rateLimit, and nothing is created.
	for _, bad := range []any{0, -3, 1001, 2.5, "5", true, map[string]any{}} {
		res := d.do(t, http.StatusBadRequest, "POST", "/api/v1/webhooks", key, map[string]any{
			"targetUrl": "https://127.0.0.1:1/x", "eventTypes": []string{"entity.created"}, "rateLimit": bad})
		if !strings.Contains(string(res.Body), `"field":"rateLimit"`) {
			t.Fatalf("rateLimit %v: %s", bad, res.Body)
		}
	}
	var list struct{ Webhooks []any }
	d.do(t, http.StatusOK, "GET", "/api/v1/webhooks", key, nil).decode(t, &list)
	if len(list.Webhooks) != 0 {
		t.Fatalf("a refused create left %d webhooks", len(list.Webhooks))
	}

	limited, free, other := newReceiver(t), newReceiver(t), newReceiver(t)
	const rate, n = 4, 24
	type hook struct {
		ID        string
		RateLimit *int
	}
	var lh, fh hook
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": limited.srv.URL, "eventTypes": []string{"entity.created"}, "rateLimit": 1000}).decode(t, &lh)
	if lh.RateLimit == nil || *lh.RateLimit != 1000 {
		t.Fatalf("created with rateLimit %v", lh.RateLimit)
	}
	d.do(t, http.StatusBadRequest, "PATCH", "/api/v1/webhooks/"+lh.ID, key, map[string]any{"rateLimit": 0})
	d.do(t, http.StatusOK, "PATCH", "/api/v1/webhooks/"+lh.ID, key, map[string]any{"rateLimit": rate}).decode(t, &lh)
	d.do(t, http.StatusOK, "GET", "/api/v1/webhooks/"+lh.ID, key, nil).decode(t, &lh)
	if lh.RateLimit == nil || *lh.RateLimit != rate {
		t.Fatalf("GET shows rateLimit %v after PATCH %d", lh.RateLimit, rate)
	}
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": free.srv.URL, "eventTypes": []string{"entity.created"}, "rateLimit": 3}).decode(t, &fh)
	d.do(t, http.StatusOK, "PATCH", "/api/v1/webhooks/"+fh.ID, key, map[string]any{"rateLimit": nil}).decode(t, &fh)
	if fh.RateLimit != nil {
		t.Fatalf("PATCH rateLimit null left %v", *fh.RateLimit)
	}
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", otherKey, map[string]any{
		"targetUrl": other.srv.URL, "eventTypes": []string{"entity.created"}})

	items := make([]any, n)
	for i := range items {
		items[i] = map[string]any{"title": fmt.Sprintf("paced %d", i)}
	}
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note/batch", key, map[string]any{"items": items})
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note/batch", otherKey, map[string]any{"items": items})

	// The unlimited webhooks finish while the limited one still waits.
	deadline := time.Now().Add(90 * time.Second)
	for free.distinct() < n || other.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("unlimited webhooks got %d and %d of %d", free.distinct(), other.distinct(), n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := limited.distinct(); got >= n {
		t.Fatalf("the limited webhook had no backlog left (%d of %d) when the unlimited ones completed", got, n)
	}
	// Its waiting deliveries are queued, not failed.
	var dl struct{ Deliveries []struct{ Status string } }
	d.do(t, http.StatusOK, "GET", "/api/v1/webhooks/"+lh.ID+"/deliveries?limit=500", key, nil).decode(t, &dl)
	statuses := map[string]int{}
	for _, x := range dl.Deliveries {
		statuses[x.Status]++
	}
	if statuses["failed"]+statuses["retrying"] > 0 || statuses["succeeded"]+statuses["queued"]+statuses["pending"] != n {
		t.Fatalf("limited webhook's deliveries during the backlog: %v", statuses)
	}
	for limited.distinct() < n {
		if time.Now().After(deadline) {
			t.Fatalf("the limited webhook got %d of %d", limited.distinct(), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The limit bounds the starts of the POSTs (each recorded as its
	// attempt's time, in the delivery log): no slack. Arrivals add the
	// transit to the receiver, which a loaded machine can stretch by more
	// than the spacing's slack (docs/webhooks.md, "Rate limit"), so they
	// are reported, not asserted.
	var starts []time.Time
	for {
		var log struct {
			Deliveries []struct {
				Status     string
				AttemptLog []struct{ AttemptedAt time.Time }
			}
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/webhooks/"+lh.ID+"/deliveries?limit=500", key, nil).decode(t, &log)
		starts = starts[:0]
		for _, x := range log.Deliveries {
			if x.Status == "succeeded" && len(x.AttemptLog) > 0 {
				starts = append(starts, x.AttemptLog[0].AttemptedAt)
			}
		}
		if len(starts) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d deliveries of the limited webhook recorded as succeeded", len(starts), n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if most, at := mostPerSecond(starts); most > rate {
		t.Fatalf("%d deliveries started in the second from %s; rateLimit is %d", most, at.Format(time.RFC3339Nano), rate)
	}
	if most, at := limited.maxPerSecond(); most > rate {
		t.Logf("%d deliveries arrived in the second from %s (rateLimit %d): transit jitter beyond the spacing's slack", most, at.Format(time.RFC3339Nano), rate)
	}
	limited.mu.Lock()
	defer limited.mu.Unlock()
	for id, c := range limited.ids {
		if c != 1 {
			t.Errorf("event %s delivered %d times", id, c)
		}
	}
}

package webhooks_test

import (
	"bytes"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

type replayView struct {
	ID     string `json:"id"`
	Status string `json:"status"`
	Total  int    `json:"total"`
	Sent   int    `json:"sent"`
}

// TestReplaySinceATime: deliveries that exhausted their retries are
// re-sent by a replay with onlyFailed (and the succeeded ones are not);
// a replay of all re-sends every delivery since the time. Not parallel:
// it shortens the retry schedule so that deliveries exhaust in the test,
// and parallel tests wait while it runs.
func TestReplaySinceATime(t *testing.T) {
	saved := webhook.Schedule
	webhook.Schedule = []time.Duration{50 * time.Millisecond, 50 * time.Millisecond}
	t.Cleanup(func() { webhook.Schedule = saved })
	app := server(t, true)
	_, key := app.Tenant(t)
	_, otherKey := app.Tenant(t)
	app.Schema(t, key, shop)
	var mu sync.Mutex
	ok := map[string]int{} // successful receipts per event (webhook-id)
	fixed := false
	rc := webhooktest.NewReceiver(t, func(r webhooktest.Request) int {
		mu.Lock()
		defer mu.Unlock()
		if !fixed && bytes.Contains(r.Body, []byte(`"bad-`)) {
			return http.StatusServiceUnavailable
		}
		ok[r.Header.Get("webhook-id")]++
		return http.StatusOK
	})
	var hook hookView
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": rc.URL + "/r", "eventTypes": []string{"entity.created"}}).Decode(t, &hook)
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	for _, n := range []string{"good-1", "bad-1", "good-2", "bad-2"} {
		app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": n})
	}
	type dlog struct {
		Deliveries []struct {
			ID      string `json:"id"`
			EventID string `json:"eventId"`
			Status  string `json:"status"`
		} `json:"deliveries"`
	}
	count := func(status string) int {
		var dl dlog
		app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries?status="+status, key, nil).Decode(t, &dl)
		return len(dl.Deliveries)
	}
	webhooktest.Eventually(t, 60*time.Second, "2 succeeded and 2 exhausted deliveries", func() bool {
		return count(webhook.StatusSucceeded) == 2 && count(webhook.StatusFailed) == 2
	})
	var all dlog
	app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries", key, nil).Decode(t, &all)
	failedEvents := map[string]bool{}
	for _, d := range all.Deliveries {
		if d.Status == webhook.StatusFailed {
			failedEvents[d.EventID] = true
		}
	}
	perEvent := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		m := map[string]int{}
		for k, v := range ok {
			m[k] = v
		}
		return m
	}
	mu.Lock()
	fixed = true // the endpoint is fixed
	mu.Unlock()

	wait := func(id string, total int) {
		t.Helper()
		var rv replayView
		// A bound, not a timing: on a loaded machine the shared Temporal dev
		// server took over a minute to run a replay of nothing.
		webhooktest.Eventually(t, 3*time.Minute, "the replay completes", func() bool {
			app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID+"/replays/"+id, key, nil).Decode(t, &rv)
			return rv.Status == "completed"
		})
		if rv.Total != total || rv.Sent != total {
			t.Fatalf("replay %+v, want %d sent", rv, total)
		}
	}

	// Only the failed ones.
	var rv replayView
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key,
		map[string]any{"since": since, "onlyFailed": true}).Decode(t, &rv)
	wait(rv.ID, 2)
	webhooktest.Eventually(t, 60*time.Second, "all 4 deliveries succeeded", func() bool { return count(webhook.StatusSucceeded) == 4 })
	got := perEvent()
	if len(got) != 4 {
		t.Fatalf("successful receipts per event %v, want 4 events", got)
	}
	for ev, n := range got {
		if n != 1 {
			t.Fatalf("event %s received %d times after the failed-only replay (failed: %v)", ev, n, failedEvents[ev])
		}
	}

	// All of them since the time.
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key,
		map[string]any{"since": since}).Decode(t, &rv)
	wait(rv.ID, 4)
	webhooktest.Eventually(t, 60*time.Second, "every event re-sent once more", func() bool {
		got := perEvent()
		for _, n := range got {
			if n != 2 {
				return false
			}
		}
		return len(got) == 4
	})
	// A time after the deliveries replays nothing.
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key,
		map[string]any{"since": time.Now().UTC().Format(time.RFC3339Nano)}).Decode(t, &rv)
	wait(rv.ID, 0)
	// until ends the window: one ending a millisecond after since holds none
	// of the deliveries (made later); one ending now holds all four.
	sinceT, _ := time.Parse(time.RFC3339Nano, since)
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key,
		map[string]any{"since": since, "until": sinceT.Add(time.Millisecond).Format(time.RFC3339Nano)}).Decode(t, &rv)
	wait(rv.ID, 0)
	app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key,
		map[string]any{"since": since, "until": time.Now().UTC().Format(time.RFC3339Nano), "onlyFailed": true}).Decode(t, &rv)
	wait(rv.ID, 0) // none failed any more
	for _, until := range []any{"tomorrow", 5, since} {
		r := app.Must(t, http.StatusBadRequest, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key, map[string]any{"since": since, "until": until})
		var e errBody
		r.Decode(t, &e)
		if len(e.Error.Details) == 0 || e.Error.Details[0].Field != "until" {
			t.Errorf("replay until %v: %s; want the field until named", until, r.Body)
		}
	}

	// Bad input names the field; unknown or another tenant's webhook is 404.
	for _, body := range []map[string]any{
		{}, {"since": "yesterday"}, {"since": 12}, {"since": time.Now().Add(time.Hour).Format(time.RFC3339)},
	} {
		r := app.Must(t, http.StatusBadRequest, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key, body)
		var e errBody
		r.Decode(t, &e)
		if len(e.Error.Details) == 0 || e.Error.Details[0].Field != "since" {
			t.Errorf("replay %v: %s; want the field since named", body, r.Body)
		}
	}
	app.Must(t, http.StatusNotFound, "POST", "/api/v1/webhooks/0190a5c4-0000-7000-8000-000000000000/replay", key, map[string]any{"since": since})
	app.Must(t, http.StatusNotFound, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", otherKey, map[string]any{"since": since})
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/webhooks/"+hook.ID+"/replays/"+rv.ID, otherKey, nil)
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/webhooks/"+hook.ID+"/replays/not-a-uuid", key, nil)
}

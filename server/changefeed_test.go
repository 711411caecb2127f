package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv"
)

type feedEvent struct {
	ID, Type, EntityName, EntityID string
	Record                         map[string]any
	Timestamp                      time.Time
}

// sse reads the change feed at url as Server-Sent Events (Accept:
// text/event-stream, the cursor in Last-Event-ID as an EventSource sends
// it when it reconnects) until it has count events; each id: must be its
// event's cursor.
func sse(t *testing.T, url, key string, count int, after string) []feedEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Error(err)
		return nil
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", after)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return nil
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); res.StatusCode != http.StatusOK || ct != "text/event-stream" {
		t.Errorf("status %d, content type %s", res.StatusCode, ct)
		return nil
	}
	var evs []feedEvent
	var id string
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for len(evs) < count && sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "id: "):
			id = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			var ev feedEvent
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev); err != nil || ev.ID != id {
				t.Errorf("event %s (id: %s): %v", line, id, err)
				return nil
			}
			evs = append(evs, ev)
		}
	}
	return evs
}

// TestChangeFeed: GET /api/v1/events as JSON pages with filters and a
// cursor, 410 CURSOR_EXPIRED for a cursor past retention, 400 naming the
// bad parameter, and Server-Sent Events: one client reads two events on one
// replica, a second resumes after the last cursor the first printed on
// another replica (a second server.New over the same database) and reads
// the rest, including a write made while it streams: every event exactly
// once, in order.
func TestChangeFeed(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	rcfg := testenv.Config(t)
	rcfg.EventRetention = 7 * 24 * time.Hour
	replica := testenv.NewServer(t, rcfg)
	_, key := app.Tenant(t)
	app.Schema(t, key, notes)
	var ids []string
	for i := range 6 {
		ids = append(ids, app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": fmt.Sprint("n", i)}).JSON(t)["id"].(string))
	}
	type page struct {
		Events     []feedEvent
		NextCursor *string
	}
	var p1, p2 page
	app.Must(t, http.StatusOK, "GET", "/api/v1/events?entities=Note&types=entity.created&limit=3", key, nil).Decode(t, &p1)
	app.Must(t, http.StatusOK, "GET", "/api/v1/events?entities=Note&types=entity.created&limit=3&after="+*p1.NextCursor, key, nil).Decode(t, &p2)
	all := append(p1.Events, p2.Events...)
	if len(all) != 6 {
		t.Fatalf("pages: %+v %+v", p1, p2)
	}
	for i, ev := range all {
		if ev.EntityID != ids[i] || ev.Type != "entity.created" || ev.EntityName != "Note" || ev.Record["title"] != fmt.Sprint("n", i) {
			t.Fatalf("event %d: %+v, want the creation of %s", i, ev, ids[i])
		}
	}
	if *p2.NextCursor != all[5].ID {
		t.Fatalf("nextCursor %s, want the last event %s", *p2.NextCursor, all[5].ID)
	}

	// since: from the first event written at or after a time.
	var fromTime page
	since := all[3].Timestamp.Format(time.RFC3339Nano)
	app.Must(t, http.StatusOK, "GET", "/api/v1/events?entities=Note&since="+url.QueryEscape(since), key, nil).Decode(t, &fromTime)
	if len(fromTime.Events) != 3 || fromTime.Events[0].ID != all[3].ID {
		t.Fatalf("since %s: %+v, want the last three creations", since, fromTime.Events)
	}
	old := time.Now().Add(-30 * 24 * time.Hour).Format(time.RFC3339)
	if b := replica.Must(t, http.StatusGone, "GET", "/api/v1/events?since="+url.QueryEscape(old), key, nil).Body; !strings.Contains(string(b), `"CURSOR_EXPIRED"`) {
		t.Fatalf("since past retention: %s", b)
	}

	gone := app.Must(t, http.StatusGone, "GET", "/api/v1/events?after="+uuid.Must(uuid.NewV7()).String(), key, nil)
	if !strings.Contains(string(gone.Body), `"CURSOR_EXPIRED"`) {
		t.Fatalf("expired cursor: %s", gone.Body)
	}
	for q, field := range map[string]string{"limit=0": "limit", "types=entity.nope": "types", "after=%FF": "after", "after=x": "after", "since=yesterday": "since", "since=2026-01-01T00:00:00Z&after=" + all[0].ID: "since"} {
		if b := app.Must(t, http.StatusBadRequest, "GET", "/api/v1/events?"+q, key, nil).Body; !strings.Contains(string(b), field) {
			t.Errorf("%s: %s", q, b)
		}
	}

	// SSE across replicas, with a write while the second client streams.
	first := sse(t, app.URL+"/api/v1/events?entities=Note", key, 2, all[0].ID)
	done := make(chan []feedEvent)
	go func() { done <- sse(t, replica.URL+"/api/v1/events?entities=Note", key, 5, first[len(first)-1].ID) }()
	late := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "late"}).JSON(t)["id"].(string)
	got := append(first, <-done...)
	if t.Failed() {
		return
	}
	want := append(ids[1:], late)
	if len(got) != len(want) {
		t.Fatalf("%d events over SSE, want %d: %+v", len(got), len(want), got)
	}
	for i, ev := range got {
		if ev.EntityID != want[i] {
			t.Fatalf("SSE event %d is %s, want %s", i, ev.EntityID, want[i])
		}
	}

	// An EventSource reconnects to the URL it was opened with, its after or
	// since included, and sends the last id it received as Last-Event-ID:
	// it resumes after that id, repeating nothing and refused for nothing.
	for _, opened := range []string{"after=" + all[0].ID, "since=" + url.QueryEscape(all[0].Timestamp.Format(time.RFC3339Nano))} {
		again := sse(t, app.URL+"/api/v1/events?entities=Note&"+opened, key, 2, all[3].ID)
		if len(again) != 2 || again[0].EntityID != ids[4] || again[1].EntityID != ids[5] {
			t.Errorf("opened with %s, reconnected after event 3: %+v, want events 4 and 5", opened, again)
		}
	}
}

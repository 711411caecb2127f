package server_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/outbox"
)

// Every committed event is announced on dds_events exactly once, in a
// "<tenant>:<event id>,..." payload, by the server after commit (the writes themselves
// do not NOTIFY, which would serialise their commits).
func TestCommittedEventsAreAnnouncedOnce(t *testing.T) {
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, notes)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, testenv.DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `LISTEN dds_events`); err != nil {
		t.Fatal(err)
	}

	id := app.Must(t, 201, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "a"}).JSON(t)["id"].(string)
	app.Must(t, 200, "PATCH", "/api/v1/dynamic/Note/"+id, key, map[string]any{"title": "b"})
	app.Must(t, 201, "POST", "/api/v1/dynamic/Note/batch", key, map[string]any{"items": []any{
		map[string]any{"title": "c"}, map[string]any{"title": "d"}, map[string]any{"title": "e"}}})
	app.Must(t, 204, "DELETE", "/api/v1/dynamic/Note/"+id, key, nil)

	var want []string
	if err := conn.QueryRow(ctx, `SELECT array_agg(id::text ORDER BY seq) FROM dds.events WHERE tenant_id = $1`, tenantID).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if len(want) != 6 {
		t.Fatalf("%d events written, want 6", len(want))
	}
	got := map[string]int{}
	await := func(stop func() bool) {
		t.Helper()
		for !stop() {
			n, err := conn.WaitForNotification(ctx)
			if err != nil {
				t.Fatalf("waiting for notifications (got %v): %v", got, err)
			}
			if tenant, evs, _ := outbox.ParseNotification(n.Payload); tenant == tenantID {
				for _, ev := range evs {
					got[ev]++
				}
			} else if n.Payload == "sentinel" {
				got["sentinel"]++
			}
		}
	}
	await(func() bool {
		for _, id := range want {
			if got[id] == 0 {
				return false
			}
		}
		return true
	})
	// Anything announced with the writes themselves arrived before this.
	if _, err := conn.Exec(ctx, `NOTIFY dds_events, 'sentinel'`); err != nil {
		t.Fatal(err)
	}
	await(func() bool { return got["sentinel"] > 0 })
	delete(got, "sentinel")
	if len(got) != len(want) {
		t.Errorf("announced %v, want each of %v", got, want)
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("event %s announced %d times, want once", id, n)
		}
	}
}

// Event ids are time-ordered (UUID version 7, as record ids are), so the
// outbox's primary key grows at its right edge instead of at a random leaf
// per write: ids of events written one after another carry non-decreasing
// millisecond timestamps, close to the time of writing.
func TestEventIDsAreTimeOrdered(t *testing.T) {
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, notes)
	before := time.Now()
	id := app.Must(t, 201, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "a"}).JSON(t)["id"].(string)
	app.Must(t, 200, "PATCH", "/api/v1/dynamic/Note/"+id, key, map[string]any{"title": "b"})
	app.Must(t, 201, "POST", "/api/v1/dynamic/Note/batch", key, map[string]any{"items": []any{
		map[string]any{"title": "c"}, map[string]any{"title": "d"}}})
	after := time.Now()
	var ids []uuid.UUID
	if err := app.Server.DB.SelectContext(t.Context(), &ids, `SELECT id FROM dds.events WHERE tenant_id = $1 ORDER BY seq`, tenantID); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 4 {
		t.Fatalf("%d events, want 4", len(ids))
	}
	var prev time.Time
	for i, id := range ids {
		if id.Version() != 7 || id.Variant() != uuid.RFC4122 {
			t.Fatalf("event %d id %s is version %d (variant %s), want a version 7 RFC 4122 UUID", i, id, id.Version(), id.Variant())
		}
		sec, nsec := id.Time().UnixTime()
		at := time.Unix(sec, nsec)
		if at.Before(before.Truncate(time.Millisecond).Add(-time.Second)) || at.After(after.Add(time.Second)) {
			t.Fatalf("event %d id %s carries %s, outside the writes' time %s–%s", i, id, at, before, after)
		}
		if at.Before(prev) {
			t.Fatalf("event %d id %s carries %s, before the previous event's %s", i, id, at, prev)
		}
		prev = at
	}
}

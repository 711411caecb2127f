package jobs_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// A job's write announces every one of its events on dds_events, in
// outbox order and in payloads Postgres accepts, so a live GraphQL
// subscriber sees all of them, not only the first.
func TestJobAnnouncesEveryEvent(t *testing.T) {
	app := testenv.Server(t)
	d := testenv.DB(t)
	tenant, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{map[string]any{"name": "Item",
		"fields": []any{map[string]any{"name": "n", "type": "INTEGER"}}}}})
	const n = 450 // three notifications' worth of ids
	var items []any
	for i := range n {
		items = append(items, map[string]any{"n": i})
	}
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Item/batch", key, map[string]any{"items": items})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := pgnotify.New(testenv.DatabaseURL(t), slog.New(slog.DiscardHandler))
	got := make(chan []string, 100)
	if err := hub.Subscribe(outbox.Channel, func(p string) {
		if tn, ids, ok := outbox.ParseNotification(p); ok && tn == tenant {
			if len(p) > pgnotify.MaxPayload {
				t.Errorf("payload of %d bytes", len(p))
			}
			got <- ids
		}
	}); err != nil {
		t.Fatal(err)
	}
	go hub.Run(ctx)

	rs := records.NewStore(d, schema.NewService(d), nil)
	j, err := jobs.NewService(d, rs, startNothing{}).Create(ctx, records.SystemPrincipal(tenant), &jobs.Request{Type: jobs.TypeUpdate, Entity: "Item",
		Spec: jobs.Spec{Where: map[string]any{"n": map[string]any{"$gte": json.Number("0")}}, Set: map[string]any{"n": json.Number("-1")}, EmitEvents: true}})
	if err != nil {
		t.Fatal(err)
	}
	x := jobs.NewExecutor(d, rs, nil, nil, nil)
	if o, err := x.Begin(ctx, j.ID); err != nil || o != jobs.Continue {
		t.Fatalf("begin: %s %v", o, err)
	}
	if o, err := x.Prepare(ctx, j.ID, func(int64) error { return nil }); err != nil || o != jobs.Continue {
		t.Fatalf("prepare: %s %v", o, err)
	}
	if o, err := x.Apply(ctx, j.ID); err != nil || o != jobs.Succeeded {
		t.Fatalf("apply: %s %v", o, err)
	}
	var want []string
	if err := d.Select(&want, `SELECT id::text FROM dds.events WHERE tenant_id = $1 AND type = 'entity.updated' ORDER BY seq`, tenant); err != nil {
		t.Fatal(err)
	}
	if len(want) != n {
		t.Fatalf("%d events written, want %d", len(want), n)
	}
	// The batch create's own announcement may arrive too: keep the job's.
	job := map[string]bool{}
	for _, id := range want {
		job[id] = true
	}
	var seen []string
	for len(seen) < n {
		select {
		case ids := <-got:
			for _, id := range ids {
				if job[id] {
					seen = append(seen, id)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d events announced", len(seen), n)
		}
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("announced %d ids, not the job's %d events in outbox order", len(seen), len(want))
	}
}

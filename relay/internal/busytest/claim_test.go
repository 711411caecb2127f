package busytest

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// fresh empties this package's database of webhooks and unrelayed events
// (it is the package's alone and outlives a run) and subscribes a webhook
// of a new tenant to a new receiver.
func fresh(t *testing.T, name string) (string, *webhooktest.Receiver) {
	t.Helper()
	d := webhooktest.DB(t)
	if _, err := d.Exec(`DELETE FROM dds.webhooks; UPDATE dds.events SET relayed_at = now() WHERE relayed_at IS NULL`); err != nil {
		t.Fatal(err)
	}
	rc := webhooktest.NewReceiver(t, nil)
	tn := webhooktest.Tenant(t, d, name)
	if _, err := webhook.NewStore(d).Create(context.Background(), tn, webhook.CreateInput{TargetURL: rc.URL, EventTypes: outbox.Types}, true); err != nil {
		t.Fatal(err)
	}
	return tn, rc
}

func received(rc *webhooktest.Receiver) map[string]int {
	out := map[string]int{}
	for _, r := range rc.Requests() {
		var p struct {
			ID string `json:"id"`
		}
		if json.Unmarshal(r.Body, &p) == nil {
			out[p.ID]++
		}
	}
	return out
}

// TestLateCommittedEventIsRelayedAfterABacklog: while a backlog drains the
// relay claims each batch after the previous one, so an event that
// commits late with a lower seq (seq is taken at insert) is behind every
// such claim; the claim from the head that follows a short claim takes it.
// Nothing announces and the safety-net poll is an hour away.
func TestLateCommittedEventIsRelayedAfterABacklog(t *testing.T) {
	d := webhooktest.DB(t)
	ctx := context.Background()
	tn, rc := fresh(t, "late committer")
	slow, err := d.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback()
	var late string
	if err := slow.Get(&late, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
		VALUES ($1, gen_random_uuid(), 'shop', 'entity.created', 'Product', gen_random_uuid(), '{}') RETURNING id`, tn); err != nil {
		t.Fatal(err)
	}
	var backlog []string
	for range 7 {
		backlog = append(backlog, webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil))
	}
	r := relay.New(d, rc.Client(t), nil, relay.Config{BatchSize: 2, PollInterval: time.Hour, BusyFor: time.Hour},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	defer func() { stop(); <-done }()
	webhooktest.Eventually(t, time.Minute, "the backlog's deliveries", func() bool { return len(received(rc)) == len(backlog) })
	if err := slow.Commit(); err != nil {
		t.Fatal(err)
	}
	webhooktest.Eventually(t, time.Minute, "the late event's delivery", func() bool { return received(rc)[late] == 1 })
	got := received(rc)
	for _, id := range append(backlog, late) {
		if got[id] != 1 {
			t.Errorf("event %s delivered %d times, want once", id, got[id])
		}
	}
}

// TestTraceFollowsABatch: Config.Trace receives each batch's timeline,
// with its counts, in the order of the batch's phases.
func TestTraceFollowsABatch(t *testing.T) {
	d := webhooktest.DB(t)
	ctx := context.Background()
	tn, rc := fresh(t, "traced relay")
	const n = 6
	for range n {
		webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil)
	}
	traces := make(chan relay.BatchTrace, 1)
	r := relay.New(d, rc.Client(t), nil, relay.Config{BatchSize: 10, Trace: func(b relay.BatchTrace) { traces <- b }},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	if got, err := r.RelayOnce(ctx); err != nil || got != n {
		t.Fatalf("RelayOnce: %d events, %v", got, err)
	}
	b := <-traces
	if b.Err != nil || b.Events != n || b.Deliveries != n {
		t.Fatalf("trace: %d events, %d deliveries, err %v; want %d, %d, nil", b.Events, b.Deliveries, b.Err, n, n)
	}
	rows, relayed := 0, 0
	last := b.LastResult
	for _, rec := range b.Records {
		rows += rec.Rows
		relayed += rec.Relayed
		if rec.Start.Before(b.FirstSend) || rec.End.Before(rec.Start) {
			t.Errorf("recording %v–%v outside the batch's sends (first %v)", rec.Start, rec.End, b.FirstSend)
		}
		last = rec.End
	}
	if rows != n || relayed != n {
		t.Errorf("recordings wrote %d rows and relayed %d events, want %d each", rows, relayed, n)
	}
	for i, ts := range []time.Time{b.ClaimStart, b.Claimed, b.Matched, b.FirstSend, b.LastResult, last, b.Done} {
		if ts.IsZero() || (i > 0 && ts.Before([]time.Time{b.ClaimStart, b.Claimed, b.Matched, b.FirstSend, b.LastResult, last}[i-1])) {
			t.Fatalf("phase %d at %v is missing or out of order: %+v", i, ts, b)
		}
	}
	if got := received(rc); len(got) != n {
		t.Fatalf("%d events delivered, want %d", len(got), n)
	}
}

// TestEventsInFlightAreBounded: a claim takes at most what is left of
// Config.InFlightEvents, so the events of the batches in flight (what a
// crash can repeat) never exceed it, while every event is delivered once.
func TestEventsInFlightAreBounded(t *testing.T) {
	d := webhooktest.DB(t)
	ctx := context.Background()
	tn, rc := fresh(t, "bounded relay")
	const n, bound = 12, 4
	var want []string
	for range n {
		want = append(want, webhooktest.Event(t, d, tn, "shop", outbox.EntityCreated, "Product", nil))
	}
	var mu sync.Mutex
	var batches []relay.BatchTrace
	r := relay.New(d, rc.Client(t), nil, relay.Config{BatchSize: 10, InFlightEvents: bound, PollInterval: time.Hour, BusyFor: time.Hour,
		Trace: func(b relay.BatchTrace) { mu.Lock(); batches = append(batches, b); mu.Unlock() }},
		slog.New(slog.NewTextHandler(io.Discard, nil)))
	rctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	webhooktest.Eventually(t, time.Minute, "every delivery", func() bool { return len(received(rc)) == n })
	stop()
	<-done
	got := received(rc)
	for _, id := range want {
		if got[id] != 1 {
			t.Errorf("event %s delivered %d times, want once", id, got[id])
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// A batch still running when another's claim started was counted when
	// that claim was sized: their events together stay within the bound.
	// (A batch whose results are all recorded, ending its claim, can repeat
	// nothing: it no longer counts.)
	for _, b := range batches {
		if b.Recorded.IsZero() || b.Done.Before(b.Recorded) {
			t.Fatalf("batch recorded at %v, done at %v", b.Recorded, b.Done)
		}
		sum := b.Events
		for _, a := range batches {
			if a.ClaimStart.Before(b.ClaimStart) && a.Recorded.After(b.ClaimStart) {
				sum += a.Events
			}
		}
		if sum > bound {
			t.Fatalf("a claim of %d events started with %d others in flight, more than the bound %d", b.Events, sum-b.Events, bound)
		}
	}
}

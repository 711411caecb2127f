package outbox_test

import (
	"context"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// hold holds up to 1000 events of the database and returns the claim (nil
// when none was free) and the held events of o.
func hold(t *testing.T, ctx context.Context, s *outbox.Store, o outbox.Origin, lease time.Duration) (*outbox.Held, []string) {
	t.Helper()
	h, err := s.Hold(ctx, 1000, 0, lease)
	if err != nil {
		t.Fatal(err)
	}
	if h == nil {
		return nil, nil
	}
	t.Cleanup(func() { _ = h.Release() })
	var own []string
	for _, e := range h.Events {
		if e.TenantID == o.TenantID {
			own = append(own, e.ID)
		}
	}
	return h, own
}

func relayedAt(t *testing.T, d *sqlx.DB, id string) *time.Time {
	t.Helper()
	var at *time.Time
	if err := d.Get(&at, `SELECT relayed_at FROM dds.events WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
	return at
}

// Held events are taken by no other claim, of either kind, while held;
// Finish marks the relayed ones, gives the deferred ones an expiring claim
// and frees the rest at once.
func TestHeldEventsAreTakenByNoOtherClaimUntilFinished(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	ctx := context.Background()

	evs := events(t, d, o, 3)
	h, held := hold(t, ctx, s, o, time.Minute)
	if !sameSet(held, evs) {
		t.Fatalf("held %v, want %v", held, evs)
	}
	for _, e := range h.Events {
		if e.TenantID == o.TenantID && (e.TenantName != t.Name() || e.Type != outbox.EntityCreated || len(e.Record) == 0 || e.Seq == 0) {
			t.Errorf("held event %+v", e)
		}
	}
	if _, again := hold(t, ctx, s, o, time.Minute); len(again) != 0 {
		t.Fatalf("held again while held: %v", again)
	}
	if got := claim(t, s, o, time.Hour); len(got) != 0 {
		t.Fatalf("an expiring claim took held events: %v", ids(got))
	}
	if err := h.Touch(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.Finish(ctx, []string{evs[0]}, []string{evs[1]}, time.Hour); err != nil {
		t.Fatal(err)
	}
	if relayedAt(t, d, evs[0]) == nil || relayedAt(t, d, evs[1]) != nil || relayedAt(t, d, evs[2]) != nil {
		t.Fatal("Finish must mark exactly the relayed event")
	}
	// The deferred one waits out its lease; the third is free at once.
	_, free := hold(t, ctx, s, o, time.Minute)
	if !sameSet(free, []string{evs[2]}) {
		t.Fatalf("after Finish, held %v, want only %v", free, evs[2])
	}
	if err := h.Finish(ctx, nil, nil, time.Hour); err == nil {
		t.Fatal("a finished claim finished again")
	}
}

// An event under an expiring claim (a relay of an earlier version) is not
// held until that claim ends.
func TestHoldSkipsEventsUnderALiveExpiringClaim(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	ctx := context.Background()
	evs := events(t, d, o, 2)
	if got := claim(t, s, o, time.Hour); !sameSet(ids(got), evs) {
		t.Fatalf("claimed %v", ids(got))
	}
	if _, held := hold(t, ctx, s, o, time.Minute); len(held) != 0 {
		t.Fatalf("held events under a live claim: %v", held)
	}
	if err := s.Release(ctx, evs); err != nil {
		t.Fatal(err)
	}
	if _, held := hold(t, ctx, s, o, time.Minute); !sameSet(held, evs) {
		t.Fatalf("after the claim ended, held %v, want %v", held, evs)
	}
}

// A claim ends with its relay: released, its context ended (the batch's
// time is up, or the process died with its connection), or silent for
// longer than the lease (a paused or cut-off relay). Nothing is marked.
func TestAHeldClaimEndsWithItsRelay(t *testing.T) {
	d := webhooktest.DB(t)
	s := outbox.NewStore(d)
	o := newTenant(t, d)
	evs := events(t, d, o, 2)
	ctx := context.Background()

	h, held := hold(t, ctx, s, o, time.Minute)
	if !sameSet(held, evs) {
		t.Fatalf("held %v", held)
	}
	if err := h.Release(); err != nil {
		t.Fatal(err)
	}

	cctx, cancel := context.WithCancel(ctx)
	if _, held = hold(t, cctx, s, o, time.Minute); !sameSet(held, evs) {
		t.Fatalf("after Release, held %v, want %v", held, evs)
	}
	cancel()
	webhooktest.Eventually(t, 10*time.Second, "the events free after the context ended", func() bool {
		h, again := hold(t, ctx, s, o, time.Minute)
		if h != nil {
			_ = h.Release()
		}
		return sameSet(again, evs)
	})

	const lease = 300 * time.Millisecond
	silent, held := hold(t, ctx, s, o, lease)
	if !sameSet(held, evs) {
		t.Fatalf("held %v", held)
	}
	start := time.Now()
	webhooktest.Eventually(t, 10*time.Second, "the events free after the silent relay's lease", func() bool {
		h, again := hold(t, ctx, s, o, time.Minute)
		if h != nil {
			_ = h.Release()
		}
		return sameSet(again, evs)
	})
	if time.Since(start) < lease {
		t.Errorf("taken over after %s, within the %s lease", time.Since(start), lease)
	}
	if err := silent.Finish(ctx, evs, nil, time.Hour); err == nil {
		t.Fatal("a claim that lapsed was finished")
	}
	for _, id := range evs {
		if relayedAt(t, d, id) != nil {
			t.Fatalf("event %s marked relayed by a claim that had lapsed", id)
		}
	}
}

package webhook_test

import (
	"context"
	"testing"
	"time"

	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// Retries reserve slots of a rate-limited webhook on its pacing row: each
// one Interval after the previous, at most twice the horizon ahead; beyond
// that the caller is told how long to wait. An unlimited webhook's retries
// need no slot.
func TestReserveSlotSpacesRetries(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	ten := webhooktest.Tenant(t, d, "paced")
	rate := 10
	w, err := st.Create(ctx, ten, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.created"}, RateLimit: &rate}, false)
	if err != nil {
		t.Fatal(err)
	}
	step := webhook.Interval(rate)
	var prev time.Time
	reserved := 0
	for {
		slot, wait, ok, err := st.ReserveSlot(ctx, w.ID)
		returned := time.Now()
		if err != nil {
			t.Fatal(err)
		}
		// A slot is never more than twice the horizon after its
		// reservation (which happened before the call returned).
		if ok && slot.After(returned.Add(2*webhook.PaceHorizon)) {
			t.Fatalf("slot %d is %v ahead of its reservation, past twice the horizon (%v)", reserved, slot.Sub(returned), 2*webhook.PaceHorizon)
		}
		if !ok {
			if wait <= 0 || wait > step {
				t.Fatalf("no slot, wait %v (step %v)", wait, step)
			}
			break
		}
		if !prev.IsZero() && slot.Sub(prev) != step {
			t.Fatalf("slot %d is %v after the previous, want %v", reserved, slot.Sub(prev), step)
		}
		prev = slot
		reserved++
		if reserved > 100 {
			t.Fatal("slots are handed out without end")
		}
	}
	// 1 s of horizon at 110 ms apart: the first slot now, then 9 more, at
	// least. The horizon moves with the clock while the loop runs (each
	// reservation is a round trip, slow on a busy machine), so more may
	// fit; that none lies beyond the horizon of its own reservation is
	// checked at each one, and the refusal proves the next was out of
	// reach by at most one step.
	if want := int(2*webhook.PaceHorizon/step) + 1; reserved < want-1 {
		t.Fatalf("reserved %d slots within the horizon, want at least %d", reserved, want-1)
	}
	unl, err := st.Create(ctx, ten, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.created"}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if slot, _, ok, err := st.ReserveSlot(ctx, unl.ID); err != nil || !ok || !slot.IsZero() {
		t.Fatalf("unlimited webhook: slot %v ok %v err %v", slot, ok, err)
	}
}

// A tenant export carries a webhook's rate limit and an import restores it.
func TestExportRestoresRateLimit(t *testing.T) {
	t.Parallel()
	d := webhooktest.DB(t)
	st := webhook.NewStore(d)
	ctx := context.Background()
	from := webhooktest.Tenant(t, d, "from")
	to := webhooktest.Tenant(t, d, "to")
	rate := 7
	if _, err := st.Create(ctx, from, webhook.CreateInput{TargetURL: "https://example.com/h", EventTypes: []string{"entity.created"}, RateLimit: &rate}, false); err != nil {
		t.Fatal(err)
	}
	var got []webhook.Exported
	if err := st.Export(ctx, from, func(e webhook.Exported) error { got = append(got, e); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].RateLimit == nil || *got[0].RateLimit != rate {
		t.Fatalf("exported %+v", got)
	}
	w, err := st.Restore(ctx, to, got[0], false)
	if err != nil {
		t.Fatal(err)
	}
	if w.RateLimit == nil || *w.RateLimit != rate {
		t.Fatalf("restored rate limit %v", w.RateLimit)
	}
	// Its pacing row exists: a retry reserves a slot.
	if slot, _, ok, err := st.ReserveSlot(ctx, w.ID); err != nil || !ok || slot.IsZero() {
		t.Fatalf("restored webhook: slot %v ok %v err %v", slot, ok, err)
	}
}

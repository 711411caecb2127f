package pgnotify_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/pgnotify"
)

// TestPublisherDeliversEveryPayloadInOrder: one flush sends the payloads of
// several channels in one statement, and a listener gets each of them, in
// publish order per channel.
func TestPublisherDeliversEveryPayloadInOrder(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	hub := pgnotify.New(testenv.DatabaseURL(t), log)
	// Channels of this test only, so parallel tests' notifications do not mix in.
	suffix := uuid.NewString()[:8]
	chA, chB := "test_a_"+suffix, "test_b_"+suffix
	got := make(chan string, 100)
	for _, ch := range []string{chA, chB} {
		if err := hub.Subscribe(ch, func(p string) { got <- ch + "|" + p }); err != nil {
			t.Fatal(err)
		}
	}
	go hub.Run(ctx)

	pub := pgnotify.NewPublisher(testenv.DB(t), log)
	var want []string
	for i := range 5 {
		pub.Publish(chA, fmt.Sprint("a", i), fmt.Sprint("a", i, "'quoted\""))
		pub.Publish(chB, fmt.Sprint("b", i))
		want = append(want, fmt.Sprint(chA, "|a", i), fmt.Sprint(chA, "|a", i, "'quoted\""), fmt.Sprint(chB, "|b", i))
	}
	pub.Flush(ctx)

	perChannel := map[string][]string{}
	for _, w := range want {
		ch := w[:len(chA)]
		perChannel[ch] = append(perChannel[ch], w)
	}
	seen := map[string][]string{}
	timeout := time.After(10 * time.Second)
	for range want {
		select {
		case g := <-got:
			ch := g[:len(chA)]
			seen[ch] = append(seen[ch], g)
		case <-timeout:
			t.Fatalf("got %v, want %v", seen, perChannel)
		}
	}
	for ch, w := range perChannel {
		if fmt.Sprint(seen[ch]) != fmt.Sprint(w) {
			t.Errorf("%s: got %v, want %v", ch, seen[ch], w)
		}
	}
}

// TestJoinList: items are joined under their key, in order, into as few
// payloads as fit the bound; an item that cannot fit alone is returned.
func TestJoinList(t *testing.T) {
	for _, tc := range []struct {
		name          string
		items         []string
		max           int
		want, tooLong []string
	}{
		{"none", nil, 20, nil, nil},
		{"one payload", []string{"a", "bb", "c"}, 20, []string{"k:a,bb,c"}, nil},
		{"exactly the bound", []string{"aaa", "bbb"}, 9, []string{"k:aaa,bbb"}, nil},
		{"one byte over the bound", []string{"aaa", "bbbb"}, 9, []string{"k:aaa", "k:bbbb"}, nil},
		{"item too long alone", []string{"a", "0123456789", "b"}, 9, []string{"k:a,b"}, []string{"0123456789"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, tooLong := pgnotify.JoinList("k", tc.items, tc.max)
			if fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(tooLong) != fmt.Sprint(tc.tooLong) {
				t.Errorf("got %q (too long %q), want %q (too long %q)", got, tooLong, tc.want, tc.tooLong)
			}
		})
	}
}

// TestPublishListIsCoarseAndBounded: thousands of ids queued under one key
// reach a listener as a few payloads that Postgres accepted (each under
// its limit), carrying every id once, in order; ids of another key travel
// apart.
func TestPublishListIsCoarseAndBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	ch, got := listen(ctx, t, log, "test_list_")

	pub := pgnotify.NewPublisher(testenv.DB(t), log)
	const n = 2000 // 2000 uuids: about 74 kB, ten times the payload limit
	want := map[string][]string{}
	for i := range n {
		key := "tenant-a"
		if i%10 == 0 {
			key = "tenant-b"
		}
		id := uuid.NewString()
		want[key] = append(want[key], id)
		pub.PublishList(ch, key, id)
	}
	pub.Flush(ctx)

	seen := map[string][]string{}
	payloads := 0
	for total := 0; total < n; {
		select {
		case p := <-got:
			payloads++
			if len(p) > pgnotify.MaxPayload {
				t.Errorf("payload of %d bytes, over %d", len(p), pgnotify.MaxPayload)
			}
			key, ids, ok := strings.Cut(p, ":")
			if !ok {
				t.Fatalf("payload %q has no key", p)
			}
			for _, id := range strings.Split(ids, ",") {
				seen[key] = append(seen[key], id)
				total++
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("got %d payloads; ids so far: %d of %d", payloads, len(seen["tenant-a"])+len(seen["tenant-b"]), n)
		}
	}
	for key, w := range want {
		if fmt.Sprint(seen[key]) != fmt.Sprint(w) {
			t.Errorf("%s: ids differ or are out of order (got %d, want %d)", key, len(seen[key]), len(w))
		}
	}
	// 2000 × 37 bytes in payloads under 8000 bytes: about ten, not 2000.
	if payloads > 20 {
		t.Errorf("%d notifications for %d ids: not coarse", payloads, n)
	}
}

// TestRunFlushesWhatShutdownInterrupts: a shutdown that comes while Run
// lets writes gather still announces them (the flush must not run on the
// cancelled context, which would take the batch and fail). Whether Run
// first sees the publish or the shutdown is up to the scheduler, so the
// race is run many times; each round's payload must arrive.
func TestRunFlushesWhatShutdownInterrupts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	ch, got := listen(ctx, t, log, "test_shutdown_")

	db := testenv.DB(t)
	for i := range 20 {
		pub := pgnotify.NewPublisher(db, log)
		runCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		pub.Publish(ch, fmt.Sprint("last words ", i))
		go func() { pub.Run(runCtx); close(done) }()
		stop()
		<-done
		select {
		case p := <-got:
			if want := fmt.Sprint("last words ", i); p != want {
				t.Fatalf("got %q, want %q", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("round %d: the payload published just before shutdown was never announced", i)
		}
	}
}

// TestRunPacesFlushesUnderSteadyWrites: writes published one after another
// for a while are announced, all and in order, in at most one notification
// per pace (20 ms) of the time they took (plus the first and the last),
// not one per write: each notification is a transaction in Postgres and a
// wake-up of every listener.
func TestRunPacesFlushesUnderSteadyWrites(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := slog.New(slog.DiscardHandler)
	ch, got := listen(ctx, t, log, "test_pace_")
	pub := pgnotify.NewPublisher(testenv.DB(t), log)
	go pub.Run(ctx)

	const n = 200
	var want []string
	start := time.Now()
	for range n {
		id := uuid.NewString()
		want = append(want, id)
		pub.PublishList(ch, "tenant", id)
		time.Sleep(time.Millisecond) // a steady stream of writes, not a condition to await
	}
	took := time.Since(start)
	var seen []string
	notifications := 0
	for len(seen) < n {
		select {
		case p := <-got:
			notifications++
			_, ids, _ := strings.Cut(p, ":")
			seen = append(seen, strings.Split(ids, ",")...)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d ids announced", len(seen), n)
		}
	}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("ids differ or are out of order")
	}
	if limit := int(took/(20*time.Millisecond)) + 2; notifications > limit {
		t.Errorf("%d writes over %s announced in %d notifications, want at most %d (one per 20 ms)", n, took, notifications, limit)
	}
}

// listen subscribes a hub running until ctx ends to a channel of this test
// only (prefix and a random suffix, so parallel tests' notifications do not
// mix in) and returns the channel and the payloads it receives.
func listen(ctx context.Context, t *testing.T, log *slog.Logger, prefix string) (string, chan string) {
	t.Helper()
	hub := pgnotify.New(testenv.DatabaseURL(t), log)
	ch := prefix + uuid.NewString()[:8]
	got := make(chan string, 1000)
	if err := hub.Subscribe(ch, func(p string) { got <- p }); err != nil {
		t.Fatal(err)
	}
	go hub.Run(ctx)
	return ch, got
}

package pgnotify_test

import (
	"context"
	"fmt"
	"log/slog"
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

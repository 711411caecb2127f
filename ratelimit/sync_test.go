package ratelimit_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/ratelimit"
)

func TestMain(m *testing.M) { teststack.Main(m) }

// Three replicas with a limit of 30 per window, each admitting a client's
// requests in turn and syncing in between: the cluster admits exactly 30,
// not 3 × 30; and a replica that saw no request for the key still learns
// the others' count.
func TestALimitHoldsAcrossReplicas(t *testing.T) {
	d := testenv.DB(t)
	ctx := context.Background()
	key := "203.0.113.7/" + uuid.NewString() // its own key: other runs share the table
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var replicas []*ratelimit.Limiter
	var syncs []*ratelimit.Sync
	for range 3 {
		l := ratelimit.New(30, time.Hour) // one window for the whole test
		replicas = append(replicas, l)
		syncs = append(syncs, ratelimit.NewSync(d, time.Second, log, map[string]*ratelimit.Limiter{"ip": l}))
	}
	syncAll := func() {
		for _, s := range syncs {
			if err := s.Once(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	admitted := 0
	for round := range 4 {
		for _, l := range replicas {
			for range 5 {
				if l.Allow(key).Allowed {
					admitted++
				}
			}
		}
		// Twice: the first pass leaves replicas that synced early unaware
		// of those that synced after them.
		syncAll()
		syncAll()
		t.Logf("after round %d: %d admitted", round+1, admitted)
	}
	if admitted != 30 {
		t.Fatalf("three replicas admitted %d requests under a shared limit of 30", admitted)
	}
	// A replica that counted nothing for another key hears of it once it
	// has seen the key, and refuses at once when the cluster is over.
	other := key + "/b"
	for range 30 {
		replicas[0].Allow(other)
	}
	syncAll()
	replicas[2].Allow(other) // the first sight: admitted on local knowledge (the documented slack)
	syncAll()
	if r := replicas[2].Allow(other); r.Allowed || r.Remaining != 0 {
		t.Fatalf("replica 3 after the cluster admitted 31: %+v, want refused", r)
	}
}

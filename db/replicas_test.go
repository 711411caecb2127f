package db

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

func TestParseLSN(t *testing.T) {
	for s, want := range map[string]uint64{"0/0": 0, "16/B374D848": 0x16_B374D848, "FFFFFFFF/FFFFFFFF": 1<<64 - 1} {
		if got, err := ParseLSN(s); err != nil || got != want {
			t.Errorf("ParseLSN(%q) = %x, %v; want %x", s, got, err, want)
		}
	}
	for _, s := range []string{"", "16", "x/1", "1/", "100000000/0"} {
		if _, err := ParseLSN(s); err == nil {
			t.Errorf("ParseLSN(%q) accepted", s)
		}
	}
}

// The sampler is what makes the barrier cheap and correct: every read gets
// the answer of a query that started after it asked (so the position
// covers every write acknowledged before the read arrived), and the reads
// that ask while a query runs share one next query.
func TestSamplerCoalescesAndNeverAnswersWithAnEarlierQuery(t *testing.T) {
	var (
		queries atomic.Int64
		started atomic.Int64 // the value a query returns: when it started, in asks seen
		asked   atomic.Int64
		release = make(chan struct{})
	)
	s := &sampler{query: func(context.Context) (uint64, error) {
		queries.Add(1)
		v := uint64(asked.Load())
		started.Store(int64(v))
		<-release
		return v, nil
	}}
	ctx := context.Background()
	// The first read starts a query that blocks; 50 reads ask meanwhile.
	first := make(chan uint64)
	asked.Add(1)
	go func() { v, _ := s.sample(ctx); first <- v }()
	for queries.Load() == 0 {
		time.Sleep(time.Millisecond) // the goroutine above is scheduled
	}
	var wg sync.WaitGroup
	results := make([]uint64, 50)
	for i := range results {
		wg.Add(1)
		n := asked.Add(1)
		go func() {
			defer wg.Done()
			v, _ := s.sample(ctx)
			if v < uint64(n) {
				t.Errorf("read %d got a position sampled before it asked (%d)", n, v)
			}
			results[i] = v
		}()
	}
	for range 50 * 20 {
		if s.waiting() == 50 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	close(release) // every query from now on returns at once
	if v := <-first; v != 1 {
		t.Fatalf("first read got %d, want 1", v)
	}
	wg.Wait()
	if q := queries.Load(); q != 2 {
		t.Fatalf("51 reads ran %d queries, want 2 (the 50 that asked during the first share the second)", q)
	}
}

// waiting counts the reads waiting for the next query (tests only).
func (s *sampler) waiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		return 0
	}
	return s.pending.asks
}

// A replica's lag is the age of the newest primary position it has
// replayed; one that has replayed none of the held positions lags at least
// the oldest one's age.
func TestLag(t *testing.T) {
	r := &Replicas{}
	if got := r.lag(5); got != 0 {
		t.Fatalf("no samples: lag %s, want 0", got)
	}
	now := time.Now()
	for i, lsn := range []uint64{10, 20, 30} {
		r.samples[i] = sample{lsn: lsn, at: now.Add(time.Duration(i-3) * time.Second)} // -3 s, -2 s, -1 s
	}
	r.n = 3
	for _, c := range []struct {
		lsn  uint64
		want time.Duration
	}{{30, time.Second}, {25, 2 * time.Second}, {20, 2 * time.Second}, {5, 3 * time.Second}} {
		if got := r.lag(c.lsn); got < c.want || got > c.want+time.Second/2 {
			t.Errorf("lag at %d = %s, want about %s", c.lsn, got, c.want)
		}
	}
}

// TestABusyReplicaStaysUsable: a replica whose read pool is taken by reads
// must still answer its poll. Polls queued behind reads for a pooled
// connection timed out under load and set a healthy replica aside (the
// cluster benchmark's replica rows), so a poll has a connection of its own.
func TestABusyReplicaStaysUsable(t *testing.T) {
	teststack.Need(t, "DATABASE_URL", "DDS_TEST_REPLICA_URL")
	ctx := context.Background()
	primary, err := Open(ctx, os.Getenv("DATABASE_URL"), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	r, err := OpenReplicas(ctx, primary, []string{os.Getenv("DDS_TEST_REPLICA_URL")}, 1, ReplicaOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep := r.replicas[0]
	if !rep.usable.Load() {
		t.Fatalf("the replica is not usable after the first poll (state %q)", rep.state)
	}
	held, err := rep.db.Conn(ctx) // the read pool's only connection, busy with a read
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	r.poll(ctx, rep)
	if !rep.usable.Load() {
		t.Fatalf("a poll while every read connection is busy set the replica aside (state %q)", rep.state)
	}
}

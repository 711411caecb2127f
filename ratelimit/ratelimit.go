// Package ratelimit counts requests per key in fixed one-minute windows,
// which is what the X-RateLimit-* headers describe: a limit, what is left,
// and the seconds until the window resets. Counters live in process
// memory; a Sync shares them across server replicas through Postgres every
// few hundred milliseconds, so a limit holds for the cluster, not per
// replica, without a write per request (the slack is what the other
// replicas admit between two syncs; see docs/operations.md).
package ratelimit

import (
	"sync"
	"time"
)

// Limiter allows Limit requests per key per Window.
type Limiter struct {
	Limit  int
	Window time.Duration

	mu     sync.Mutex
	start  time.Time
	counts map[string]int // admitted and refused here, this window
	// pending are the counts not yet added to the shared totals; others
	// are the other replicas' counts as of the last sync (Sync), and peers
	// how many other replicas counted the key (present once synced);
	// cluster is how many other replicas are alive in the window.
	pending map[string]int
	others  map[string]int
	peers   map[string]int
	cluster int
	nowFunc func() time.Time
}

// New returns a limiter; limit 0 means unlimited.
func New(limit int, window time.Duration) *Limiter {
	return &Limiter{Limit: limit, Window: window, counts: map[string]int{}, pending: map[string]int{}, others: map[string]int{}, peers: map[string]int{}, nowFunc: time.Now}
}

// Result of one Allow call, ready for the X-RateLimit-* headers.
type Result struct {
	Allowed   bool
	Limit     int
	Remaining int
	Reset     int // seconds until the window resets
}

// Allow counts one request for key.
func (l *Limiter) Allow(key string) Result {
	if l == nil || l.Limit <= 0 {
		return Result{Allowed: true}
	}
	now := l.nowFunc()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.roll(now)
	n := l.counts[key] + l.others[key] + 1
	allowed := n <= l.Limit
	p, synced := l.peers[key]
	if !synced {
		p = l.cluster // a key not synced yet: any live replica may be counting it too
	}
	if allowed && p > 0 {
		// Other replicas admit this key too: between two syncs this one
		// takes only its share of what the last sync left, so that the
		// cluster does not overshoot by what each admits meanwhile.
		left := l.Limit - (l.counts[key] - l.pending[key]) - l.others[key]
		allowed = l.pending[key] < (left+p)/(p+1) // ceil(left / (p+1))
	}
	l.counts[key]++
	l.pending[key]++
	reset := int(l.start.Add(l.Window).Sub(now).Seconds() + 0.999)
	if reset < 1 {
		reset = 1
	}
	return Result{Allowed: allowed, Limit: l.Limit, Remaining: max(l.Limit-n, 0), Reset: reset}
}

// roll starts a new window when now is past the current one. Windows are
// aligned to the clock (now truncated to Window), so replicas agree on
// them. Caller holds mu.
func (l *Limiter) roll(now time.Time) {
	if now.Sub(l.start) >= l.Window {
		l.start = now.Truncate(l.Window)
		// Old windows' keys go with them: memory stays bounded by one window's keys.
		clear(l.counts)
		clear(l.pending)
		clear(l.others)
		clear(l.peers)
		l.cluster = 0
	}
}

// Package ratelimit counts requests per key in fixed one-minute windows,
// which is what the X-RateLimit-* headers describe: a limit, what is left,
// and the seconds until the window resets. Counters live in process memory,
// so with N replicas a key can get up to N times the limit; see
// docs/operations.md.
package ratelimit

import (
	"sync"
	"time"
)

// Limiter allows Limit requests per key per Window.
type Limiter struct {
	Limit  int
	Window time.Duration

	mu      sync.Mutex
	start   time.Time
	counts  map[string]int
	nowFunc func() time.Time
}

// New returns a limiter; limit 0 means unlimited.
func New(limit int, window time.Duration) *Limiter {
	return &Limiter{Limit: limit, Window: window, counts: map[string]int{}, nowFunc: time.Now}
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
	if now.Sub(l.start) >= l.Window {
		l.start = now.Truncate(l.Window)
		clear(l.counts) // old windows' keys go with them: memory stays bounded by one window's keys
	}
	n := l.counts[key] + 1
	l.counts[key] = n
	reset := int(l.start.Add(l.Window).Sub(now).Seconds() + 0.999)
	if reset < 1 {
		reset = 1
	}
	return Result{Allowed: n <= l.Limit, Limit: l.Limit, Remaining: max(l.Limit-n, 0), Reset: reset}
}

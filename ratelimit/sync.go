package ratelimit

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
)

// Sync shares limiters' counts across the server replicas through the
// table dds.rate_counts. Every interval it adds, per limiter, what this
// replica counted since the last sync to its own row for each key of the
// current window, and reads the other replicas' rows back in the same
// statement: one small statement per limiter per interval, whatever the
// request rate.
//
// Between two syncs a replica that shares a key with others admits only
// its share of what the last sync left (Limiter.Allow), so the cluster
// overshoots a limit by at most about one request per replica per
// interval. A key a replica has not synced yet gets its share of the whole
// limit among the replicas alive in the window (each sync also marks its
// replica alive), until the next sync tells who else counts it. If Postgres fails, each replica goes on
// counting alone (the limit is then per replica) and says so in its log.
type Sync struct {
	db       *sqlx.DB
	replica  string // this process's id in dds.rate_counts
	interval time.Duration
	log      *slog.Logger
	limiters map[string]*Limiter
	failing  bool
}

// NewSync returns a Sync of limiters (name → limiter; nil and unlimited
// ones are skipped) that runs every interval.
func NewSync(db *sqlx.DB, interval time.Duration, log *slog.Logger, limiters map[string]*Limiter) *Sync {
	s := &Sync{db: db, replica: uuid.NewString(), interval: interval, log: log, limiters: map[string]*Limiter{}}
	for name, l := range limiters {
		if l != nil && l.Limit > 0 {
			s.limiters[name] = l
		}
	}
	return s
}

// Run syncs every interval until ctx ends.
func (s *Sync) Run(ctx context.Context) {
	if len(s.limiters) == 0 || s.interval <= 0 {
		return
	}
	t := time.NewTicker(s.interval)
	defer t.Stop()
	prune := time.NewTicker(time.Minute)
	defer prune.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			// Any replica may delete past windows; the statement is idempotent.
			if _, err := s.db.ExecContext(ctx, `DELETE FROM dds.rate_counts WHERE window_start < now() - interval '1 hour'`); err != nil && ctx.Err() == nil {
				s.log.Warn("rate limits: prune shared counters", "err", err)
			}
		case <-t.C:
			err := s.Once(ctx)
			switch {
			case ctx.Err() != nil:
				return
			case err != nil && !s.failing:
				s.log.Warn("rate limits: cannot share counters through Postgres; each replica counts alone until it answers", "err", err)
			case err == nil && s.failing:
				s.log.Info("rate limits: counters are shared again")
			}
			s.failing = err != nil
		}
	}
}

// Once runs one sync of every limiter.
func (s *Sync) Once(ctx context.Context) error {
	for name, l := range s.limiters {
		if err := s.syncOne(ctx, name, l); err != nil {
			return err
		}
	}
	return nil
}

func (s *Sync) syncOne(ctx context.Context, name string, l *Limiter) error {
	l.mu.Lock()
	l.roll(l.nowFunc())
	window := l.start
	keys := make([]string, 0, len(l.counts))
	deltas := make([]int64, 0, len(l.counts))
	// Every key seen this window is sent, also without new counts, so that
	// what the other replicas counted for it comes back.
	for k := range l.counts {
		keys = append(keys, k)
		deltas = append(deltas, int64(l.pending[k]))
	}
	clear(l.pending)
	l.mu.Unlock()
	rows, err := s.db.QueryContext(ctx, `WITH mine AS (
			INSERT INTO dds.rate_counts AS c (limiter, window_start, key, replica, count)
			SELECT $1::text, $2::timestamptz, k, $5::uuid, d FROM unnest($3::text[], $4::int[]) AS u(k, d) WHERE d > 0
			UNION ALL SELECT $1, $2, '', $5, 0 -- the key '': the replicas alive in this window
			ON CONFLICT (limiter, window_start, key, replica) DO UPDATE SET count = c.count + excluded.count, seen_at = now())
		SELECT key, sum(count)::int, count(*)::int FROM dds.rate_counts
		WHERE limiter = $1 AND window_start = $2 AND replica <> $5
		  AND (key = ANY($3::text[]) OR key = '' AND seen_at > now() - $6 * interval '1 millisecond') -- alive: synced lately
		GROUP BY key`, name, window, keys, deltas, s.replica, (4 * s.interval).Milliseconds())
	if err != nil {
		l.restore(window, keys, deltas)
		return err
	}
	defer rows.Close()
	type theirs struct{ count, replicas int }
	others := make(map[string]theirs, len(keys))
	for rows.Next() {
		var k string
		var o theirs
		if err := rows.Scan(&k, &o.count, &o.replicas); err != nil {
			return err
		}
		others[k] = o
	}
	if err := rows.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.start.Equal(window) {
		return nil // the window ended meanwhile: its totals no longer matter
	}
	l.cluster = others[""].replicas
	for _, k := range keys {
		o := others[k]
		l.others[k], l.peers[k] = o.count, o.replicas
	}
	return nil
}

// restore puts back counts a failed sync could not add, so the next sync
// adds them.
func (l *Limiter) restore(window time.Time, keys []string, deltas []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.start.Equal(window) {
		return
	}
	for i, k := range keys {
		l.pending[k] += int(deltas[i])
	}
}

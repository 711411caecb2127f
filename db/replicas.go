package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
)

// Replicas routes reads of committed data to streaming replicas without
// ever hiding a write that was acknowledged before the read arrived, from
// whichever server acknowledged it: the LSN barrier (docs/operations.md,
// "Read replicas").
//
// A read that may use a replica first learns the primary's WAL position
// at a moment after the read arrived (the barrier: one sampler coalesces
// every read waiting into one query on the primary, barrierSQL). Every commit acknowledged before that moment, by this
// server or another, lies at or below that position, so a replica that has
// replayed up to it shows them all. The read then runs on a usable replica
// whose replay position (polled every PollInterval, and at once when a read
// waits for it) covers the barrier; if none does within Wait, on the
// primary.
//
// A replica is usable while its polls answer and it lags the primary by at
// most MaxLag (measured against the primary positions sampled here); one
// that errors or lags is skipped from the next poll on, and polled again
// until it is back. A read that a replica fails for a reason of its own (it
// went away, or cancelled the statement for a conflict with recovery) runs
// again on the primary.
type Replicas struct {
	primary  *sqlx.DB
	replicas []*replica
	opts     ReplicaOptions
	sampler  sampler
	next     atomic.Uint32 // round robin among replicas
	reads    *prometheus.CounterVec

	mu      sync.Mutex
	samples [64]sample // the primary's recent positions, a ring
	n       int        // samples taken (the ring holds the last min(n, 64))
}

// ReplicaOptions tune Replicas; zero PollInterval and MaxLag take the defaults.
type ReplicaOptions struct {
	// PollInterval is how often each replica's replay position is read
	// (default 50 ms).
	PollInterval time.Duration
	// MaxLag is how far behind the primary a replica may fall and still be
	// used (default 1 s).
	MaxLag time.Duration
	// Wait is how long a read waits for a usable replica to replay up to
	// its barrier before it runs on the primary (0: not at all;
	// DDS_DB_REPLICA_WAIT's default is 10 ms).
	Wait time.Duration
	Log  *slog.Logger
}

type sample struct {
	lsn uint64
	at  time.Time
}

type replica struct {
	name string   // host:port, for logs and metrics
	db   *sqlx.DB // the reads' pool
	// probe is the polls' own connection: a poll that queued behind reads
	// for one of db's connections timed out under load and set a healthy,
	// busy replica aside (the reads' errors and the flapping the cluster
	// benchmark showed).
	probe  *sqlx.DB
	replay atomic.Uint64 // last replay position seen; 0: unknown
	usable atomic.Bool
	wake   chan struct{} // a read waits: poll now

	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) after every poll
	state   string        // "", "usable", "down", "lagging": for logging transitions
}

// OpenReplicas opens a pool to each replica URL (with Open's settings and
// opts) and returns the router over them and primary. A replica that cannot
// be reached now is not an error: it starts unusable and is polled until it
// answers. Run must run for replicas to become usable.
func OpenReplicas(ctx context.Context, primary *sqlx.DB, urls []string, maxConns int, o ReplicaOptions, opts ...Option) (*Replicas, error) {
	if o.PollInterval <= 0 {
		o.PollInterval = 50 * time.Millisecond
	}
	if o.MaxLag <= 0 {
		o.MaxLag = time.Second
	}
	o.Wait = max(o.Wait, 0)
	if o.Log == nil {
		o.Log = slog.Default()
	}
	r := &Replicas{primary: primary, opts: o}
	r.sampler.query = r.samplePrimary
	r.reads = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dds_db_reads_total",
		Help: "Reads of tenant data, by the pool that served them (replica, or primary: none usable or covering the read's barrier in time, or a replica failed it).",
	}, []string{"target"})
	for _, u := range urls {
		d, err := openLazy(u, maxConns, opts...)
		if err != nil {
			r.Close()
			return nil, err
		}
		probe, err := openLazy(u, 1, opts...)
		if err != nil {
			d.Close()
			r.Close()
			return nil, err
		}
		r.replicas = append(r.replicas, &replica{name: hostPort(u), db: d, probe: probe, wake: make(chan struct{}, 1), changed: make(chan struct{})})
	}
	// A first poll now, so that a server starting beside a healthy replica
	// uses it from its first request.
	for _, rep := range r.replicas {
		r.poll(ctx, rep)
	}
	return r, nil
}

// Register adds dds_db_reads_total and dds_db_replicas_usable to reg.
func (r *Replicas) Register(reg prometheus.Registerer) {
	reg.MustRegister(r.reads, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "dds_db_replicas_usable", Help: "Read replicas answering and within DDS_DB_REPLICA_MAX_LAG of the primary.",
	}, func() float64 {
		n := 0
		for _, rep := range r.replicas {
			if rep.usable.Load() {
				n++
			}
		}
		return float64(n)
	}))
}

// Close closes the replicas' pools (not the primary's).
func (r *Replicas) Close() {
	for _, rep := range r.replicas {
		rep.db.Close()
		rep.probe.Close()
	}
}

// Run polls every replica's replay position and samples the primary's
// position every PollInterval (the lag measure), until ctx ends.
func (r *Replicas) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, rep := range r.replicas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(r.opts.PollInterval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				case <-rep.wake:
				}
				r.poll(ctx, rep)
			}
		}()
	}
	t := time.NewTicker(r.opts.PollInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			wg.Wait()
			return
		case <-t.C:
			_, _ = r.sampler.sample(ctx) // recorded in the ring; an error shows in the reads
		}
	}
}

// Read is where one read runs: DB, and whether it is a replica.
type Read struct {
	DB  *sqlx.DB
	r   *Replicas
	rep *replica
}

// Replica reports whether the read runs on a replica.
func (rd Read) Replica() bool { return rd.rep != nil }

// Pick returns where a read arriving now runs: a usable replica that has
// replayed everything the primary had written when the read arrived, else
// the primary. A nil Replicas picks primary.
func (r *Replicas) Pick(ctx context.Context, primary *sqlx.DB) Read {
	if r == nil {
		return Read{DB: primary}
	}
	start := int(r.next.Add(1))
	var candidate *replica
	for i := range r.replicas {
		if rep := r.replicas[(start+i)%len(r.replicas)]; rep.usable.Load() {
			candidate = rep
			break
		}
	}
	if candidate == nil { // none usable: no barrier to pay for
		return r.onPrimary()
	}
	barrier, err := r.sampler.sample(ctx)
	if err != nil { // the primary's error, if it lasts, is the read's to report
		return r.onPrimary()
	}
	for i := range r.replicas {
		if rep := r.replicas[(start+i)%len(r.replicas)]; rep.usable.Load() && rep.replay.Load() >= barrier {
			return r.onReplica(rep)
		}
	}
	// Wait a little for the candidate to replay up to the barrier: right
	// after a write the last poll is older than the write, not the replica.
	timer := time.NewTimer(r.opts.Wait)
	defer timer.Stop()
	for {
		rep := candidate
		rep.mu.Lock()
		changed := rep.changed
		rep.mu.Unlock()
		if !rep.usable.Load() {
			return r.onPrimary()
		}
		if rep.replay.Load() >= barrier {
			return r.onReplica(rep)
		}
		select {
		case rep.wake <- struct{}{}:
		default: // a poll is asked for already
		}
		select {
		case <-changed:
		case <-timer.C:
			return r.onPrimary()
		case <-ctx.Done():
			return r.onPrimary()
		}
	}
}

func (r *Replicas) onPrimary() Read {
	r.reads.WithLabelValues("primary").Inc()
	return Read{DB: r.primary, r: r}
}

func (r *Replicas) onReplica(rep *replica) Read {
	r.reads.WithLabelValues("replica").Inc()
	return Read{DB: rep.db, r: r, rep: rep}
}

// Retry reports whether a read that failed with err on rd should run again
// on the primary: rd was a replica and err is the replica's own failure
// (unreachable, shutting down, or a statement cancelled for a conflict with
// recovery), not the statement's nor the request's. An unreachable replica
// is set aside at once (and polled until it answers again).
func (rd Read) Retry(ctx context.Context, err error) bool {
	if rd.rep == nil || err == nil || ctx.Err() != nil {
		return false
	}
	if Unavailable(err) {
		// Its replay position is forgotten too: a standby restarted from an
		// older restart point may answer again before it has replayed as far.
		rd.rep.replay.Store(0)
		rd.r.setState(rd.rep, "down", err)
		rd.r.reads.WithLabelValues("primary").Inc()
		return true
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) && (st.SQLState() == "40001" || st.SQLState() == "57P04") {
		// canceling statement due to conflict with recovery; database dropped
		rd.r.reads.WithLabelValues("primary").Inc()
		return true
	}
	return false
}

// poll reads rep's replay position and decides whether it is usable.
func (r *Replicas) poll(ctx context.Context, rep *replica) {
	pctx, cancel := context.WithTimeout(ctx, max(r.opts.PollInterval*10, 500*time.Millisecond))
	defer cancel()
	var s sql.NullString
	err := rep.probe.QueryRowContext(pctx, `SELECT pg_last_wal_replay_lsn()::text`).Scan(&s)
	if ctx.Err() != nil { // shutting down: nothing to decide, nor to log
		return
	}
	switch {
	case err != nil:
		rep.replay.Store(0)
		r.setState(rep, "down", err)
	case !s.Valid: // not in recovery: promoted, or not a replica at all
		rep.replay.Store(0)
		r.setState(rep, "down", errors.New("it is not a standby (pg_last_wal_replay_lsn() is null)"))
	default:
		lsn, perr := ParseLSN(s.String)
		if perr != nil {
			r.setState(rep, "down", perr)
			break
		}
		rep.replay.Store(lsn)
		if lag := r.lag(lsn); lag > r.opts.MaxLag {
			r.setState(rep, "lagging", fmt.Errorf("%s behind the primary (DDS_DB_REPLICA_MAX_LAG %s)", lag.Round(time.Millisecond), r.opts.MaxLag))
		} else {
			r.setState(rep, "usable", nil)
		}
	}
	rep.mu.Lock()
	close(rep.changed)
	rep.changed = make(chan struct{})
	rep.mu.Unlock()
}

func (r *Replicas) setState(rep *replica, state string, why error) {
	rep.usable.Store(state == "usable")
	rep.mu.Lock()
	old := rep.state
	rep.state = state
	rep.mu.Unlock()
	if old == state {
		return
	}
	if state == "usable" {
		r.opts.Log.Info("read replica usable", "replica", rep.name)
		return
	}
	r.opts.Log.Warn("read replica set aside: reads go to the primary", "replica", rep.name, "state", state, "error", why)
}

// lag is how far a replica at replay position lsn is behind the primary:
// the age of the newest primary sample it has replayed (the primary had
// nothing it lacks then). Not having replayed even the oldest sample held
// means at least that sample's age.
func (r *Replicas) lag(lsn uint64) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n == 0 {
		return 0
	}
	now := time.Now()
	held := min(r.n, len(r.samples))
	for i := range held { // newest first
		s := r.samples[(r.n-1-i)%len(r.samples)]
		if s.lsn <= lsn {
			return now.Sub(s.at)
		}
	}
	return now.Sub(r.samples[(r.n-held)%len(r.samples)].at)
}

// barrierSQL is the primary's position that covers every commit it has
// acknowledged. With synchronous_commit on (or local, remote_write,
// remote_apply) a commit is acknowledged only once its WAL is flushed, so
// the write position covers it, and a replica can reach it as soon as the
// WAL is streamed. With synchronous_commit off, an acknowledged commit may
// not even be written yet: only the insert position covers it (reads then
// wait for the WAL writer, up to 3 × wal_writer_delay, or go to the
// primary). The setting is read in the sampler's session, which has the
// settings of every session of the pool the writes use.
const barrierSQL = `SELECT (CASE WHEN current_setting('synchronous_commit') = 'off'
	THEN pg_current_wal_insert_lsn() ELSE pg_current_wal_lsn() END)::text`

// samplePrimary is the sampler's one query.
func (r *Replicas) samplePrimary(ctx context.Context) (uint64, error) {
	at := time.Now()
	var s string
	if err := r.primary.QueryRowContext(ctx, barrierSQL).Scan(&s); err != nil {
		return 0, err
	}
	lsn, err := ParseLSN(s)
	if err != nil {
		return 0, err
	}
	r.mu.Lock()
	r.samples[r.n%len(r.samples)] = sample{lsn: lsn, at: at}
	r.n++
	r.mu.Unlock()
	return lsn, nil
}

// sampler coalesces the reads that need a primary position: each gets the
// result of a query that started after it asked, and all who ask while one
// query runs share the next.
type sampler struct {
	query   func(context.Context) (uint64, error)
	mu      sync.Mutex
	pending *round // the next query's waiters; nil: none yet
	running bool
}

type round struct {
	done chan struct{}
	asks int // reads waiting for it
	lsn  uint64
	err  error
}

func (s *sampler) sample(ctx context.Context) (uint64, error) {
	s.mu.Lock()
	if s.pending == nil {
		s.pending = &round{done: make(chan struct{})}
	}
	rd := s.pending
	rd.asks++
	if !s.running {
		s.running = true
		// Not the read's context: the query serves every read of its round,
		// and one read going away must not cancel it for the others.
		go s.loop() //nolint:gosec // G118: see above
	}
	s.mu.Unlock()
	select {
	case <-rd.done:
		return rd.lsn, rd.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// loop runs queries while reads wait for one; each round's query starts
// after every read of the round asked.
func (s *sampler) loop() {
	for {
		s.mu.Lock()
		rd := s.pending
		s.pending = nil
		if rd == nil {
			s.running = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		rd.lsn, rd.err = s.query(ctx)
		cancel()
		close(rd.done)
	}
}

// ParseLSN parses Postgres' text form of a WAL position ("16/B374D848").
func ParseLSN(s string) (uint64, error) {
	hi, lo, ok := strings.Cut(s, "/")
	if !ok {
		return 0, fmt.Errorf("not a WAL position: %q", s)
	}
	h, err := strconv.ParseUint(hi, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not a WAL position: %q", s)
	}
	l, err := strconv.ParseUint(lo, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("not a WAL position: %q", s)
	}
	return h<<32 | l, nil
}

// hostPort names a replica by its URL's host and port, never its password.
func hostPort(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		return u.Host
	}
	return "replica"
}

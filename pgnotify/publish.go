package pgnotify

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
)

// Publisher sends NOTIFYs after the writes they announce have committed,
// many per transaction.
//
// A transaction that NOTIFYs takes a database-wide lock at commit and holds
// it until its commit record is flushed, so writes that each NOTIFY commit
// one after another, one WAL flush each. Writes therefore do not NOTIFY;
// they hand their payloads here once committed, and one goroutine sends
// everything queued in one transaction (while one is in flight the next
// batch gathers), so concurrent writers never wait on each other.
//
// Notifications are a latency hint: a process that dies between a commit
// and the flush loses them, so listeners must not depend on them for
// correctness (the relay polls; subscriptions are a live feed).
type Publisher struct {
	db  *sqlx.DB
	log *slog.Logger

	mu      sync.Mutex
	pending map[string][]string // channel -> payloads
	n       int
	kick    chan struct{}
}

// maxPending bounds the payloads queued while Postgres is slow or away;
// past it new ones are dropped (and logged once per flush).
const maxPending = 100_000

// NewPublisher returns a publisher over db. Call Run to start sending.
func NewPublisher(db *sqlx.DB, log *slog.Logger) *Publisher {
	return &Publisher{db: db, log: log, pending: map[string][]string{}, kick: make(chan struct{}, 1)}
}

// Publish queues payloads for channel; it never blocks on the database.
// A nil Publisher drops them.
func (p *Publisher) Publish(channel string, payloads ...string) {
	if p == nil || len(payloads) == 0 {
		return
	}
	p.mu.Lock()
	if p.n+len(payloads) > maxPending {
		p.mu.Unlock()
		p.log.Warn("pgnotify: publish queue full, notifications dropped", "channel", channel, "count", len(payloads))
		return
	}
	p.pending[channel] = append(p.pending[channel], payloads...)
	p.n += len(payloads)
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Run sends queued notifications until ctx ends, then sends what is left.
func (p *Publisher) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			p.Flush(fctx)
			cancel()
			return
		case <-p.kick:
			p.Flush(ctx)
		}
	}
}

// Flush sends everything queued now, in one statement (its own
// transaction).
//
// That transaction commits with synchronous_commit off: a NOTIFY assigns a
// transaction id, so its commit would otherwise wait for a WAL flush while
// holding the database-wide notify lock. Notifications are hints that a
// crash may lose anyway, and nothing else is written, so there is nothing
// to make durable.
func (p *Publisher) Flush(ctx context.Context) {
	p.mu.Lock()
	batch := p.pending
	p.pending = map[string][]string{}
	n := p.n
	p.n = 0
	p.mu.Unlock()
	if n == 0 {
		return
	}
	channels := make([]string, 0, n)
	payloads := make([]string, 0, n)
	for channel, ps := range batch {
		for _, x := range ps {
			channels = append(channels, channel)
			payloads = append(payloads, x)
		}
	}
	if _, err := p.db.ExecContext(ctx, flushSQL, channels, payloads); err != nil {
		p.log.Warn("pgnotify: publish", "count", n, "err", err)
	}
}

// flushSQL notifies each (channel, payload) pair in order; set_config's
// local value lasts until the statement's transaction commits.
const flushSQL = `SELECT set_config('synchronous_commit', 'off', true), count(pg_notify(c, x)) FROM unnest($1::text[], $2::text[]) AS u(c, x)`

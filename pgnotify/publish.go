package pgnotify

import (
	"context"
	"log/slog"
	"strings"
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
// Receiving costs every listening process a wake-up per notification, so
// lists (PublishList) are sent coarse: everything queued under one key of a
// channel goes out as one comma-joined payload per flush (more only when it
// would exceed MaxPayload).
//
// Notifications are a latency hint: a process that dies between a commit
// and the flush loses them, so listeners must not depend on them for
// correctness (the relay polls; subscriptions are a live feed).
type Publisher struct {
	db  *sqlx.DB
	log *slog.Logger

	mu      sync.Mutex
	pending map[string][]string // channel -> payloads
	lists   map[listKey][]string
	keys    []listKey // lists' keys in first-publish order
	n       int
	kick    chan struct{}
	// local receives this process's own payloads at once, per channel
	// (Local).
	local map[string][]Handler
}

type listKey struct{ channel, key string }

// MaxPayload is the longest payload Postgres accepts in a NOTIFY (it
// refuses 8000 bytes and more, failing the whole statement).
const MaxPayload = 7999

// gather is how long a flush waits after the first payload queued since
// the previous one, so that writes made at the same moment share it.
const gather = 2 * time.Millisecond

// pace is the shortest time from one flush to the next: under a steady
// write load the publisher sends at most 50 notifying transactions a
// second, whatever the write rate, for at most 20 ms more latency on a
// hint. Each flush costs Postgres a transaction and a wake-up of every
// listening backend, and each listening process a wake-up: at the 5 ms
// this used to be, announcing cost a create 4 µs of server CPU and 5 µs
// of Postgres CPU (6 % of its throughput, measured with the bench's
// -announce); at 20 ms it costs about a quarter of that.
const pace = 20 * time.Millisecond

// maxPending bounds the payloads queued while Postgres is slow or away;
// past it new ones are dropped (and logged once per flush).
const maxPending = 100_000

// NewPublisher returns a publisher over db. Call Run to start sending.
func NewPublisher(db *sqlx.DB, log *slog.Logger) *Publisher {
	return &Publisher{db: db, log: log, pending: map[string][]string{}, lists: map[listKey][]string{}, kick: make(chan struct{}, 1)}
}

// Local makes fn receive every payload published on channel by this
// process as soon as it is published, before (and besides) its NOTIFY:
// a listener in the writing process need not wait for the flush's pace
// and the round trip through Postgres. A list's items arrive as one
// "<key>:<item>,<item>,..." payload per call. fn runs on the publishing
// goroutine: it must not block. Register before the first Publish.
func (p *Publisher) Local(channel string, fn Handler) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.local == nil {
		p.local = map[string][]Handler{}
	}
	p.local[channel] = append(p.local[channel], fn)
}

// loopback hands a payload to channel's local handlers.
func (p *Publisher) loopback(channel string, payload func() string) {
	p.mu.Lock()
	fns := p.local[channel]
	p.mu.Unlock()
	if len(fns) == 0 {
		return
	}
	x := payload()
	for _, fn := range fns {
		fn(x)
	}
}

// Publish queues payloads for channel; it never blocks on the database.
// A nil Publisher drops them.
func (p *Publisher) Publish(channel string, payloads ...string) {
	if p == nil || len(payloads) == 0 {
		return
	}
	for _, x := range payloads {
		p.loopback(channel, func() string { return x })
	}
	if !p.reserve(channel, len(payloads)) {
		return
	}
	p.pending[channel] = append(p.pending[channel], payloads...)
	p.mu.Unlock()
	p.wake()
}

// reserve locks p and counts n more queued payloads, or, when that would
// pass maxPending, logs the drop and returns false with p unlocked.
func (p *Publisher) reserve(channel string, n int) bool {
	p.mu.Lock()
	if p.n+n > maxPending {
		p.mu.Unlock()
		p.log.Warn("pgnotify: publish queue full, notifications dropped", "channel", channel, "count", n)
		return false
	}
	p.n += n
	return true
}

// PublishList queues items (which must not contain ',') under key of
// channel. A flush sends all the items queued under one key, in order, as
// "<key>:<item>,<item>,..." payloads of at most MaxPayload bytes each, so
// a listener wakes once per key and flush rather than once per item. An
// item that cannot fit a payload on its own is dropped (and logged). A nil
// Publisher drops them.
func (p *Publisher) PublishList(channel, key string, items ...string) {
	if p == nil || len(items) == 0 {
		return
	}
	p.loopback(channel, func() string { return key + ":" + strings.Join(items, ",") })
	if !p.reserve(channel, len(items)) {
		return
	}
	k := listKey{channel, key}
	if _, ok := p.lists[k]; !ok {
		p.keys = append(p.keys, k)
	}
	p.lists[k] = append(p.lists[k], items...)
	p.mu.Unlock()
	p.wake()
}

func (p *Publisher) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// JoinList cuts items into "<key>:<item>,<item>,..." payloads of at most
// max bytes each, keeping their order. It returns the items too long to
// fit any payload apart.
func JoinList(key string, items []string, max int) (payloads, tooLong []string) {
	var b strings.Builder
	for _, it := range items {
		if len(key)+1+len(it) > max {
			tooLong = append(tooLong, it)
			continue
		}
		if b.Len() > 0 && b.Len()+1+len(it) > max {
			payloads = append(payloads, b.String())
			b.Reset()
		}
		if b.Len() == 0 {
			b.WriteString(key)
			b.WriteByte(':')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(it)
	}
	if b.Len() > 0 {
		payloads = append(payloads, b.String())
	}
	return payloads, tooLong
}

// Run sends queued notifications until ctx ends, then sends what is left.
func (p *Publisher) Run(ctx context.Context) {
	var last time.Time // when the previous flush started
	for {
		select {
		case <-ctx.Done():
			p.flushDetached(ctx)
			return
		case <-p.kick:
			// Let a moment's writes gather, and no sooner than pace after
			// the previous flush: every flush is a notifying transaction,
			// and each wakes every listener.
			wait := max(gather, pace-time.Since(last))
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
			case <-t.C:
			}
			last = time.Now()
			p.flushDetached(ctx)
		}
	}
}

// flushDetached flushes with a deadline of its own: a shutdown cancels
// ctx, and a flush cancelled half-way would lose what it took from the
// queue (the writes were committed; only their announcement is left).
func (p *Publisher) flushDetached(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	p.Flush(fctx)
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
	batch, lists, keys := p.pending, p.lists, p.keys
	p.pending, p.lists, p.keys = map[string][]string{}, map[listKey][]string{}, nil
	n := p.n
	p.n = 0
	p.mu.Unlock()
	if n == 0 {
		return
	}
	var channels, payloads []string
	for channel, ps := range batch {
		for _, x := range ps {
			channels = append(channels, channel)
			payloads = append(payloads, x)
		}
	}
	for _, k := range keys {
		ps, tooLong := JoinList(k.key, lists[k], MaxPayload)
		if len(tooLong) > 0 {
			p.log.Warn("pgnotify: items too long for a notification, dropped", "channel", k.channel, "count", len(tooLong))
		}
		for _, x := range ps {
			channels = append(channels, k.channel)
			payloads = append(payloads, x)
		}
	}
	if len(payloads) == 0 {
		return
	}
	if _, err := p.db.ExecContext(ctx, flushSQL, channels, payloads); err != nil {
		p.log.Warn("pgnotify: publish", "count", n, "err", err)
	}
}

// flushSQL notifies each (channel, payload) pair in order; set_config's
// local value lasts until the statement's transaction commits.
const flushSQL = `SELECT set_config('synchronous_commit', 'off', true), count(pg_notify(c, x)) FROM unnest($1::text[], $2::text[]) AS u(c, x)`

// Package live is the live feed of GraphQL subscriptions, independent of
// the socket that carries them: the registry of running subscriptions per
// tenant, and the dispatch of the events outbox to them, live or resumed
// from a cursor.
//
// One poller per process reads the outbox in seq order, but only up to a
// proven safe horizon (outbox.Horizon: every event at or below it is
// committed or aborted, so the order below it never changes). NOTIFY
// dds_events only wakes it sooner. Each batch is read once per process, for
// every tenant with subscribers, and handed to that tenant's own goroutine:
// one tenant's slow filters never delay another tenant's frames.
//
// Every subscriber keeps its position (the seq of the last event it has
// been given or skipped). A batch covers a range (a, b] of the outbox; a
// subscriber behind a (resumed from a cursor, or its tenant's queue
// overflowed) first reads (pos, a] from the outbox itself, so live and
// replayed events are one sequence with no gap and no duplicate, on any
// replica. Each subscriber's where is compiled by the query compiler and
// evaluated against the event's record in Go where the filter allows it
// (query.LocalMatch, tested to agree with SQL), else in Postgres
// (jsonb_populate_record), so filters mean exactly what they mean in
// queries. Subscribers are indexed by the equality their filter requires
// (subIndex): an event is offered only to those it can match.
package live

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/exec"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Sink is where a subscription's frames go (the socket).
type Sink interface {
	// Send queues payload without waiting; false when the consumer is gone
	// (a consumer too slow for its live feed is disconnected by the sink).
	// origin is when the payload's event was inserted (EventTime) and
	// committed: the sink reports StageWritten from it.
	Send(payload []byte, origin Origin) bool
	// SendWait queues payload, waiting while the consumer's buffer is
	// full: a replay goes at the consumer's pace.
	SendWait(ctx context.Context, payload []byte) error
}

// Limits bound the feed.
type Limits struct {
	// PerTenant caps the running subscriptions of one tenant on this
	// server (0: no cap).
	PerTenant int
}

const (
	// batchRead is the most events read in one statement.
	batchRead = 2000
	// queueBatches is how many batches a tenant's goroutine may have
	// waiting; past it batches are dropped and the tenant catches up from
	// the outbox (lossless: positions are kept per subscriber).
	queueBatches = 64
	// provePoll is how soon the poller samples again while a horizon waits
	// for its proof (writes were in flight).
	provePoll = 5 * time.Millisecond
	// idlePoll is the fallback poll when no notification arrives (they are
	// hints only).
	idlePoll = time.Second
)

// Feed dispatches events to the running subscriptions. Call Notify for
// every dds_events payload (wire it to the pgnotify hub) and Run to
// dispatch. Wire NotifyLocal to this process's own announcements
// (pgnotify.Publisher.Local) so that its writes wake the feed as they
// commit.
type Feed struct {
	store  *records.Store
	exec   *exec.Executor
	log    *slog.Logger
	limits Limits

	wake  chan struct{}
	polls atomic.Uint64
	held  atomic.Uint64 // polls whose horizon an earlier writer held back
	// horizon is the outbox position up to which batches were handed out.
	horizon atomic.Int64

	localMatches, sqlMatches atomic.Uint64 // filter evaluations, in Go and in Postgres
	reads                    [len(ReadKinds)]atomic.Uint64
	stages                   *stages

	mu      sync.Mutex
	tenants map[string]*tenantFeed
	ctx     context.Context // Run's, for the tenant goroutines

	// local is the ids NotifyLocal woke the feed for lately, with when
	// they committed: their NOTIFY need not wake it again, and their
	// frames are timed from the commit too (Origin).
	local recentIDs
}

// recentIDs is a bounded set of the newest ids added, with the time each
// was added.
type recentIDs struct {
	mu   sync.Mutex
	set  map[string]time.Time
	ring [4096]string
	next int
}

func (r *recentIDs) add(ids []string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.set == nil {
		r.set = make(map[string]time.Time, len(r.ring))
	}
	for _, id := range ids {
		delete(r.set, r.ring[r.next])
		r.ring[r.next] = id
		r.set[id] = at
		r.next = (r.next + 1) % len(r.ring)
	}
}

// at is when id was added (zero when it is not in the set).
func (r *recentIDs) at(id string) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.set[id]
}

// all reports whether every one of ids is in the set.
func (r *recentIDs) all(ids []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if _, ok := r.set[id]; !ok {
			return false
		}
	}
	return true
}

// NewFeed returns a feed reading events and records through store, and
// the records a subscription's selection needs through ex.
func NewFeed(store *records.Store, ex *exec.Executor, log *slog.Logger) *Feed {
	return &Feed{store: store, exec: ex, log: log, wake: make(chan struct{}, 1), tenants: map[string]*tenantFeed{}, ctx: context.Background(), stages: newStages()}
}

// SetLimits sets the feed's caps (before Run).
func (s *Feed) SetLimits(l Limits) { s.limits = l }

// Subscriber is a running subscription.
type Subscriber struct {
	*exec.Subscription
	sink Sink
	// pos is the outbox position of the last event given to or skipped
	// by the subscriber; owned by its replay goroutine, then by its
	// tenant's goroutine.
	pos    int64
	done   atomic.Bool
	cancel context.CancelFunc
	ctx    context.Context
	// frame is its frameKey: subscribers with the same one share each
	// event's encoded frame.
	frame string
}

// Add starts subscription sub. Without a cursor it follows the events
// written after it is set up; with one (sub.After) the events after that
// cursor are replayed from the outbox at the consumer's pace, then live
// ones follow. A cursor past retention is CURSOR_EXPIRED.
func (s *Feed) Add(ctx context.Context, sub *exec.Subscription, sink Sink) (*Subscriber, error) {
	tenant := sub.Scope.TenantID
	var pos int64
	var err error
	if sub.After != "" {
		pos, err = s.store.EventCursor(ctx, tenant, sub.After, "after")
	} else {
		pos, err = s.store.EventsHighWater(ctx, tenant)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	tf := s.tenants[tenant]
	if s.limits.PerTenant > 0 && tf != nil && tf.count >= s.limits.PerTenant {
		s.mu.Unlock()
		return nil, apperr.New(apperr.RateLimited, "this tenant already runs %d subscriptions on this server, the most allowed (DDS_SUBSCRIPTIONS_PER_TENANT)", s.limits.PerTenant)
	}
	if tf == nil {
		tf = &tenantFeed{id: tenant, subs: map[*Subscriber]struct{}{}, wake: make(chan struct{}, 1)}
		s.tenants[tenant] = tf
		go s.runTenant(s.ctx, tf)
	}
	tf.count++
	s.mu.Unlock()
	sctx, cancel := context.WithCancel(s.ctx)
	r := &Subscriber{Subscription: sub, sink: sink, pos: pos, ctx: sctx, cancel: cancel, frame: frameKey(sub)}
	if sub.After == "" {
		s.join(tf, r)
		return r, nil
	}
	go func() {
		// Replay up to the horizon handed out so far, waiting for the
		// consumer; then join the tenant's live batches (join catches up
		// whatever was handed out meanwhile).
		for !r.done.Load() {
			h := s.horizon.Load()
			if r.pos >= h {
				break
			}
			if err := s.catchUp(r, h, true); err != nil {
				if !errors.Is(err, context.Canceled) {
					s.log.Warn("graphql subscriptions: replay", "tenant", tenant, "err", err)
				}
				return
			}
		}
		s.join(tf, r)
	}()
	return r, nil
}

// join hands r to its tenant's goroutine. Batches are handed out after
// the horizon moves, so one handed out before r joined is seen here as
// horizon > r.pos and caught up from the outbox: no gap.
func (s *Feed) join(tf *tenantFeed, r *Subscriber) {
	if r.done.Load() {
		return
	}
	tf.mu.Lock()
	tf.subs[r] = struct{}{}
	tf.version++
	if h := s.horizon.Load(); h > r.pos {
		tf.behind = max(tf.behind, h)
	}
	tf.mu.Unlock()
	tf.poke()
}

// Remove stops a subscription.
func (s *Feed) Remove(sub *Subscriber) {
	if sub.done.Swap(true) {
		return
	}
	sub.cancel()
	tenant := sub.Scope.TenantID
	s.mu.Lock()
	tf := s.tenants[tenant]
	if tf != nil {
		tf.count--
		tf.mu.Lock()
		delete(tf.subs, sub)
		tf.version++
		tf.mu.Unlock()
		if tf.count == 0 {
			delete(s.tenants, tenant)
			tf.stop.Store(true)
			tf.poke()
		}
	}
	s.mu.Unlock()
}

// Notify receives a dds_events payload: it only wakes the poller (the
// ids are not needed, the poller reads every event up to the horizon).
// Events this process announced itself woke the poller as they committed
// (NotifyLocal): their NOTIFY, up to a publisher's pace later, does not.
func (s *Feed) Notify(payload string) {
	tenant, ids, ok := outbox.ParseNotification(payload)
	if !ok {
		return
	}
	now := time.Now()
	for _, id := range ids {
		s.stages.observe(StageNotified, EventTime(id), now)
	}
	if s.local.all(ids) || !s.follows(tenant) {
		return
	}
	s.poke()
}

// NotifyLocal receives the dds_events payload of a write of this process
// as it commits (pgnotify.Publisher.Local), before its NOTIFY is even
// sent. It wakes the poller whatever the tenant: the write's transaction
// has ended, and it may be the last one a pending horizon waits for
// (outbox.Horizon), so the events of every tenant may be read now. On a
// server that takes the writes its subscribers follow, a frame then waits
// neither for the publisher's pace nor for a poll.
func (s *Feed) NotifyLocal(payload string) {
	_, ids, ok := outbox.ParseNotification(payload)
	if !ok {
		return
	}
	now := time.Now()
	for _, id := range ids {
		s.stages.observe(StageCommitted, EventTime(id), now)
	}
	s.local.add(ids, now)
	s.mu.Lock()
	any := len(s.tenants) > 0
	s.mu.Unlock()
	if any {
		s.poke()
	}
}

func (s *Feed) follows(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.tenants[tenant]
	return ok
}

func (s *Feed) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Run polls the outbox and dispatches until ctx ends.
func (s *Feed) Run(ctx context.Context) {
	s.mu.Lock()
	s.ctx = ctx
	s.mu.Unlock()
	var h outbox.Horizon
	timer := time.NewTimer(0)
	defer timer.Stop()
	// The poller's own connection (records.EventsReader), held while any
	// tenant is followed; given back after an error (the next poll takes
	// another) or when none is.
	var rd *records.EventsReader
	release := func() {
		if rd != nil {
			_ = rd.Close()
			rd = nil
		}
	}
	defer release()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
		more := false
		if ids := s.tenantIDs(); len(ids) > 0 {
			var err error
			if rd == nil {
				rd, err = s.store.EventsReader(ctx)
			}
			if err == nil {
				if more, err = s.poll(ctx, rd, &h, ids); err != nil {
					release()
				}
			}
			if err != nil && ctx.Err() == nil {
				s.log.Warn("graphql subscriptions: read events", "err", err)
			}
			s.polls.Add(1)
		} else {
			release()
		}
		next := idlePoll
		if more || h.Pending() {
			next = provePoll
		}
		if more {
			next = 0
		}
		timer.Reset(next)
	}
}

// poll advances the horizon and hands the events up to it to their
// tenants; more reports that a full batch was read (read again now). The
// proof and the read are one round trip (EventsReader.HorizonRead): on a
// loaded server every round trip waits for a core, and each frame used to
// wait for three of them after its write committed.
func (s *Feed) poll(ctx context.Context, rd *records.EventsReader, h *outbox.Horizon, tenants []string) (bool, error) {
	s.reads[readBatch].Add(1)
	from := s.horizon.Load()
	if from == 0 {
		// The first proof only sets where batches start: subscribers
		// keep their own positions and catch up to it from the outbox
		// (those that joined before it saw no horizon to catch up to).
		safe, err := rd.Horizon(ctx, h)
		if err != nil || safe == 0 {
			return false, err
		}
		s.horizon.Store(safe)
		s.mu.Lock()
		for _, tf := range s.tenants {
			tf.mu.Lock()
			tf.behind = max(tf.behind, safe)
			tf.mu.Unlock()
			tf.poke()
		}
		s.mu.Unlock()
		return false, nil
	}
	upto, evs, more, err := rd.HorizonRead(ctx, h, tenants, from, batchRead)
	if err != nil {
		return false, err
	}
	if h.Held() {
		s.held.Add(1)
	}
	if upto <= from {
		return false, nil
	}
	read := time.Now()
	for i := range evs {
		o := s.origin(&evs[i])
		s.stages.observeFrom(StageHorizon, o, read)
		s.stages.observeFrom(StageRead, o, read)
	}
	by := map[string][]outbox.Event{}
	for _, ev := range evs {
		by[ev.TenantID] = append(by[ev.TenantID], ev)
	}
	s.horizon.Store(upto)
	// Only the tenants read get the batch: one that arrived since keeps
	// its own position and catches up from the outbox at its next batch.
	s.mu.Lock()
	for _, id := range tenants {
		if tf := s.tenants[id]; tf != nil {
			tf.push(batch{a: from, b: upto, evs: by[id]})
		}
	}
	s.mu.Unlock()
	return more, nil
}

// Held is how many polls found the horizon held back: the outbox's
// sequence had gone past it because a transaction that drew an earlier
// seq was still in flight (for the metrics: how often a frame waits for
// another write to commit).
func (s *Feed) Held() uint64 { return s.held.Load() }

func (s *Feed) tenantIDs() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]string, 0, len(s.tenants))
	for id := range s.tenants {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// batch is the events of one tenant with seq in (a, b].
type batch struct {
	a, b int64
	evs  []outbox.Event
}

// tenantFeed is one tenant's subscribers and the goroutine serving them.
type tenantFeed struct {
	id    string
	count int // guarded by Feed.mu
	wake  chan struct{}
	stop  atomic.Bool

	mu   sync.Mutex
	subs map[*Subscriber]struct{}
	// version counts changes of subs: the goroutine rebuilds its index
	// of them when it moved.
	version uint64
	queue   []batch
	// behind is a horizon its subscribers must catch up to from the
	// outbox (batches dropped, or a subscriber joined late).
	behind int64
}

func (t *tenantFeed) poke() {
	select {
	case t.wake <- struct{}{}:
	default:
	}
}

// push queues b without waiting: a tenant whose goroutine is behind loses
// the batch, not the events (it reads them back from the outbox).
func (t *tenantFeed) push(b batch) {
	t.mu.Lock()
	if len(t.queue) < queueBatches {
		t.queue = append(t.queue, b)
	} else {
		t.behind = max(t.behind, b.b)
	}
	t.mu.Unlock()
	t.poke()
}

func (s *Feed) runTenant(ctx context.Context, t *tenantFeed) {
	ix, version := newSubIndex(nil), uint64(0)
	for !t.stop.Load() {
		select {
		case <-ctx.Done():
			return
		case <-t.wake:
		}
		t.mu.Lock()
		queue, behind := t.queue, t.behind
		t.queue, t.behind = nil, 0
		if t.version != version {
			ix, version = newSubIndex(t.subs), t.version
		}
		t.mu.Unlock()
		for _, b := range queue {
			s.advance(ix, b)
		}
		if behind > 0 {
			if err := s.catchUpTenant(ctx, t.id, ix, behind); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("graphql subscriptions: catch up", "tenant", t.id, "err", err)
			}
		}
	}
}

// catchUpTenant brings every subscriber of a tenant to upto (batches were
// dropped, or the feed's first proof came after they joined): it reads the
// tenant's events from the earliest subscriber's position once, in pages,
// and hands each page to advance as a batch, so the catch-up costs one
// read per page and the index's filter tests, not a read and a test of
// every event per subscriber.
func (s *Feed) catchUpTenant(ctx context.Context, tenant string, ix *subIndex, upto int64) error {
	from := upto
	for _, r := range ix.all {
		if !r.done.Load() {
			from = min(from, r.pos)
		}
	}
	const page = 2000
	for from < upto {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		s.reads[readCatchUp].Add(1)
		evs, err := s.store.EventsRange(ctx, []string{tenant}, from, upto, page)
		if err != nil {
			return err
		}
		b := batch{a: from, b: upto, evs: evs}
		if len(evs) == page {
			b.b = evs[len(evs)-1].Seq
		}
		s.advance(ix, b)
		from = b.b
	}
	return nil
}

// advance gives every subscriber the events of b it has not had. One
// behind b's start catches up from the outbox first (if that fails its
// position stays before b and a later batch retries). Each event is then
// offered to the subscribers it may match (subIndex), in order; everyone
// else in step with b moves past it without looking at it.
func (s *Feed) advance(ix *subIndex, b batch) {
	for _, r := range ix.all {
		if !r.done.Load() && r.pos < b.a {
			if err := s.catchUp(r, b.a, false); err != nil && !errors.Is(err, context.Canceled) {
				s.log.Warn("graphql subscriptions: catch up", "tenant", r.Scope.TenantID, "err", err)
			}
		}
	}
	var gone map[*Subscriber]bool // consumers that went away during b
	var memo frameMemo
	now := time.Now()
	for i := range b.evs {
		ev := &b.evs[i]
		origin := s.origin(ev)
		s.stages.observeFrom(StageDispatched, origin, now)
		ix.each(ev, func(r *Subscriber) {
			if r.done.Load() || gone[r] || r.pos < b.a || r.pos >= ev.Seq {
				return
			}
			if !s.deliver(r, ev, origin, false, &memo) {
				if gone == nil {
					gone = map[*Subscriber]bool{}
				}
				gone[r] = true
				return
			}
			r.pos = ev.Seq
		})
	}
	for _, r := range ix.all {
		if !gone[r] && r.pos >= b.a {
			r.pos = max(r.pos, b.b)
		}
	}
}

// catchUp reads the tenant's events in (r.pos, upto] from the outbox and
// gives them to r, waiting for the consumer when wait is set.
func (s *Feed) catchUp(r *Subscriber, upto int64, wait bool) error {
	const page = 500
	for r.pos < upto {
		if r.done.Load() {
			return context.Canceled
		}
		s.reads[readCatchUp].Add(1)
		evs, err := s.store.EventsRange(r.ctx, []string{r.Scope.TenantID}, r.pos, upto, page)
		if err != nil {
			return err
		}
		for i := range evs {
			if !s.deliver(r, &evs[i], s.origin(&evs[i]), wait, nil) {
				return context.Canceled
			}
			r.pos = evs[i].Seq
		}
		if len(evs) < page {
			r.pos = upto
		}
	}
	return nil
}

// origin is when ev was inserted and, when this process wrote it, committed.
func (s *Feed) origin(ev *outbox.Event) Origin {
	return Origin{Inserted: EventTime(ev.ID), Committed: s.local.at(ev.ID)}
}

// follows reports whether r follows events of ev's kind.
func follows(r *Subscriber, ev *outbox.Event) bool {
	if r.Name != ev.Name {
		return false
	}
	if r.Change != nil {
		return slices.Contains(r.Types, ev.Type)
	}
	return r.EventType == ev.Type
}

// deliver sends ev to r when r follows it and its where matches; false
// when r's consumer is gone. The frame is taken from memo when a
// subscriber with the same frameKey was sent this event already (nil: no
// sharing).
func (s *Feed) deliver(r *Subscriber, ev *outbox.Event, origin Origin, wait bool, memo *frameMemo) bool {
	if !follows(r, ev) {
		return true
	}
	ctx := r.ctx
	ok, err := s.matches(ctx, r, ev)
	if err != nil {
		s.log.Warn("graphql subscriptions: filter", "err", err)
		return ctx.Err() == nil
	}
	if !ok {
		return true
	}
	// The principal's read rule: an event reaches a subscriber only if its
	// record (for a delete, the record as it was) passes the rule.
	if r.Entity != nil {
		local := false
		if fields, err := ev.Fields(); err == nil {
			ok, local = r.Scope.AdmitsLocally(r.Entity.Name, fields) // in Go: no round trip
		}
		if !local {
			s.reads[readRule].Add(1)
			if ok, err = s.store.Admits(ctx, r.Scope, r.Entity.Name, ev.Record); err != nil {
				s.log.Warn("graphql subscriptions: read rule", "err", err)
				return ctx.Err() == nil
			}
		}
		if !ok {
			return true
		}
	} else if outbox.IsRelationship(ev.Type) {
		// An edge shows only when the principal may read its ruled ends.
		if r.Scope.RuleSet() != "" {
			s.reads[readRule].Add(1)
		}
		if ok, err = s.store.AdmitsEdge(ctx, r.Scope, ev); err != nil {
			s.log.Warn("graphql subscriptions: read rule", "err", err)
			return ctx.Err() == nil
		}
		if !ok {
			return true
		}
	}
	if frame, ok := memo.get(ev.Seq, r.frame); ok {
		return s.send(r, frame, origin, wait)
	}
	rec := ev.Record
	if r.Sel != nil && ev.Type != outbox.EntityDeleted {
		if rec, err = s.read(ctx, r, ev.Record); err != nil {
			s.log.Warn("graphql subscriptions: read record", "event", ev.ID, "err", err)
			return ctx.Err() == nil
		}
		if rec == nil && r.Change == nil {
			return true // deleted since the event: nothing left to show
		}
	}
	var b bytes.Buffer
	b.WriteString(`{"data":{`)
	jsonshape.WriteKey(&b, r.Key)
	if r.Change != nil {
		err = s.writeChange(ctx, &b, r, ev, rec)
	} else {
		err = jsonshape.WriteObj(&b, r.Shape, rec)
	}
	if err != nil {
		s.log.Warn("graphql subscriptions: reshape event", "event", ev.ID, "err", err)
		return ctx.Err() == nil
	}
	// The cursor of a Created/Updated/Deleted frame rides in its
	// extensions, so every subscription can resume.
	b.WriteString(`},"extensions":{"cursor":"`)
	b.WriteString(ev.ID)
	b.WriteString(`"}}`)
	memo.put(ev.Seq, r.frame, b.Bytes()) // sinks never modify a frame: it can be shared
	return s.send(r, b.Bytes(), origin, wait)
}

// send hands frame to r's sink; false when r's consumer is gone.
func (s *Feed) send(r *Subscriber, frame []byte, origin Origin, wait bool) bool {
	if wait {
		return r.sink.SendWait(r.ctx, frame) == nil
	}
	s.stages.observeFrom(StageEncoded, origin, time.Now())
	ok := r.sink.Send(frame, origin)
	s.stages.observeFrom(StageEnqueued, origin, time.Now())
	return ok
}

// changeTypes name event types in the ChangeType enum.
var changeTypes = map[string]string{outbox.EntityCreated: "CREATED", outbox.EntityUpdated: "UPDATED", outbox.EntityDeleted: "DELETED"}

// writeChange writes the {type, cursor, record, previous} object of a
// <singular>Changed frame, as selected.
func (s *Feed) writeChange(ctx context.Context, b *bytes.Buffer, r *Subscriber, ev *outbox.Event, rec []byte) error {
	b.WriteByte('{')
	for i, f := range r.Change.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		jsonshape.WriteKey(b, f.Key)
		switch f.Kind {
		case exec.ChangeTypename:
			b.WriteString(`"` + r.Change.Typename + `"`)
		case exec.ChangeType:
			b.WriteString(`"` + changeTypes[ev.Type] + `"`)
		case exec.ChangeCursor:
			b.WriteString(`"` + ev.ID + `"`)
		case exec.ChangeRecord:
			if rec == nil {
				b.WriteString("null")
			} else if err := jsonshape.WriteObj(b, f.Shape, rec); err != nil {
				return err
			}
		case exec.ChangePrevious:
			var prev []byte
			switch ev.Type {
			case outbox.EntityDeleted:
				prev = ev.Record
			case outbox.EntityUpdated:
				var err error
				if prev, err = s.store.PreviousEventRecord(ctx, ev); err != nil {
					return err
				}
			}
			if prev == nil {
				b.WriteString("null")
			} else if err := jsonshape.WriteObj(b, f.Shape, prev); err != nil {
				return err
			}
		}
	}
	b.WriteByte('}')
	return nil
}

// read reads the event's record with the subscriber's selection (its
// relationships and file metadata) in one statement through the records
// store; nil when the record no longer exists.
func (s *Feed) read(ctx context.Context, sub *Subscriber, record []byte) ([]byte, error) {
	ms, err := jsonshape.ObjectMembers(record, nil)
	if err != nil {
		return nil, err
	}
	var id string
	if err := json.Unmarshal(jsonshape.Lookup(ms, schema.ColID), &id); err != nil {
		return nil, err
	}
	s.reads[readRecord].Add(1)
	raw, err := s.exec.EventRecord(ctx, sub.Scope, sub.Entity.Name, *sub.Sel, id)
	if err != nil {
		return nil, err
	}
	if ms, err = jsonshape.ObjectMembers(raw, nil); err != nil {
		return nil, err
	}
	items, err := jsonshape.ArrayItems(jsonshape.Lookup(ms, "items"), nil)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items[0], nil
}

// matches evaluates the subscriber's where on the event's record: in Go
// when the filter allows it (no database round trip per subscriber), else
// in Postgres.
func (s *Feed) matches(ctx context.Context, sub *Subscriber, ev *outbox.Event) (bool, error) {
	if sub.Match == nil {
		return true, nil
	}
	if fields, err := ev.Fields(); err == nil {
		if match, ok := sub.Match.MatchesLocally(fields); ok {
			s.localMatches.Add(1)
			return match, nil
		}
	}
	s.sqlMatches.Add(1)
	s.reads[readFilter].Add(1)
	return s.store.Matches(ctx, sub.Match, ev.Record)
}

// Matches reports how many filter evaluations ran in Go and in Postgres
// (for tests and the metrics).
func (s *Feed) Matches() (local, sql uint64) { return s.localMatches.Load(), s.sqlMatches.Load() }

// ReadKinds name the statements the feed sends Postgres (Reads): batch
// (the horizon samples and the outbox reads shared by every subscriber of
// the server), catch_up (a subscriber reading what it missed), filter and
// rule (a where or a read rule Go could not evaluate: per subscriber and
// event), record (a selection needing more than the event's record).
var ReadKinds = [...]string{"batch", "catch_up", "filter", "rule", "record"}

const (
	readBatch = iota
	readCatchUp
	readFilter
	readRule
	readRecord
)

// Reads is how many statements of each of ReadKinds the feed has sent.
func (s *Feed) Reads(kind int) uint64 { return s.reads[kind].Load() }

// Polls is how many times the feed has read the outbox (for tests that
// must let it run past a moment).
func (s *Feed) Polls() uint64 { return s.polls.Load() }

// Active is the number of running subscriptions (for the metrics).
func (s *Feed) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, t := range s.tenants {
		n += t.count
	}
	return n
}

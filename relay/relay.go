// Package relay moves committed outbox events (dds.events) to webhook
// delivery. It runs in the worker: it claims small batches of events as
// row locks of a transaction held while it works on them
// (outbox.Store.Hold), so several relays share the work and a relay that
// dies strands nothing; it matches each event to the
// tenant's active webhooks, makes the first attempt itself on a bounded
// pool of HTTP workers and records it at once, creating the delivery row
// (holding the exact body sent) with its outcome. A failed delivery stays
// `retrying` in Postgres; a hand-over loop beside the batches gives it to a
// durable Temporal retry workflow (webhook.DeliveryWorkflow) whose id is derived
// from (webhook, event), so an unreachable Temporal never delays healthy
// deliveries. An event is marked relayed once every delivery of it has its
// first attempt recorded. See docs/webhooks.md for the design.
package relay

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
)

// Config tunes the relay.
type Config struct {
	// BatchSize is how many events one claim takes at most (default 100).
	// Within the repeat bound (InFlightEvents), 2 batches of 100 cost
	// Postgres a third less CPU per delivery of a backlog than 4 of 50
	// (half the claims, webhook reads and recording statements, and each
	// claim skips fewer events in flight), measured with bench/webhooks.
	BatchSize int
	// Lease is how long a held claim may go without a word from its relay
	// (default 10s; outbox.Store.Hold): a relay keeps the claims of the
	// batches it works on every third of it, so a silent relay's events are
	// taken over within one lease (a dead one's at once) while a slow batch
	// is not taken over by another relay. Events a batch could not relay
	// get an expiring claim of one lease.
	Lease time.Duration
	// BatchTimeout bounds the work on one batch (default 60s), also on
	// shutdown: a batch in flight is finished, not abandoned.
	BatchTimeout time.Duration
	// PollInterval is the safety net when no notification arrives (default 1s).
	PollInterval time.Duration
	// BusyPoll is how often the relay looks for events, besides the
	// notifications, while events keep coming: for a second after a claim
	// found some (BusyFor; default 5ms; negative: never). The server announces
	// events at most every 20 ms (pgnotify's pace), so without it an event
	// waits half of that on average before the relay hears of it; an empty
	// claim costs an index probe of the pending events.
	BusyPoll time.Duration
	// BusyFor is how long after a claim that found events the relay keeps
	// polling every BusyPoll (default 1s).
	BusyFor time.Duration
	// HTTPWorkers bounds concurrent first attempts (default 64).
	HTTPWorkers int
	// InFlightBatches bounds batches processed concurrently (default 4).
	InFlightBatches int
	// InFlightEvents bounds the events of the batches in flight (default
	// 200): a claim takes at most what is left of it. It bounds the
	// deliveries a crash can repeat per subscribed webhook
	// (docs/webhooks.md). A backlog runs as 2 batches of 100; a steady
	// trickle as up to InFlightBatches small ones, so a batch in flight
	// never delays the claim of the next few events.
	InFlightEvents int
	// TaskQueue of the retry workflows (default "dds").
	TaskQueue string
	// RetrySchedule, when set, replaces webhook.Schedule for the retry
	// workflows this relay starts (each workflow carries its schedule).
	RetrySchedule []time.Duration
	// StartTimeout bounds one retry workflow start (default 5s).
	StartTimeout time.Duration
	// Registerer, when set, receives the relay's metrics; Deliveries is the
	// delivery counter shared with the retry activity.
	Registerer prometheus.Registerer
	Deliveries *webhook.Metrics
	// Trace, when set, receives each claimed batch's timeline when its work
	// ends (benchmarks' per-phase profiles). It is called from the batch's
	// goroutine: it must be safe for concurrent use and quick.
	Trace func(BatchTrace)
}

func (c *Config) defaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 100
	}
	if c.Lease <= 0 {
		c.Lease = 10 * time.Second
	}
	if c.BatchTimeout <= 0 {
		c.BatchTimeout = time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.BusyPoll == 0 {
		c.BusyPoll = 5 * time.Millisecond
	}
	if c.BusyFor <= 0 {
		c.BusyFor = time.Second
	}
	if c.HTTPWorkers <= 0 {
		c.HTTPWorkers = 64
	}
	if c.InFlightBatches <= 0 {
		c.InFlightBatches = 4
	}
	if c.InFlightEvents <= 0 {
		c.InFlightEvents = 200
	}
	if c.TaskQueue == "" {
		c.TaskQueue = "dds"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 5 * time.Second
	}
}

// Relay is one outbox relay. Any number may run against one database.
type Relay struct {
	outbox   *outbox.Store
	store    *webhook.Store
	client   *webhook.Client
	temporal client.Client
	cfg      Config
	log      *slog.Logger
	metrics  *metrics
	wake     chan struct{}
	http     chan struct{} // semaphore of HTTP workers
	// handOverWake wakes the hand-over loop after a batch left deliveries
	// retrying.
	handOverWake chan struct{}
	// paceWake wakes the pacer after a batch queued deliveries of
	// rate-limited webhooks.
	paceWake chan struct{}
}

// New returns a relay.
func New(db *sqlx.DB, hc *webhook.Client, tc client.Client, cfg Config, log *slog.Logger) *Relay {
	cfg.defaults()
	return &Relay{outbox: outbox.NewStore(db), store: webhook.NewStore(db), client: hc, temporal: tc, cfg: cfg, log: log,
		metrics: newMetrics(cfg.Registerer, cfg.Deliveries),
		wake:    make(chan struct{}, 1), http: make(chan struct{}, cfg.HTTPWorkers), handOverWake: make(chan struct{}, 1),
		paceWake: make(chan struct{}, 1)}
}

// Wake makes the relay look for events now (wire it to the outbox's
// NOTIFY channel). Notifications only shorten latency: without any, the
// relay finds every event by polling.
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run relays until ctx ends. Batches are processed concurrently (up to
// InFlightBatches) while the next one is claimed; the hand-over of failed
// deliveries to retry workflows runs beside them.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() { defer wg.Done(); r.handOverLoop(ctx) }()
	wg.Add(1)
	go func() { defer wg.Done(); r.paceLoop(ctx) }()
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	batches := make(chan struct{}, r.cfg.InFlightBatches)
	var inFlight atomic.Int64       // events of the batches in flight
	freed := make(chan struct{}, 1) // a batch ended (Config.InFlightEvents)
	var found time.Time             // when a claim last found events
	// While a backlog drains, each claim starts after the previous full
	// one (outbox.Store.Hold after a seq); a claim from the head of the outbox,
	// at least every PollInterval and after any short claim, finds what
	// that skips (events committed late with a lower seq, released batches).
	var after int64
	var fromHead time.Time
	busy := time.NewTimer(time.Hour) // Reset before each use (no stale fire since Go 1.23)
	defer busy.Stop()
	for {
		select {
		case batches <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		room := r.cfg.InFlightEvents - int(inFlight.Load())
		for room <= 0 {
			select {
			case <-freed:
			case <-ctx.Done():
				<-batches
				return nil
			}
			room = r.cfg.InFlightEvents - int(inFlight.Load())
		}
		n := min(r.cfg.BatchSize, room)
		tr := &BatchTrace{ClaimStart: time.Now()}
		if tr.ClaimStart.Sub(fromHead) >= r.cfg.PollInterval {
			after = 0
		}
		if after == 0 {
			fromHead = tr.ClaimStart
		}
		// The claim lives on in its transaction (outbox.Store.Hold) until
		// the batch ends, bounded by the batch's context; it is not
		// cancelled with ctx, so a claim is never abandoned half-way.
		pctx, pcancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.BatchTimeout)
		held, err := r.outbox.Hold(pctx, n, after, r.cfg.Lease)
		var evs []outbox.Event
		if held != nil {
			evs = held.Events
		}
		tr.Claimed, tr.Events = time.Now(), len(evs)
		after = 0
		if err == nil && len(evs) == n {
			for _, e := range evs {
				after = max(after, e.Seq)
			}
		}
		if err != nil {
			pcancel()
			<-batches
			if ctx.Err() != nil {
				return nil
			}
			r.log.Error("relay: claim events", "err", err)
		} else if len(evs) > 0 {
			found = time.Now()
			inFlight.Add(int64(len(evs)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				// A batch in flight finishes on shutdown (bounded by the
				// 5 s HTTP limit) rather than being abandoned; one that
				// failed then is released, for another relay to take at
				// once.
				defer pcancel()
				// Its room is free once every result is recorded: what
				// is left (the relayed mark) can repeat no POST.
				r.processHeld(pctx, held, tr, ctx.Err, func() {
					inFlight.Add(-int64(len(evs)))
					select {
					case freed <- struct{}{}:
					default:
					}
					<-batches
				})
			}()
			if len(evs) == n {
				continue // more may be waiting: claim again at once
			}
		} else {
			pcancel()
			<-batches
		}
		// While events keep coming, look again soon even without a
		// notification (Config.BusyPoll).
		var soon <-chan time.Time
		if r.cfg.BusyPoll > 0 && time.Since(found) < r.cfg.BusyFor {
			busy.Reset(r.cfg.BusyPoll)
			soon = busy.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-poll.C:
		case <-soon:
		}
	}
}

// RelayOnce claims one batch and processes it synchronously; it returns
// the number of events claimed (tests, tooling).
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	tr := &BatchTrace{ClaimStart: time.Now()}
	pctx, cancel := context.WithTimeout(ctx, r.cfg.BatchTimeout)
	defer cancel()
	held, err := r.outbox.Hold(pctx, r.cfg.BatchSize, 0, r.cfg.Lease)
	if err != nil || held == nil {
		return 0, err
	}
	tr.Claimed, tr.Events = time.Now(), len(held.Events)
	r.processHeld(pctx, held, tr, func() error { return nil }, func() {}) // logged; a failed batch is deferred for a lease
	return len(held.Events), nil
}

// processHeld processes a held batch, keeping its claim alive meanwhile
// (outbox.Held.Touch every third of the lease), and ends the claim: the
// events whose deliveries are all recorded are marked relayed; the others
// (a failed batch, an event whose payload cannot be built) get an expiring
// claim of one lease, as a failed batch kept its claim before, so that no
// relay takes them again at once — unless the relay is shutting down
// (stopping() is not nil), when they are released for another relay.
// recorded is called once the batch's work is over but for ending the
// claim (the relay's loop may claim the next batch meanwhile: a crash now
// repeats no POST of this one).
func (r *Relay) processHeld(ctx context.Context, held *outbox.Held, tr *BatchTrace, stopping func() error, recorded func()) {
	kctx, stop := context.WithCancel(ctx)
	kept := make(chan struct{})
	go func() {
		defer close(kept)
		t := time.NewTicker(r.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-kctx.Done():
				return
			case <-t.C:
				if err := held.Touch(kctx); err != nil && kctx.Err() == nil {
					r.log.Warn("relay: could not keep a batch's claim; its events are taken again once it ends", "events", len(held.Events), "err", err)
				}
			}
		}
	}()
	relayed, err := r.process(ctx, held.Events, tr)
	stop()
	<-kept
	tr.Recorded = time.Now()
	recorded()
	var deferred []string
	if err == nil || stopping() == nil {
		done := map[string]bool{}
		for _, id := range relayed {
			done[id] = true
		}
		for _, e := range held.Events {
			if !done[e.ID] {
				deferred = append(deferred, e.ID)
			}
		}
	}
	rt := RecordTrace{Start: time.Now(), Relayed: len(relayed)}
	if ferr := held.Finish(ctx, relayed, deferred, r.cfg.Lease); ferr != nil {
		// The events come back unrelayed; their recorded deliveries are
		// not sent again.
		r.log.Warn("relay: could not mark a batch relayed; its events are taken again", "events", len(held.Events), "err", ferr)
	}
	rt.End = time.Now()
	tr.Records = append(tr.Records, rt)
	if r.cfg.Trace != nil {
		tr.Done, tr.Err = time.Now(), err
		r.cfg.Trace(*tr)
	}
}

// batch is one claimed batch on its way through process's steps.
type batch struct {
	events []outbox.Event
	hooks  map[string]*webhook.Webhook // by id
	// queued are the deliveries of rate-limited webhooks: created queued
	// (for the pacer) in the batch's first recording transaction.
	queued []webhook.NewDelivery
	jobs   []*attemptJob // first attempts to make
	// settled are the events with nothing left to send: no webhook
	// subscribes, or every delivery is queued or recorded by an earlier
	// pass.
	settled []string
	// relayed are the events whose deliveries are all recorded (committed):
	// the claim's transaction marks them relayed when the batch ends.
	relayed []string
	// open counts, per event, the deliveries whose first attempt is not
	// recorded yet; an event is relayed when its count reaches zero.
	open map[string]int
	// stats for the batch's log line and metrics
	succeeded, retrying, gone, unsubscribed int
}

// attemptJob is one first attempt to make.
type attemptJob struct {
	ref  webhook.DeliveryRef
	nd   *webhook.NewDelivery // the row to create with the result (relay batches; nil for paced sends)
	hook *webhook.Webhook
	ev   *outbox.Event
	res  webhook.Result
	at   time.Time // when the POST started
}

// process relays one claimed batch: match it to webhooks, make the first
// attempts and record them, each delivery row created with its first
// attempt's outcome (webhook.RecordFirstAttempts). It returns the events
// whose deliveries are all recorded (for the caller to mark relayed in the
// claim's transaction); the others stay unrelayed, and when they are
// taken again the delivery rows recorded by then make that pass resume,
// not repeat. Failed first attempts are left `retrying` in Postgres; the
// hand-over loop gives each to a Temporal workflow, so an unreachable
// Temporal never holds a batch up.
func (r *Relay) process(ctx context.Context, evs []outbox.Event, tr *BatchTrace) (relayed []string, err error) {
	start := time.Now()
	b, err := r.match(ctx, evs)
	if err != nil {
		r.log.Error("relay batch failed; its events are retried", "events", len(evs), "err", err)
		return nil, err
	}
	tr.Matched, tr.Deliveries = time.Now(), len(b.jobs)
	if len(b.queued) > 0 {
		// A rate-limited webhook's deliveries are committed queued before
		// the batch's POSTs, as all rows were before issue 23: once any
		// webhook has an event, the console shows the limited webhook's
		// backlog too. Only batches with such deliveries pay the round trip.
		rt := RecordTrace{Start: time.Now(), Rows: len(b.queued)}
		err = r.store.RecordFirstAttempts(ctx, b.queued, nil)
		rt.End = time.Now()
		tr.Records = append(tr.Records, rt)
	}
	if err == nil {
		err = r.deliver(ctx, b, tr)
	}
	d := time.Since(start)
	r.metrics.batch(d, len(evs))
	if b.retrying > 0 {
		r.kickHandOver()
	}
	if err != nil {
		r.log.Error("relay batch failed; its events are retried", "events", len(evs), "err", err, "duration", d)
		return b.relayed, err
	}
	if len(b.queued) > 0 {
		r.kickPacer()
	}
	r.log.Info("relay batch", "events", len(evs), "deliveries", len(b.jobs), "succeeded", b.succeeded,
		"retrying", b.retrying, "gone", b.gone, "queued", len(b.queued), "unsubscribed", b.unsubscribed, "duration", d.Round(time.Microsecond))
	return b.relayed, nil
}

// match loads the batch's tenants' active webhooks, with the deliveries
// they already have of these events (a re-relayed batch), in one
// statement, and pairs every event with the webhooks it matches,
// rendering each event's body once. A delivery recorded by an earlier
// pass is not made again; one an earlier version left `pending` is.
func (r *Relay) match(ctx context.Context, evs []outbox.Event) (*batch, error) {
	b := &batch{events: evs, hooks: map[string]*webhook.Webhook{}, open: map[string]int{}}
	var tenants, ids []string
	seen := map[string]bool{}
	for _, e := range evs {
		ids = append(ids, e.ID)
		if !seen[e.TenantID] {
			seen[e.TenantID] = true
			tenants = append(tenants, e.TenantID)
		}
	}
	hooks, existing, err := r.store.ActiveWithDeliveries(ctx, tenants, ids)
	if err != nil {
		return nil, fmt.Errorf("load webhooks: %w", err)
	}
	byTenant := map[string][]*webhook.Webhook{}
	for i := range hooks {
		h := &hooks[i]
		byTenant[h.TenantID] = append(byTenant[h.TenantID], h)
		b.hooks[h.ID] = h
	}
	for i := range evs {
		e := &evs[i]
		var body []byte
		matched, failed := false, false
		for _, h := range byTenant[e.TenantID] {
			if !h.Matches(e) {
				continue
			}
			matched = true
			status, recorded := existing[webhook.DeliveryKey(h.ID, e.ID)]
			if recorded && status != webhook.StatusPending {
				continue // recorded by an earlier pass
			}
			if body == nil {
				var berr error
				if body, berr = webhook.Body(*e); berr != nil {
					// Not relayed: the event gets an expiring claim of one
					// lease and is tried again after it (an operator sees
					// it in the outbox lag meanwhile).
					r.log.Error("relay: build payload", "event", e.ID, "err", berr)
					failed = true
					break
				}
			}
			nd := &webhook.NewDelivery{ID: uuid.Must(uuid.NewV7()).String(), WebhookID: h.ID, TenantID: e.TenantID, EventID: e.ID,
				EventType: e.Type, EntityName: e.Name, Body: body}
			if h.RateLimit != nil && !recorded {
				nd.Queued = true
				b.queued = append(b.queued, *nd)
				continue
			}
			b.jobs = append(b.jobs, &attemptJob{ref: webhook.DeliveryRef{ID: nd.ID, WebhookID: h.ID, EventID: e.ID, Body: body},
				nd: nd, hook: h, ev: e})
			b.open[e.ID]++
		}
		switch {
		case failed:
			delete(b.open, e.ID) // stays claimed, not relayed
		case !matched:
			b.unsubscribed++
			b.settled = append(b.settled, e.ID)
		case b.open[e.ID] == 0:
			b.settled = append(b.settled, e.ID)
		}
	}
	return b, nil
}

// recordLinger and recordBatch bound how results are grouped into
// recording transactions: a result is recorded at most recordLinger after
// it arrived (or at once when recordBatch results wait, or the batch's last
// one arrived), so a crash repeats at most the POSTs in flight plus 10 ms of
// results, while a batch needs one or two transactions instead of one per
// handful of results.
const (
	recordLinger = 10 * time.Millisecond
	recordBatch  = 64
)

// deliver makes the first attempts on the shared pool of HTTP workers and
// records their results as they arrive: whatever arrived during one
// recording transaction goes into the next, so a crash can repeat only the
// POSTs in flight and the results of one transaction. It collects in
// b.relayed the events whose deliveries are all recorded.
func (r *Relay) deliver(ctx context.Context, b *batch, tr *BatchTrace) error {
	results := make(chan *attemptJob, len(b.jobs))
	launchCtx, stopLaunch := context.WithCancel(ctx)
	defer stopLaunch()
	var firstSend atomic.Int64 // unix nanoseconds of the first POST's start
	go func() {
		for i, j := range b.jobs {
			select {
			case r.http <- struct{}{}:
			case <-launchCtx.Done():
				return
			}
			if i == 0 {
				firstSend.Store(time.Now().UnixNano())
			}
			go func() {
				defer func() { <-r.http }()
				j.at = time.Now() // an attempt is recorded at its start
				j.res = r.client.Send(ctx, j.hook.TargetURL, j.hook.SigningSecret, j.ev.ID, j.ref.Body)
				results <- j
			}()
		}
	}()
	var rows []webhook.NewDelivery
	var recs []webhook.AttemptRecord
	// done: events whose last delivery is among rows; inFlush: those of
	// the recording running now. An event counts as relayed (b.relayed)
	// once the recording of its last delivery committed.
	b.relayed = append(b.relayed, b.settled...)
	var done, inFlush []string
	flushed := make(chan error, 1)
	flushing := false
	var records []*RecordTrace // each End written before its flushed send
	defer func() {
		if ns := firstSend.Load(); ns != 0 {
			tr.FirstSend = time.Unix(0, ns)
		}
		if flushing { // returned early: the last one is still running
			records = records[:len(records)-1]
		}
		for _, rt := range records {
			tr.Records = append(tr.Records, *rt)
		}
	}()
	// A result waits at most recordLinger for others to share its
	// recording transaction (each costs a round trip or a few and takes
	// the webhook's row lock); the last result of the batch goes at once.
	var linger <-chan time.Time
	flush := func() {
		rt := &RecordTrace{Start: time.Now(), Rows: len(rows)}
		records = append(records, rt)
		go func(rows []webhook.NewDelivery, recs []webhook.AttemptRecord) {
			err := r.store.RecordFirstAttempts(ctx, rows, recs)
			rt.End = time.Now()
			flushed <- err
		}(rows, recs)
		rows, recs, inFlush, done, flushing, linger = nil, nil, done, nil, true, nil
	}
	for got := 0; got < len(b.jobs) || flushing || len(rows) > 0; {
		pending := len(rows) > 0
		if !flushing && pending && (got == len(b.jobs) || len(recs) >= recordBatch) {
			flush()
		} else if !flushing && pending && linger == nil {
			linger = time.After(recordLinger)
		}
		in := results
		if got == len(b.jobs) {
			in = nil
		}
		select {
		case j := <-in:
			got++
			if got == len(b.jobs) {
				tr.LastResult = time.Now()
			}
			rec := r.outcome(j)
			b.count(rec)
			rows = append(rows, *j.nd)
			recs = append(recs, rec)
			if b.open[j.ev.ID]--; b.open[j.ev.ID] == 0 {
				done = append(done, j.ev.ID)
			}
		case err := <-flushed:
			flushing = false
			if err != nil {
				return fmt.Errorf("record attempts: %w", err)
			}
			b.relayed = append(b.relayed, inFlush...)
			inFlush = nil
		case <-linger:
			linger = nil
			if !flushing && len(rows) > 0 {
				flush()
			}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// outcome turns a first attempt into the record to store: succeeded; the
// receiver gone (410: the delivery fails and the webhook is disabled); or
// retrying, which the hand-over loop gives to a retry workflow.
func (r *Relay) outcome(j *attemptJob) webhook.AttemptRecord {
	rec := webhook.AttemptRecord{DeliveryID: j.ref.ID, WebhookID: j.ref.WebhookID, Attempt: 1, Result: j.res, At: j.at}
	switch {
	case j.res.OK():
		rec.Status = webhook.StatusSucceeded
	case j.res.Gone():
		rec.Status = webhook.StatusFailed
	default:
		rec.Status = webhook.StatusRetrying
		next := j.at.Add(r.schedule()[0])
		rec.Next = &next
	}
	r.metrics.attempt("first", rec)
	return rec
}

func (b *batch) count(rec webhook.AttemptRecord) {
	switch {
	case rec.Status == webhook.StatusSucceeded:
		b.succeeded++
	case rec.Result.Gone():
		b.gone++
	default:
		b.retrying++
	}
}

// schedule is the retry schedule of the deliveries this relay hands over.
func (r *Relay) schedule() []time.Duration {
	if len(r.cfg.RetrySchedule) > 0 {
		return r.cfg.RetrySchedule
	}
	return webhook.Schedule
}

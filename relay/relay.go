// Package relay moves committed outbox events (dds.events) to webhook
// delivery. It runs in the worker: it claims events with an expiring claim
// (FOR UPDATE SKIP LOCKED, claimed_until), so several relays share the
// work and a relay that dies strands nothing; it matches each event to the
// tenant's active webhooks, commits one delivery row per (webhook, event)
// holding the exact body, makes the first attempt itself on a bounded pool
// of HTTP workers, and hands only failed deliveries to a durable Temporal
// retry workflow (workflows.Delivery) whose ID is derived from (webhook,
// event). An event is marked relayed only after all its delivery rows are
// committed and each has its first attempt recorded or its retry workflow
// started. See docs/webhooks.md for the design and its trade-offs.
package relay

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/workflows"
)

// Config tunes the relay.
type Config struct {
	// ListenURL, when set, is the Postgres URL of a LISTEN dds_events
	// connection that wakes the relay on every committed event. Without it
	// (or when the hub is wired through Wake) only polling finds events.
	ListenURL string
	// BatchSize is how many events one claim takes (default 200).
	BatchSize int
	// Lease is how long a claim lasts (default 2m). A relay that dies
	// mid-batch leaves its events to be re-claimed after the lease.
	Lease time.Duration
	// PollInterval is the safety net when no notification arrives (default 1s).
	PollInterval time.Duration
	// HTTPWorkers bounds concurrent first attempts (default 64).
	HTTPWorkers int
	// InFlightBatches bounds batches processed concurrently (default 4).
	InFlightBatches int
	// TaskQueue of the retry workflows (default "dds").
	TaskQueue string
}

func (c *Config) defaults() {
	if c.BatchSize <= 0 {
		c.BatchSize = 200
	}
	if c.Lease <= 0 {
		c.Lease = 2 * time.Minute
	}
	if c.PollInterval <= 0 {
		c.PollInterval = time.Second
	}
	if c.HTTPWorkers <= 0 {
		c.HTTPWorkers = 64
	}
	if c.InFlightBatches <= 0 {
		c.InFlightBatches = 4
	}
	if c.TaskQueue == "" {
		c.TaskQueue = "dds"
	}
}

// Relay is one outbox relay. Any number may run against one database.
type Relay struct {
	db       *sqlx.DB
	store    *webhook.Store
	client   *webhook.Client
	temporal client.Client
	cfg      Config
	log      *slog.Logger
	wake     chan struct{}
	http     chan struct{} // semaphore of HTTP workers
}

// New returns a relay.
func New(db *sqlx.DB, hc *webhook.Client, tc client.Client, cfg Config, log *slog.Logger) *Relay {
	cfg.defaults()
	return &Relay{db: db, store: webhook.NewStore(db), client: hc, temporal: tc, cfg: cfg, log: log,
		wake: make(chan struct{}, 1), http: make(chan struct{}, cfg.HTTPWorkers)}
}

// Wake makes the relay look for events now (wire it to NOTIFY dds_events).
func (r *Relay) Wake() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// Run relays until ctx ends. Batches are processed concurrently (up to
// InFlightBatches) while the next one is claimed.
func (r *Relay) Run(ctx context.Context) error {
	if r.cfg.ListenURL != "" {
		l := pq.NewListener(r.cfg.ListenURL, 100*time.Millisecond, 10*time.Second, func(ev pq.ListenerEventType, err error) {
			if ev == pq.ListenerEventReconnected {
				r.Wake() // notifications may have been missed
			}
		})
		defer l.Close()
		if err := l.Listen("dds_events"); err != nil {
			return err
		}
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-l.Notify:
					if !ok {
						return
					}
					r.Wake()
				}
			}
		}()
	}
	poll := time.NewTicker(r.cfg.PollInterval)
	defer poll.Stop()
	batches := make(chan struct{}, r.cfg.InFlightBatches)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case batches <- struct{}{}:
		case <-ctx.Done():
			return nil
		}
		// A claim is never abandoned half-way: had the statement committed
		// while we gave up on it, its events would wait out the lease.
		cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		evs, err := r.claim(cctx)
		ccancel()
		if err != nil {
			<-batches
			if ctx.Err() != nil {
				return nil
			}
			r.log.Error("relay: claim events", "err", err)
		} else if len(evs) > 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-batches }()
				// A batch in flight finishes on shutdown (bounded by the
				// 5 s HTTP limit) rather than waiting out its claim.
				pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.cfg.Lease/2)
				defer cancel()
				r.process(pctx, evs)
			}()
			if len(evs) == r.cfg.BatchSize {
				continue // more may be waiting: claim again at once
			}
		} else {
			<-batches
		}
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
		case <-poll.C:
		}
	}
}

// RelayOnce claims one batch and processes it synchronously; it returns
// the number of events claimed (tests, tooling).
func (r *Relay) RelayOnce(ctx context.Context) (int, error) {
	evs, err := r.claim(ctx)
	if err != nil || len(evs) == 0 {
		return 0, err
	}
	r.process(ctx, evs)
	return len(evs), nil
}

// claim takes up to BatchSize unrelayed events whose claim is absent or
// expired, oldest first, and claims them for Lease. SKIP LOCKED lets
// concurrent relays take disjoint batches without waiting.
func (r *Relay) claim(ctx context.Context) ([]webhook.Event, error) {
	var out []webhook.Event
	err := r.db.SelectContext(ctx, &out, `WITH c AS (
			SELECT id FROM dds.events
			WHERE relayed_at IS NULL AND (claimed_until IS NULL OR claimed_until < now())
			ORDER BY seq LIMIT $1 FOR UPDATE SKIP LOCKED)
		UPDATE dds.events e SET claimed_until = now() + $2 * interval '1 millisecond'
		FROM c WHERE e.id = c.id AND e.relayed_at IS NULL -- rechecked on the latest row version
		RETURNING e.id, e.tenant_id, COALESCE((SELECT name FROM dds.tenants t WHERE t.id = e.tenant_id), '') AS tenant_name,
			e.schema_name, e.type, e.entity_name, e.entity_id, e.record, e.created_at`,
		r.cfg.BatchSize, r.cfg.Lease.Milliseconds())
	return out, err
}

// attemptJob is one first attempt to make.
type attemptJob struct {
	ref  webhook.DeliveryRef
	hook *webhook.Webhook
	ev   *webhook.Event
	body []byte
	res  webhook.Result
	at   time.Time
}

// process relays one claimed batch. Any error leaves the affected events
// claimed but not relayed: they are taken again when the claim expires,
// and the delivery rows' state makes the second pass resume, not repeat.
func (r *Relay) process(ctx context.Context, evs []webhook.Event) {
	tenantSet := map[string]bool{}
	var tenants []string
	for _, e := range evs {
		if !tenantSet[e.TenantID] {
			tenantSet[e.TenantID] = true
			tenants = append(tenants, e.TenantID)
		}
	}
	hooks, err := r.store.ActiveFor(ctx, tenants)
	if err != nil {
		r.log.Error("relay: load webhooks", "err", err)
		return
	}
	byTenant := map[string][]*webhook.Webhook{}
	hookByID := map[string]*webhook.Webhook{}
	for i := range hooks {
		h := &hooks[i]
		byTenant[h.TenantID] = append(byTenant[h.TenantID], h)
		hookByID[h.ID] = h
	}
	var (
		news      []webhook.NewDelivery
		noMatch   []string
		bodies    = map[string][]byte{}
		evByID    = map[string]*webhook.Event{}
		remaining = map[string]int{} // event id -> deliveries not yet settled
	)
	for i := range evs {
		e := &evs[i]
		evByID[e.ID] = e
		for _, h := range byTenant[e.TenantID] {
			if !h.Matches(e) {
				continue
			}
			body, ok := bodies[e.ID]
			if !ok {
				if body, err = webhook.Body(*e); err != nil {
					r.log.Error("relay: build payload", "event", e.ID, "err", err)
					continue
				}
				bodies[e.ID] = body
			}
			news = append(news, webhook.NewDelivery{WebhookID: h.ID, TenantID: e.TenantID, EventID: e.ID,
				EventType: e.Type, EntityName: e.EntityName, Body: body})
			remaining[e.ID] = 0
		}
		if _, matched := remaining[e.ID]; !matched {
			noMatch = append(noMatch, e.ID)
		}
	}
	// Commit the delivery rows (and relay the unmatched events) before any
	// network I/O: from here on no event can be lost.
	refs, err := r.store.InsertDeliveries(ctx, news, noMatch)
	if err != nil {
		r.log.Error("relay: insert deliveries", "err", err)
		return
	}
	var jobs []*attemptJob
	var ensure []webhook.DeliveryRef // rows left retrying by an earlier pass
	// Count from the rows returned: a webhook deleted meanwhile has none.
	for _, ref := range refs {
		remaining[ref.EventID]++
	}
	for _, ref := range refs {
		switch ref.Status {
		case webhook.StatusPending:
			jobs = append(jobs, &attemptJob{ref: ref, hook: hookByID[ref.WebhookID], ev: evByID[ref.EventID], body: ref.Body})
		case webhook.StatusRetrying:
			ensure = append(ensure, ref)
		default: // succeeded, failed, cancelled: settled by an earlier pass
			remaining[ref.EventID]--
		}
	}
	// First attempts, concurrently on the shared pool of HTTP workers.
	// Results are recorded in small groups as they arrive (every 64 or
	// 10 ms) rather than once per batch, so a crash re-sends only what was
	// in flight, not a whole batch.
	results := make(chan *attemptJob, len(jobs))
	launchCtx, stopLaunch := context.WithCancel(ctx)
	defer stopLaunch()
	go func() {
		for _, j := range jobs {
			select {
			case r.http <- struct{}{}:
			case <-launchCtx.Done():
				return
			}
			go func() {
				defer func() { <-r.http }()
				j.res = r.client.Send(ctx, j.hook.TargetURL, j.hook.SigningSecret, j.ev.ID, j.body)
				j.at = time.Now()
				results <- j
			}()
		}
	}()
	var recs []webhook.AttemptRecord
	var done []string
	for id, n := range remaining {
		if n == 0 { // every delivery settled by an earlier pass, or its webhook deleted
			done = append(done, id)
		}
	}
	flush := func() bool {
		if len(recs) == 0 && len(done) == 0 {
			return true
		}
		if err := r.store.RecordAttempts(ctx, recs, done); err != nil {
			r.log.Error("relay: record attempts", "err", err)
			return false
		}
		recs, done = recs[:0], done[:0]
		return true
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for got := 0; got < len(jobs); {
		select {
		case j := <-results:
			got++
			rec := webhook.AttemptRecord{DeliveryID: j.ref.ID, WebhookID: j.ref.WebhookID, Attempt: 1, Result: j.res, At: j.at}
			if j.res.OK() {
				rec.Status = webhook.StatusSucceeded
				if remaining[j.ev.ID]--; remaining[j.ev.ID] == 0 {
					done = append(done, j.ev.ID)
				}
			} else {
				rec.Status = webhook.StatusRetrying
				next := j.at.Add(webhook.Schedule[0])
				rec.Next = &next
				ensure = append(ensure, j.ref)
			}
			recs = append(recs, rec)
			if len(recs) >= 64 && !flush() {
				return
			}
		case <-tick.C:
			if !flush() {
				return
			}
		case <-ctx.Done():
			return
		}
	}
	if !flush() || len(ensure) == 0 {
		return
	}
	// Hand failures to durable retry workflows; an event is relayed once
	// every failed delivery of it has its workflow.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, ref := range ensure {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev := evByID[ref.EventID]
			err := workflows.StartDelivery(ctx, r.temporal, r.cfg.TaskQueue, workflows.DeliveryInput{
				DeliveryID: ref.ID, WebhookID: ref.WebhookID, EventID: ref.EventID, TenantID: ev.TenantID, EventType: ev.Type})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.log.Error("relay: start retry workflow", "delivery", ref.ID, "err", err)
				remaining[ref.EventID] = -1 << 30 // keep the event for a later pass
				return
			}
			remaining[ref.EventID]--
		}()
	}
	wg.Wait()
	done = done[:0]
	for _, ref := range ensure {
		if remaining[ref.EventID] == 0 {
			done = append(done, ref.EventID)
			remaining[ref.EventID] = -1 // once
		}
	}
	if len(done) > 0 {
		if err := webhook.MarkRelayed(ctx, r.db, done); err != nil {
			r.log.Error("relay: mark relayed", "err", err)
		}
	}
}

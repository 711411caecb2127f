// Package live is the live feed of GraphQL subscriptions, independent of
// the socket that carries them: the registry of running subscriptions per
// tenant, and the dispatch of the events outbox to them. One LISTEN
// connection per process (the pgnotify hub) feeds it: each NOTIFY
// dds_events of a tenant with subscribers names that tenant's events
// committed since the writer's previous flush ("<tenant>:<id>,..."), which
// are read in one statement from dds.events, in outbox order, and fanned
// out in memory; each subscriber's where is compiled by the query compiler
// and evaluated against the event's record in Postgres
// (jsonb_populate_record), so filters mean exactly what they mean in
// queries.
package live

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/dds-project/dds/graphql/exec"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Feed dispatches events to the running subscriptions. Call Notify for
// every dds_events payload (wire it to the pgnotify hub) and Run to
// dispatch.
type Feed struct {
	store *records.Store
	exec  *exec.Executor
	log   *slog.Logger

	events chan string
	mu     sync.RWMutex
	subs   map[string]map[*Subscriber]struct{} // tenant -> subscribers
}

// NewFeed returns a feed reading events and records through store, and
// the records a subscription's selection needs through ex.
func NewFeed(store *records.Store, ex *exec.Executor, log *slog.Logger) *Feed {
	return &Feed{store: store, exec: ex, log: log, events: make(chan string, 4096), subs: map[string]map[*Subscriber]struct{}{}}
}

// Add starts subscription sub: from now on each event it follows is
// written and handed to send (which must not block). Events written before
// it (announced late, since announcements follow commits in batches) are
// not its.
func (s *Feed) Add(ctx context.Context, sub *exec.Subscription, send func(payload []byte)) (*Subscriber, error) {
	after, err := s.store.EventsHighWater(ctx, sub.Scope.TenantID)
	if err != nil {
		return nil, err
	}
	r := &Subscriber{Subscription: sub, send: send, after: after}
	s.add(r)
	return r, nil
}

// Remove stops a subscription.
func (s *Feed) Remove(sub *Subscriber) { s.remove(sub) }

// Notify receives a dds_events payload. It never blocks the listener: when
// the dispatch queue is full the events are dropped for subscribers (and
// logged); subscriptions are a live feed, webhooks are the durable one.
func (s *Feed) Notify(payload string) {
	tenant, _, ok := outbox.ParseNotification(payload)
	if !ok {
		return
	}
	s.mu.RLock()
	n := len(s.subs[tenant])
	s.mu.RUnlock()
	if n == 0 {
		return
	}
	select {
	case s.events <- payload:
	default:
		s.log.Warn("graphql subscriptions: dispatch queue full, events dropped", "tenant", tenant)
	}
}

// Run dispatches events until ctx ends.
func (s *Feed) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-s.events:
			s.dispatch(ctx, p)
		}
	}
}

func (s *Feed) dispatch(ctx context.Context, payload string) {
	tenant, eventIDs, _ := outbox.ParseNotification(payload)
	s.mu.RLock()
	var targets []*Subscriber
	for sub := range s.subs[tenant] {
		targets = append(targets, sub)
	}
	s.mu.RUnlock()
	if len(targets) == 0 {
		return
	}
	evs, err := s.store.Events(ctx, tenant, eventIDs)
	if err != nil {
		s.log.Warn("graphql subscriptions: read events", "tenant", tenant, "count", len(eventIDs), "err", err)
		return
	}
	for i := range evs {
		s.deliver(ctx, &evs[i], targets)
	}
}

// deliver sends ev to each of targets that follows it and whose where it
// matches.
func (s *Feed) deliver(ctx context.Context, ev *outbox.Event, targets []*Subscriber) {
	eventID := ev.ID
	for _, sub := range targets {
		if sub.Name != ev.Name || sub.EventType != ev.Type || ev.Seq <= sub.after {
			continue
		}
		ok, err := s.matches(ctx, sub, ev.Record)
		if err != nil {
			s.log.Warn("graphql subscriptions: filter", "err", err)
			continue
		}
		if !ok {
			continue
		}
		rec := ev.Record
		if sub.Sel != nil {
			if rec, err = s.read(ctx, sub, ev.Record); err != nil {
				s.log.Warn("graphql subscriptions: read record", "event", eventID, "err", err)
				continue
			}
			if rec == nil {
				continue // deleted since the event: nothing left to show
			}
		}
		var b bytes.Buffer
		b.WriteString(`{"data":{`)
		jsonshape.WriteKey(&b, sub.Key)
		if err := jsonshape.WriteObj(&b, sub.Shape, rec); err != nil {
			s.log.Warn("graphql subscriptions: reshape event", "event", eventID, "err", err)
			continue
		}
		b.WriteString("}}")
		sub.send(b.Bytes())
	}
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

// matches evaluates the subscriber's where on the event's record.
func (s *Feed) matches(ctx context.Context, sub *Subscriber, record []byte) (bool, error) {
	if sub.Match == nil {
		return true, nil
	}
	return s.store.Matches(ctx, sub.Match, record)
}

func (s *Feed) add(sub *Subscriber) {
	s.mu.Lock()
	m := s.subs[sub.Scope.TenantID]
	if m == nil {
		m = map[*Subscriber]struct{}{}
		s.subs[sub.Scope.TenantID] = m
	}
	m[sub] = struct{}{}
	s.mu.Unlock()
}

func (s *Feed) remove(sub *Subscriber) {
	s.mu.Lock()
	if m := s.subs[sub.Scope.TenantID]; m != nil {
		delete(m, sub)
		if len(m) == 0 {
			delete(s.subs, sub.Scope.TenantID)
		}
	}
	s.mu.Unlock()
}

// Subscriber is a running subscription.
type Subscriber struct {
	*exec.Subscription
	send func(payload []byte)
	// after is the outbox position when the subscription was set up: an
	// event written before it (announced late, since announcements follow
	// commits in batches) is not the subscription's.
	after int64
}

// Active is the number of running subscriptions (for the metrics).
func (s *Feed) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.subs {
		n += len(m)
	}
	return n
}

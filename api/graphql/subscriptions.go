package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Subscriptions serves graphql-transport-ws at /api/v1/dynamic-gql/ws.
// One LISTEN connection per process (the pgnotify hub) feeds every socket:
// each NOTIFY dds_events of a tenant with subscribers names that tenant's
// events committed since the writer's previous flush ("<tenant>:<id>,..."),
// which are read in one statement from dds.events, in outbox order, and
// fanned out in memory; each subscriber's
// where is compiled by the query compiler and evaluated against the event's
// record in Postgres (jsonb_populate_record), so filters mean exactly what
// they mean in queries.
type Subscriptions struct {
	authn  api.Authenticator
	store  *records.Store
	engine *Engine
	log    *slog.Logger
	up     websocket.Upgrader
	// InitTimeout bounds the wait for connection_init.
	InitTimeout time.Duration

	events chan string
	mu     sync.RWMutex
	subs   map[string]map[*subscriber]struct{} // tenant -> subscribers
}

// Subscription protocol name.
const subprotocol = "graphql-transport-ws"

// NewSubscriptions returns the socket server. Call Notify for every
// dds_events payload (wire it to the pgnotify hub) and Run to dispatch.
func NewSubscriptions(authn api.Authenticator, store *records.Store, limits Limits, log *slog.Logger) *Subscriptions {
	return &Subscriptions{
		authn: authn, store: store, engine: NewEngine(store, limits, log), log: log,
		up:          websocket.Upgrader{Subprotocols: []string{subprotocol}, CheckOrigin: func(*http.Request) bool { return true }},
		InitTimeout: 10 * time.Second,
		events:      make(chan string, 4096),
		subs:        map[string]map[*subscriber]struct{}{},
	}
}

// Notify receives a dds_events payload. It never blocks the listener: when
// the dispatch queue is full the events are dropped for subscribers (and
// logged); subscriptions are a live feed, webhooks are the durable one.
func (s *Subscriptions) Notify(payload string) {
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
func (s *Subscriptions) Run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case p := <-s.events:
			s.dispatch(ctx, p)
		}
	}
}

func (s *Subscriptions) dispatch(ctx context.Context, payload string) {
	tenant, eventIDs, _ := outbox.ParseNotification(payload)
	s.mu.RLock()
	var targets []*subscriber
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
func (s *Subscriptions) deliver(ctx context.Context, ev *outbox.Event, targets []*subscriber) {
	eventID := ev.ID
	for _, sub := range targets {
		if sub.name != ev.Name || sub.eventType != ev.Type || ev.Seq <= sub.after {
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
		if sub.sel != nil {
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
		WriteKey(&b, sub.key)
		if err := WriteObj(&b, sub.shape, rec); err != nil {
			s.log.Warn("graphql subscriptions: reshape event", "event", eventID, "err", err)
			continue
		}
		b.WriteString("}}")
		sub.conn.send(message{ID: sub.id, Type: "next", Payload: b.Bytes()})
	}
}

// read reads the event's record with the subscriber's selection (its
// relationships and file metadata) in one statement through the records
// store; nil when the record no longer exists.
func (s *Subscriptions) read(ctx context.Context, sub *subscriber, record []byte) ([]byte, error) {
	ms, err := ObjectMembers(record, nil)
	if err != nil {
		return nil, err
	}
	var id string
	if err := json.Unmarshal(Lookup(ms, schema.ColID), &id); err != nil {
		return nil, err
	}
	l := query.List{Entity: sub.entity.Name, Where: query.Cond{Field: schema.ColID, Op: query.Eq, Value: id}, Limit: 1, Select: *sub.sel}
	st, err := sub.sc.Compiler.List(l)
	if err != nil {
		return nil, err
	}
	raw, err := s.store.Run(ctx, sub.sc, l.Entity, st)
	if err != nil {
		return nil, err
	}
	if ms, err = ObjectMembers(raw, nil); err != nil {
		return nil, err
	}
	items, err := ArrayItems(Lookup(ms, "items"), nil)
	if err != nil || len(items) == 0 {
		return nil, err
	}
	return items[0], nil
}

// matches evaluates the subscriber's where on the event's record.
func (s *Subscriptions) matches(ctx context.Context, sub *subscriber, record []byte) (bool, error) {
	if sub.match == nil {
		return true, nil
	}
	return s.store.Matches(ctx, sub.match, record)
}

func (s *Subscriptions) add(sub *subscriber) {
	s.mu.Lock()
	m := s.subs[sub.sc.TenantID]
	if m == nil {
		m = map[*subscriber]struct{}{}
		s.subs[sub.sc.TenantID] = m
	}
	m[sub] = struct{}{}
	s.mu.Unlock()
}

func (s *Subscriptions) remove(sub *subscriber) {
	s.mu.Lock()
	if m := s.subs[sub.sc.TenantID]; m != nil {
		delete(m, sub)
		if len(m) == 0 {
			delete(s.subs, sub.sc.TenantID)
		}
	}
	s.mu.Unlock()
}

type subscriber struct {
	id        string
	key       string
	conn      *wsConn
	sc        *records.Scope
	name      string         // the entity or relationship whose events it follows
	entity    *schema.Entity // nil for relationship events
	eventType string
	shape     *Shape
	// sel is the record selection read per event when it needs more than
	// the event's record (relationship fields, file metadata); nil otherwise.
	sel *query.Selection
	// match evaluates the where on an event's record; nil when there is
	// no where.
	match *records.Match
	// after is the outbox position when the subscription was set up: an
	// event written before it (announced late, since announcements follow
	// commits in batches) is not the subscription's.
	after int64
}

type message struct {
	ID      string          `json:"id,omitempty"`
	Type    string          `json:"type"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

type wsConn struct {
	ws     *websocket.Conn
	out    chan message
	closed chan struct{}
	once   sync.Once
	// close code/reason requested by the reader or a slow consumer.
	mu   sync.Mutex
	subs map[string]*subscriber
	log  *slog.Logger // carries the upgrade request's id
}

func (c *wsConn) send(m message) {
	select {
	case c.out <- m:
	case <-c.closed:
	default: // a consumer too slow for its feed is disconnected
		c.close(4500, "subscriber too slow")
	}
}

func (c *wsConn) close(code int, reason string) {
	c.once.Do(func() {
		if code != websocket.CloseNormalClosure {
			c.log.Warn("websocket closed on failure", "code", code, "reason", reason)
		}
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(time.Second))
		close(c.closed)
		_ = c.ws.Close()
	})
}

// ServeHTTP upgrades to graphql-transport-ws.
func (s *Subscriptions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ws, err := s.up.Upgrade(w, r, nil)
	if err != nil {
		api.LoggerFrom(r.Context()).Warn("websocket upgrade failed", "err", err)
		return // the upgrader answered
	}
	c := &wsConn{ws: ws, out: make(chan message, 256), closed: make(chan struct{}), subs: map[string]*subscriber{}, log: api.LoggerFrom(r.Context())}
	if ws.Subprotocol() != subprotocol {
		c.close(4406, "Subprotocol not acceptable")
		return
	}
	ws.SetReadLimit(1 << 20)
	go c.writeLoop()
	s.readLoop(r.Context(), c)
	c.mu.Lock()
	for _, sub := range c.subs {
		s.remove(sub)
	}
	c.mu.Unlock()
}

func (c *wsConn) writeLoop() {
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-c.closed:
			return
		case m := <-c.out:
			b, _ := json.Marshal(m)
			_ = c.ws.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if err := c.ws.WriteMessage(websocket.TextMessage, b); err != nil {
				c.close(1011, "write failed")
				return
			}
		case <-ping.C:
			_ = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second))
		}
	}
}

func (s *Subscriptions) readLoop(ctx context.Context, c *wsConn) {
	var p *auth.Principal
	initTimer := time.AfterFunc(s.InitTimeout, func() { c.close(4408, "Connection initialisation timeout") })
	defer initTimer.Stop()
	for {
		_, data, err := c.ws.ReadMessage()
		if err != nil {
			if !websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseGoingAway) {
				c.log.Warn("websocket read failed", "err", err)
			}
			c.close(1000, "")
			return
		}
		var m struct {
			ID      string          `json:"id"`
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal(data, &m); err != nil || m.Type == "" {
			c.close(4400, "Invalid message received")
			return
		}
		switch m.Type {
		case "connection_init":
			if p != nil {
				c.close(4429, "Too many initialisation requests")
				return
			}
			initTimer.Stop()
			// The payload is optional; when sent it must be an object.
			var init map[string]any
			if len(m.Payload) > 0 && string(m.Payload) != "null" {
				if err := json.Unmarshal(m.Payload, &init); err != nil {
					c.close(4400, "Invalid message received")
					return
				}
			}
			cred := credential(init)
			pr, err := s.authn.Authenticate(ctx, cred)
			if err != nil {
				c.close(4403, "Forbidden")
				return
			}
			p = pr
			c.send(message{Type: "connection_ack"})
		case "ping":
			c.send(message{Type: "pong", Payload: m.Payload})
		case "pong":
		case "subscribe":
			if p == nil {
				c.close(4401, "Unauthorized")
				return
			}
			c.mu.Lock()
			_, dup := c.subs[m.ID]
			c.mu.Unlock()
			if dup || m.ID == "" {
				c.close(4409, "Subscriber for "+m.ID+" already exists")
				return
			}
			s.subscribe(ctx, c, p, m.ID, m.Payload)
		case "complete":
			c.mu.Lock()
			sub := c.subs[m.ID]
			delete(c.subs, m.ID)
			c.mu.Unlock()
			if sub != nil {
				s.remove(sub)
			}
		default:
			c.close(4400, "Invalid message received")
			return
		}
	}
}

// credential takes "Bearer <jwt>" from {"authorization": ...},
// {"Authorization": ...} or {"token": ...} of the connection_init payload.
func credential(init map[string]any) string {
	for _, k := range []string{"authorization", "Authorization"} {
		if v, ok := init[k].(string); ok {
			return v
		}
	}
	if v, ok := init["token"].(string); ok {
		if strings.HasPrefix(v, "Bearer ") {
			return v
		}
		return "Bearer " + v
	}
	return ""
}

func (s *Subscriptions) errorMsg(c *wsConn, id string, res *Result) {
	b, _ := json.Marshal(res.Errors)
	c.send(message{ID: id, Type: "error", Payload: b})
}

func (s *Subscriptions) subscribe(ctx context.Context, c *wsConn, p *auth.Principal, id string, payload json.RawMessage) {
	var req Request
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		s.errorMsg(c, id, NewRequestError(apperr.BadRequest, "the subscribe payload must be a GraphQL request"))
		return
	}
	sc, m, err := scopeModel(ctx, s.store, p)
	if err != nil {
		s.errorMsg(c, id, ErrorResult(ctx, err))
		return
	}
	pr, res := s.engine.Prepare(ctx, m, req)
	if res != nil {
		s.errorMsg(c, id, res)
		return
	}
	if pr.Op.Kind != ast.OperationTypeSubscription {
		// Queries and mutations over the socket: one result, then complete.
		res := s.engine.Execute(ctx, sc, p, pr)
		b, _ := res.MarshalJSON()
		c.send(message{ID: id, Type: "next", Payload: b})
		c.send(message{ID: id, Type: "complete"})
		return
	}
	if m.SubscriptionType() == "" {
		s.errorMsg(c, id, NewRequestError(apperr.Forbidden, "this credential may not read anything"))
		return
	}
	x := &execCtx{e: s.engine, ctx: ctx, sc: sc, p: p, m: m, vars: pr.Vars}
	fields := x.collect(pr.Op.SelectionSet, m.SubscriptionType())
	if len(fields) != 1 {
		s.errorMsg(c, id, NewRequestError(apperr.BadRequest, "a subscription selects exactly one root field"))
		return
	}
	cf := fields[0]
	rf, ok := m.Root(cf.field.Name)
	if !ok {
		s.errorMsg(c, id, NewRequestError(apperr.BadRequest, "unknown subscription field "+cf.field.Name))
		return
	}
	sub, err := x.subscriber(rf, cf)
	if err != nil {
		s.errorMsg(c, id, ErrorResult(ctx, err))
		return
	}
	sub.id, sub.conn = id, c
	if sub.after, err = s.store.EventsHighWater(ctx, p.TenantID); err != nil {
		s.errorMsg(c, id, ErrorResult(ctx, err))
		return
	}
	c.mu.Lock()
	c.subs[id] = sub
	c.mu.Unlock()
	s.add(sub)
}

// subscriptionEvents maps a subscription root to the event type it follows.
var subscriptionEvents = map[RootKind]string{KindCreated: outbox.EntityCreated, KindUpdated: outbox.EntityUpdated, KindDeleted: outbox.EntityDeleted,
	KindRelCreated: outbox.RelationshipCreated, KindRelUpdated: outbox.RelationshipUpdated, KindRelDeleted: outbox.RelationshipDeleted}

func (x *execCtx) subscriber(rf RootField, cf *cfield) (*subscriber, error) {
	if rf.Rel != nil { // an edge event: the edge as written, no filter
		if err := x.p.Require("relationship", rf.Rel.Name, "read"); err != nil {
			return nil, err
		}
		sh := x.edgeShape(rf.Rel, EdgeType(rf.Rel), cf.sel)
		return &subscriber{key: cf.key, sc: x.sc, name: rf.Rel.Name, eventType: subscriptionEvents[rf.Kind], shape: sh}, nil
	}
	e := rf.Entity
	if err := x.p.Require("entity", e.Name, "read"); err != nil {
		return nil, err
	}
	where, err := x.where(e, cf.field.ArgumentMap(x.vars)["where"])
	if err != nil {
		return nil, err
	}
	var sel query.Selection
	sh, err := x.record(e, cf.sel, &sel)
	if err != nil {
		return nil, err
	}
	sub := &subscriber{key: cf.key, sc: x.sc, name: e.Name, entity: e, eventType: subscriptionEvents[rf.Kind], shape: sh}
	if readsMore(&sel) {
		if rf.Kind == KindDeleted {
			return nil, apperr.New(apperr.BadRequest, "a deleted record has no relationships or files left to read: select its own fields in %s", cf.field.Name)
		}
		sub.sel = &sel
	}
	if where != nil {
		// Compile once now: a bad filter fails the subscribe, and events
		// only bind the record ($1) to the prepared text.
		if sub.match, err = records.CompileMatch(x.sc, e.Name, where); err != nil {
			return nil, err
		}
	}
	return sub, nil
}

// Active is the number of running subscriptions (for the metrics).
func (s *Subscriptions) Active() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, m := range s.subs {
		n += len(m)
	}
	return n
}

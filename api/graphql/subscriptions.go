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
	"unicode/utf8"

	"github.com/gorilla/websocket"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/graphql/live"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/records"
)

// Subscriptions serves graphql-transport-ws at /api/v1/dynamic-gql/ws:
// the socket, its read and write loops and connection_init's
// authentication. Queries and mutations sent over it run on the engine the
// HTTP handler shares; subscriptions are compiled by the engine and fed by
// the live feed.
type Subscriptions struct {
	authn api.Authenticator
	// revocations ends sockets whose key is revoked (nil: none do).
	revocations Revocations
	store       *records.Store
	engine      *gql.Engine
	feed        *live.Feed
	up          websocket.Upgrader
	// InitTimeout bounds the wait for connection_init.
	InitTimeout time.Duration
	// MaxPerSocket caps the subscriptions of one socket (0: no cap).
	MaxPerSocket int
}

// Revocations tells a socket when the key it was opened with is revoked
// (auth.Authenticator.Watch). An authenticator that has it ends the
// sockets of revoked keys.
type Revocations interface {
	Watch(keyID string, revoked func()) (stop func())
}

// Subscription protocol name.
const subprotocol = "graphql-transport-ws"

// NewSocket returns the socket server over engine and feed (wire the
// feed to the pgnotify hub and run it, or call Notify and Run).
func NewSocket(authn api.Authenticator, store *records.Store, engine *gql.Engine, feed *live.Feed) *Subscriptions {
	rv, _ := authn.(Revocations)
	return &Subscriptions{
		authn: authn, revocations: rv, store: store, engine: engine, feed: feed,
		up:          websocket.Upgrader{Subprotocols: []string{subprotocol}, CheckOrigin: func(*http.Request) bool { return true }},
		InitTimeout: 10 * time.Second, MaxPerSocket: 100,
	}
}

type message struct {
	ID      string
	Type    string
	Payload json.RawMessage
	// head, when set, is the frame up to its payload (a subscription's
	// `{"id":…,"type":"next","payload":`, encoded once per subscription).
	head []byte
	// origin is when a live frame's event was inserted (zero for other
	// messages): the write loop reports live.StageWritten from it.
	origin live.Origin
}

// writeTo writes m as one text frame of ws, without re-encoding its
// payload (the feed's payloads are compact JSON, shared by every socket
// that receives the same event in the same shape).
func (m *message) writeTo(ws *websocket.Conn) error {
	w, err := ws.NextWriter(websocket.TextMessage)
	if err != nil {
		return err
	}
	head := m.head
	if head == nil {
		if head = frameHead(m.ID, m.Type); len(m.Payload) > 0 {
			head = withPayload(head)
		}
	}
	_, _ = w.Write(head)
	if len(m.Payload) > 0 {
		_, _ = w.Write(m.Payload)
	}
	_, _ = w.Write([]byte{'}'})
	return w.Close()
}

// frameHead is a frame's JSON up to its payload: `{"id":…,"type":…`
// followed by `,"payload":` (the frame then ends with its payload and `}`,
// or with `}` alone when it has none).
func frameHead(id, typ string) []byte {
	b := []byte{'{'}
	if id != "" {
		q, _ := json.Marshal(id)
		b = append(append(append(b, `"id":`...), q...), ',')
	}
	q, _ := json.Marshal(typ)
	b = append(append(b, `"type":`...), q...)
	return b
}

// withPayload is head followed by the payload member's key.
func withPayload(head []byte) []byte { return append(head, `,"payload":`...) }

type wsConn struct {
	ws     *websocket.Conn
	conn   *batchConn // ws's connection: the write loop coalesces frames in it
	out    chan message
	closed chan struct{}
	once   sync.Once
	// close code/reason requested by the reader or a slow consumer.
	mu   sync.Mutex
	subs map[string]*live.Subscriber
	log  *slog.Logger // carries the upgrade request's id
	// feed, when set, is told when each live frame was written
	// (live.StageWritten); origins is the write loop's list of them.
	feed    *live.Feed
	origins []live.Origin
}

func (c *wsConn) send(m message) {
	select {
	case c.out <- m:
	case <-c.closed:
	default: // a consumer too slow for its feed is disconnected
		c.close(4500, "subscriber too slow")
	}
}

// subSink is one subscription's side of the socket: the feed's frames
// become "next" messages of id.
type subSink struct {
	c  *wsConn
	id string
	// head is the subscription's "next" frame up to its payload.
	head []byte
}

// Send queues a live frame; a consumer whose buffer is full is too slow
// for its feed and is closed with 4500 (bounded memory per socket).
func (k subSink) Send(payload []byte, origin live.Origin) bool {
	k.c.send(message{ID: k.id, Type: "next", Payload: payload, head: k.head, origin: origin})
	select {
	case <-k.c.closed:
		return false
	default:
		return true
	}
}

// SendWait queues a replayed frame, waiting for room: a replay goes at
// the consumer's pace.
func (k subSink) SendWait(ctx context.Context, payload []byte) error {
	select {
	case k.c.out <- message{ID: k.id, Type: "next", Payload: payload, head: k.head}:
		return nil
	case <-k.c.closed:
		return context.Canceled
	case <-ctx.Done():
		return ctx.Err()
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
	hj := &hijacker{ResponseWriter: w}
	ws, err := s.up.Upgrade(hj, r, nil)
	if err != nil {
		obs.LoggerFrom(r.Context()).Warn("websocket upgrade failed", "err", err)
		return // the upgrader answered
	}
	c := &wsConn{ws: ws, conn: hj.conn, out: make(chan message, 256), closed: make(chan struct{}), subs: map[string]*live.Subscriber{}, log: obs.LoggerFrom(r.Context()), feed: s.feed}
	if ws.Subprotocol() != subprotocol {
		c.close(4406, "Subprotocol not acceptable")
		return
	}
	ws.SetReadLimit(1 << 20)
	go c.writeLoop()
	s.readLoop(r.Context(), c)
	c.mu.Lock()
	for _, sub := range c.subs {
		s.feed.Remove(sub)
	}
	c.mu.Unlock()
}

// batchBytes bounds one write of coalesced frames.
const batchBytes = 64 << 10

// writeLoop sends the socket's frames in order. The frames queued when
// it wakes are written with one write (batchConn): it never waits for
// more, so a lone frame goes at once and a burst costs one syscall per
// batchBytes, not one per frame.
func (c *wsConn) writeLoop() {
	ping := time.NewTicker(30 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-c.closed:
			return
		case m := <-c.out:
			if err := c.writeBatch(m); err != nil {
				c.close(1011, "write failed")
				return
			}
		case <-ping.C:
			_ = c.ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(5*time.Second))
		}
	}
}

// writeBatch writes m and whatever else is queued, up to batchBytes, then
// flushes them in one write.
func (c *wsConn) writeBatch(m message) error {
	deadline := time.Now().Add(10 * time.Second)
	_ = c.ws.SetWriteDeadline(deadline)
	c.conn.hold()
	c.origins = c.origins[:0]
	err := c.write(m)
more:
	for err == nil && c.conn.buffered() < batchBytes {
		select {
		case m = <-c.out:
			err = c.write(m)
		default:
			break more
		}
	}
	if ferr := c.conn.flush(deadline); err == nil {
		err = ferr
	}
	if err == nil && c.feed != nil {
		for _, o := range c.origins {
			c.feed.ObserveStage(live.StageWritten, o)
		}
	}
	return err
}

// write writes m into the batch, keeping its event's origin.
func (c *wsConn) write(m message) error {
	if !m.origin.Inserted.IsZero() {
		c.origins = append(c.origins, m.origin)
	}
	return m.writeTo(c.ws)
}

// endWithCredential closes c with 4403 when the credential it was opened
// with ends: its key is revoked (on any server), or its access token
// expires. The socket's events would otherwise outlive the credential. It
// returns the function that stops watching.
func (s *Subscriptions) endWithCredential(c *wsConn, p *auth.Principal) (stop func()) {
	stops := []func(){}
	if s.revocations != nil && p.KeyID != "" {
		stops = append(stops, s.revocations.Watch(p.KeyID, func() { c.close(4403, "Forbidden: the API key was revoked") }))
	}
	if !p.Expires.IsZero() {
		t := time.AfterFunc(time.Until(p.Expires), func() { c.close(4403, "Forbidden: the access token expired") })
		stops = append(stops, func() { t.Stop() })
	}
	return func() {
		for _, f := range stops {
			f()
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
		// A message that is not UTF-8 is refused, not decoded with U+FFFD
		// in place of its bad bytes (api/utf8.go).
		if !utf8.Valid(data) {
			c.close(4400, "Invalid message received: not UTF-8")
			return
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
			defer s.endWithCredential(c, p)()
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
				s.feed.Remove(sub)
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

func (s *Subscriptions) errorMsg(c *wsConn, id string, res *protocol.Result) {
	b, _ := json.Marshal(res.Errors)
	c.send(message{ID: id, Type: "error", Payload: b})
}

func (s *Subscriptions) subscribe(ctx context.Context, c *wsConn, p *auth.Principal, id string, payload json.RawMessage) {
	var req protocol.Request
	d := json.NewDecoder(bytes.NewReader(payload))
	d.UseNumber()
	if err := d.Decode(&req); err != nil {
		s.errorMsg(c, id, protocol.NewRequestError(apperr.BadRequest, "the subscribe payload must be a GraphQL request"))
		return
	}
	sc, m, err := scopeModel(ctx, s.store, p)
	if err != nil {
		s.errorMsg(c, id, protocol.ErrorResult(ctx, err))
		return
	}
	pr, res := s.engine.Prepare(ctx, m, req)
	if res != nil {
		s.errorMsg(c, id, res)
		return
	}
	if pr.Op.Kind != ast.OperationTypeSubscription {
		// Queries and mutations over the socket: one result, then complete.
		res := s.engine.Execute(ctx, sc, pr)
		b, _ := res.MarshalJSON()
		c.send(message{ID: id, Type: "next", Payload: b})
		c.send(message{ID: id, Type: "complete"})
		return
	}
	plan, res := s.engine.Subscribe(ctx, sc, pr)
	if res != nil {
		s.errorMsg(c, id, res)
		return
	}
	c.mu.Lock()
	n := len(c.subs)
	c.mu.Unlock()
	if s.MaxPerSocket > 0 && n >= s.MaxPerSocket {
		s.errorMsg(c, id, protocol.ErrorResult(ctx, apperr.New(apperr.RateLimited,
			"this socket already runs %d subscriptions, the most allowed (DDS_SUBSCRIPTIONS_PER_SOCKET): open another socket or complete one", s.MaxPerSocket)))
		return
	}
	sub, err := s.feed.Add(ctx, plan, subSink{c: c, id: id, head: withPayload(frameHead(id, "next"))})
	if err != nil {
		s.errorMsg(c, id, protocol.ErrorResult(ctx, err))
		return
	}
	c.mu.Lock()
	c.subs[id] = sub
	c.mu.Unlock()
}

// Package events is the HTTP change feed: GET /api/v1/events, the
// outbox read as pages of JSON or as a stream of Server-Sent Events whose
// id is the event's cursor (so a browser's EventSource resumes by itself
// with Last-Event-ID). Reads stop at the outbox's proven safe horizon
// (outbox/horizon.go), so a consumer that stores the last cursor it
// handled and resumes after it, on any replica, never misses an event.
// Each event is shown only to a credential that may read its entity
// (entity:<name>:read) or relationship (relationship:<name>:read).
package events

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/records"
)

// Handler serves the change feed.
type Handler struct {
	store *records.Store
	// Poll is how often an idle stream looks for new events.
	Poll time.Duration
	// Heartbeat is how often an idle stream sends a comment, so proxies
	// keep it open.
	Heartbeat time.Duration
	// Retention is how long relayed events are kept (DDS_EVENT_RETENTION):
	// a since older than it is CURSOR_EXPIRED (0: not checked).
	Retention time.Duration

	mu      sync.Mutex
	horizon outbox.Horizon
}

// New returns the change feed over store.
func New(store *records.Store) *Handler {
	return &Handler{store: store, Poll: 100 * time.Millisecond, Heartbeat: 15 * time.Second}
}

// Routes registers GET /api/v1/events.
func (h *Handler) Routes(r *api.Router) { r.HandleFunc("GET /api/v1/events", h.serve) }

// Event is one change as the feed shows it.
type Event struct {
	ID         string          `json:"id"`
	Type       string          `json:"type"`
	EntityName string          `json:"entityName"`
	EntityID   string          `json:"entityId"`
	Record     json.RawMessage `json:"record"`
	Timestamp  time.Time       `json:"timestamp"`
}

// Page is a JSON page: the events after the cursor, and the cursor to
// ask with next (the last event read, shown or not; the request's cursor
// when none was).
type Page struct {
	Events     []Event `json:"events"`
	NextCursor *string `json:"nextCursor"`
}

type request struct {
	after  string
	since  time.Time
	filter outbox.FeedFilter
	limit  int
}

const maxLimit = 1000

func parse(r *http.Request) (request, error) {
	q := r.URL.Query()
	req := request{after: q.Get("after"), limit: 100}
	if v := q.Get("since"); v != "" {
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return req, apperr.Field("since", "must be an RFC 3339 time (2026-11-26T12:00:00Z)")
		}
		if req.after != "" {
			return req, apperr.Field("since", "give since or after, not both")
		}
		req.since = t
	}
	// An EventSource reconnects to the URL it was opened with (its after
	// or since included) and sends the last id it received as
	// Last-Event-ID: the header is where the stream got to, so it wins over
	// the URL's starting point, or the reconnection would repeat events.
	if id := r.Header.Get("Last-Event-ID"); id != "" {
		req.after, req.since = id, time.Time{}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return req, apperr.Field("limit", "must be an integer from 1 to %d", maxLimit)
		}
		req.limit = n
	}
	req.filter.Names = list(q.Get("entities"))
	for _, t := range list(q.Get("types")) {
		if !outbox.ValidType(t) {
			return req, apperr.Field("types", "%q is not an event type (%s)", t, strings.Join(outbox.Types, ", "))
		}
		req.filter.Types = append(req.filter.Types, t)
	}
	return req, nil
}

func list(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// visible reports whether sc's principal may read ev: its scopes, and for
// a principal with roles the entity's read rule on the event's record (a
// delete is judged by the record as it was), or for an edge the rules of
// its two ends (records.AdmitsEdge), as the live feed does. An
// event a rule cannot judge (its entity is gone from the active schema)
// is not shown to a ruled principal.
func (h *Handler) visible(ctx context.Context, p *auth.Principal, sc *records.Scope, ev *outbox.Event) bool {
	if outbox.IsRelationship(ev.Type) {
		if !p.Scopes.Allows("relationship", ev.Name, "read") {
			return false
		}
		if sc == nil {
			return true
		}
		ok, err := h.store.AdmitsEdge(ctx, sc, ev) // its ruled ends must be readable
		return err == nil && ok
	}
	if !p.Scopes.Allows("entity", ev.Name, "read") {
		return false
	}
	if sc == nil {
		return true // no roles: no rules
	}
	if fields, err := ev.Fields(); err == nil {
		if ok, local := sc.AdmitsLocally(ev.Name, fields); local {
			return ok // in Go: no round trip per event
		}
	}
	ok, err := h.store.Admits(ctx, sc, ev.Name, ev.Record)
	return err == nil && ok
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	req, err := parse(r)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	// The scope the read rules need (principals with roles only: a key
	// without roles reads the feed before the tenant has a schema).
	var sc *records.Scope
	if len(p.Roles) > 0 {
		if sc, err = h.store.Scope(r.Context(), p); err != nil {
			api.WriteError(w, r, err)
			return
		}
	}
	for _, n := range req.filter.Names {
		if !p.Scopes.Allows("entity", n, "read") && !p.Scopes.Allows("relationship", n, "read") {
			api.WriteError(w, r, apperr.New(apperr.Forbidden, "insufficient permissions: requires scope entity:%s:read", n))
			return
		}
	}
	stream := strings.Contains(r.Header.Get("Accept"), "text/event-stream")
	var pos int64
	switch {
	case req.after != "":
		pos, err = h.store.EventCursor(r.Context(), p.TenantID, req.after, "after")
	case !req.since.IsZero():
		if h.Retention > 0 && time.Since(req.since) > h.Retention {
			err = apperr.New(apperr.CursorExpired, "since: %s is older than the events retention (%s): events from then may have been pruned; start from a fresh read", req.since.Format(time.RFC3339), h.Retention)
			break
		}
		pos, err = h.store.EventsSince(r.Context(), p.TenantID, req.since)
	case stream:
		// A new stream follows what happens from now on.
		pos, err = h.store.EventsHighWater(r.Context(), p.TenantID)
	}
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if stream {
		h.stream(w, r, p, sc, req, pos)
		return
	}
	safe, err := h.safe(r.Context(), true)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	evs, err := h.store.EventFeed(r.Context(), p.TenantID, pos, safe, req.filter, req.limit)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	page := Page{Events: []Event{}}
	if req.after != "" {
		page.NextCursor = &req.after
	}
	for i := range evs {
		ev := &evs[i]
		if h.visible(r.Context(), p, sc, ev) {
			page.Events = append(page.Events, show(ev))
		}
		page.NextCursor = &ev.ID
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(page)
}

func show(ev *outbox.Event) Event {
	return Event{ID: ev.ID, Type: ev.Type, EntityName: ev.Name, EntityID: ev.SubjectID, Record: ev.Record, Timestamp: ev.CreatedAt}
}

// writeEvent writes ev as JSON, as json.Marshal(show(ev)) would, without
// re-validating the record (Postgres wrote it as jsonb) or reflecting:
// the SSE feed writes tens of thousands a second to a consumer catching up.
// The id and subject are UUIDs, the type and name identifiers: none needs
// escaping beyond what strconv.Quote does for JSON-safe ASCII.
func writeEvent(b *bytes.Buffer, ev *outbox.Event) {
	b.WriteString(`{"id":"`)
	b.WriteString(ev.ID)
	b.WriteString(`","type":`)
	b.Write(strconv.AppendQuote(nil, ev.Type))
	b.WriteString(`,"entityName":`)
	b.Write(strconv.AppendQuote(nil, ev.Name))
	b.WriteString(`,"entityId":"`)
	b.WriteString(ev.SubjectID)
	b.WriteString(`","record":`)
	if len(ev.Record) == 0 {
		b.WriteString("null")
	} else {
		b.Write(ev.Record)
	}
	b.WriteString(`,"timestamp":"`)
	b.Write(ev.CreatedAt.AppendFormat(nil, time.RFC3339Nano))
	b.WriteString(`"}`)
}

// safe is the newest proven horizon; with fresh set it waits (briefly)
// for a sample taken now to be proven, so a page shows what committed
// before the request.
func (h *Handler) safe(ctx context.Context, fresh bool) (int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	start, err := h.store.EventsHorizon(ctx, &h.horizon)
	if err != nil || !fresh {
		return start, err
	}
	deadline := time.Now().Add(time.Second)
	for h.horizon.Pending() && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
		if _, err := h.store.EventsHorizon(ctx, &h.horizon); err != nil {
			return 0, err
		}
	}
	return h.horizon.Safe(), nil
}

// stream writes Server-Sent Events from pos until the client leaves.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, p *auth.Principal, sc *records.Scope, req request, pos int64) {
	ctx := r.Context()
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// A client's reconnect delay, and a first byte so it sees the stream open.
	fmt.Fprint(w, "retry: 1000\n\n")
	_ = rc.Flush()
	lastBeat := time.Now()
	var buf bytes.Buffer
	const page = 5000
	var safe int64
	for {
		// The horizon is sampled again only once the stream has reached
		// it: a consumer catching up reads page after page below a proven
		// horizon without a sample (and the handler's lock) per page.
		if pos >= safe {
			var err error
			if safe, err = h.safe(ctx, false); err != nil {
				return
			}
		}
		evs, err := h.store.EventFeed(ctx, p.TenantID, pos, safe, req.filter, page)
		if err != nil {
			return
		}
		for i := range evs {
			ev := &evs[i]
			pos = ev.Seq
			if !h.visible(ctx, p, sc, ev) {
				continue
			}
			// id: is the cursor; EventSource sends it back as Last-Event-ID.
			// The data is JSON, the id a UUID: neither holds a newline.
			buf.WriteString("id: " + ev.ID + "\ndata: ")
			writeEvent(&buf, ev)
			buf.WriteString("\n\n")
		}
		if len(evs) > 0 {
			if _, err := w.Write(buf.Bytes()); err != nil { // #nosec G705 -- text/event-stream of JSON, not HTML
				return
			}
			buf.Reset()
			if rc.Flush() != nil {
				return
			}
			lastBeat = time.Now()
		}
		if len(evs) < page {
			pos = max(pos, safe)
			if time.Since(lastBeat) >= h.Heartbeat {
				fmt.Fprint(w, ": keepalive\n\n")
				if rc.Flush() != nil {
					return
				}
				lastBeat = time.Now()
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(h.Poll):
			}
		}
	}
}

// Package graphql is the GraphQL API's two transports over the one engine
// (package graphql at the module's root): GraphQL over HTTP (decoding GET
// and POST requests, Accept negotiation, writing results and their HTTP
// status) and graphql-transport-ws (the socket, its read and write loops,
// connection_init's authentication), whose subscriptions the live feed
// serves.
package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/wundergraph/astjson"
	"github.com/wundergraph/go-arena"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/records"
)

// Media types of GraphQL over HTTP.
const (
	mediaGraphQLResponse = "application/graphql-response+json"
	mediaJSON            = "application/json"
)

// Handler serves GraphQL over HTTP for the tenant's active schema.
type Handler struct {
	store  *records.Store
	engine *gql.Engine
	subs   *Subscriptions
	log    *slog.Logger
	// readBufs pools what reading a POST body needs (readBuf).
	readBufs sync.Pool
}

// readBuf is the pooled state of reading one POST body: its bytes and the
// arena the JSON parser allocates the body's values on. Nothing decoded
// keeps a reference into either (decodeBody copies what it keeps).
type readBuf struct {
	body  bytes.Buffer
	arena arena.Arena
}

// Bounds of what a pooled readBuf keeps between requests: a larger body
// or arena is left to the collector.
const (
	maxPooledBody  = 64 << 10
	maxPooledArena = 256 << 10
)

func (h *Handler) readBuf() *readBuf {
	if rb, ok := h.readBufs.Get().(*readBuf); ok {
		return rb
	}
	return &readBuf{arena: arena.NewMonotonicArena(arena.WithMinBufferSize(4 << 10))}
}

func (h *Handler) putReadBuf(rb *readBuf) {
	if rb.body.Cap() > maxPooledBody || rb.arena.Cap() > maxPooledArena {
		return
	}
	rb.body.Reset()
	rb.arena.Reset()
	h.readBufs.Put(rb)
}

// Limits protect the server from expensive documents (the engine's).
type Limits = gql.Limits

// NewHandler returns the GraphQL handler over engine (the one the
// subscription socket shares); subs may be nil (no subscription socket).
func NewHandler(engine *gql.Engine, store *records.Store, subs *Subscriptions, log *slog.Logger) *Handler {
	return &Handler{store: store, engine: engine, subs: subs, log: log}
}

// Routes registers the GraphQL routes.
func (h *Handler) Routes(r *api.Router) {
	r.HandleRendering("POST /api/v1/dynamic-gql/{tenantId}", http.HandlerFunc(h.serve), h.writeErr)
	r.HandleRendering("GET /api/v1/dynamic-gql/{tenantId}", http.HandlerFunc(h.serve), h.writeErr)
	r.HandleFunc("GET /api/v1/dynamic-gql/{tenantId}/schema.graphql", h.schemaSDL)
	if h.subs != nil {
		r.Public("GET /api/v1/dynamic-gql/ws", h.subs)
	}
}

// scope checks that the path's tenant is the caller's and resolves the
// active schema's model. Another tenant's id is "not found", never data.
func (h *Handler) scope(r *http.Request) (*records.Scope, *model.Model, error) {
	p := api.Principal(r)
	if r.PathValue("tenantId") != p.TenantID {
		return nil, nil, apperr.New(apperr.NotFound, "no GraphQL API for tenant %q with these credentials", r.PathValue("tenantId"))
	}
	return scopeModel(r.Context(), h.store, p)
}

// scopeModel resolves the tenant's active schema and its GraphQL model as
// p may see it.
func scopeModel(ctx context.Context, store *records.Store, p *auth.Principal) (*records.Scope, *model.Model, error) {
	sc, err := store.Scope(ctx, p)
	if err != nil {
		return nil, nil, err
	}
	m, err := model.ModelFor(sc, p)
	if err != nil {
		return nil, nil, err
	}
	return sc, m, nil
}

func (h *Handler) schemaSDL(w http.ResponseWriter, r *http.Request) {
	_, m, err := h.scope(r)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/graphql; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = io.WriteString(w, m.SDL)
}

// accepts picks the response media type from the Accept header:
// application/graphql-response+json when listed, application/json when
// that, */* or no header is sent (what legacy clients expect); "" when
// neither is acceptable.
func accepts(header string) string {
	switch header { // the usual headers, without parsing
	case mediaGraphQLResponse:
		return mediaGraphQLResponse
	case mediaJSON, "*/*":
		return mediaJSON
	}
	return parseAccept(header)
}

// parseAccept is accepts for any header.
func parseAccept(header string) string {
	if strings.TrimSpace(header) == "" {
		return mediaJSON
	}
	json, any := false, false
	for _, part := range strings.Split(header, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case mediaGraphQLResponse:
			return mediaGraphQLResponse
		case mediaJSON:
			json = true
		case "*/*", "application/*":
			any = true
		}
	}
	if json || any {
		return mediaJSON
	}
	return ""
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	media := accepts(r.Header.Get("Accept"))
	if media == "" {
		h.write(w, mediaJSON, http.StatusNotAcceptable, protocol.NewRequestError(apperr.BadRequest, "Accept must allow application/graphql-response+json or application/json"))
		return
	}
	req, res, status := h.decode(r)
	if res != nil {
		h.write(w, media, status, res)
		return
	}
	sc, m, err := h.scope(r)
	if err != nil {
		h.write(w, media, api.Status(db.Classify(err).Code), protocol.ErrorResult(r.Context(), err))
		return
	}
	pr, res := h.engine.Prepare(r.Context(), m, req)
	if res != nil {
		status := http.StatusBadRequest
		if media == mediaJSON {
			status = http.StatusOK
		}
		h.write(w, media, status, res)
		return
	}
	if r.Method == http.MethodGet && pr.Op.Kind != ast.OperationTypeQuery {
		w.Header().Set("Allow", "POST")
		h.write(w, media, http.StatusMethodNotAllowed, protocol.NewRequestError(apperr.BadRequest, "only queries may be sent with GET; use POST for "+operation.OpName(pr.Op.Kind)+"s"))
		return
	}
	res = h.engine.Execute(r.Context(), sc, pr)
	status = http.StatusOK
	if res.RequestError && media == mediaGraphQLResponse {
		status = http.StatusBadRequest
	}
	h.write(w, media, status, res)
}

// decode reads the GraphQL request from a GET query string or a POST JSON
// body. A malformed request is a 400 whatever the Accept header.
func (h *Handler) decode(r *http.Request) (protocol.Request, *protocol.Result, int) {
	var raw struct {
		Query         json.RawMessage `json:"query"`
		OperationName json.RawMessage `json:"operationName"`
		Variables     json.RawMessage `json:"variables"`
		Extensions    json.RawMessage `json:"extensions"`
	}
	bad := func(msg string) (protocol.Request, *protocol.Result, int) {
		return protocol.Request{}, protocol.NewRequestError(apperr.BadRequest, msg), http.StatusBadRequest
	}
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		if !q.Has("query") {
			return bad("the query parameter is required")
		}
		for _, name := range []string{"query", "operationName", "variables", "extensions"} {
			if !utf8.ValidString(q.Get(name)) {
				return bad("the " + name + " parameter is not valid UTF-8")
			}
		}
		raw.Query, _ = json.Marshal(q.Get("query"))
		if q.Has("operationName") {
			raw.OperationName, _ = json.Marshal(q.Get("operationName"))
		}
		if v := q.Get("variables"); v != "" {
			raw.Variables = json.RawMessage(v)
		}
		if v := q.Get("extensions"); v != "" {
			raw.Extensions = json.RawMessage(v)
		}
	} else {
		ct, err := r.Header.Get("Content-Type"), error(nil)
		if ct != mediaJSON { // the usual header needs no parsing
			ct, _, err = mime.ParseMediaType(ct)
		}
		if err != nil || ct != mediaJSON {
			return protocol.Request{}, protocol.NewRequestError(apperr.BadRequest, "Content-Type must be application/json"), http.StatusUnsupportedMediaType
		}
		rb := h.readBuf()
		defer h.putReadBuf(rb)
		if n := r.ContentLength; n > 0 && n <= maxPooledBody {
			rb.body.Grow(int(n))
		}
		_, err = rb.body.ReadFrom(r.Body) // as io.ReadAll: the bytes read, and an error other than EOF
		body := rb.body.Bytes()
		if err == nil && utf8.Valid(body) { // else the general decoder names the bad byte
			if req, ok := decodeBody(rb.arena, body); ok {
				return req, nil, 0
			}
		}
		// Anything unusual takes the general decoder, which words the
		// errors (a read error comes after the bytes read).
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), errorReader{err}))
		if err := api.DecodeJSON(r, &raw); err != nil {
			return protocol.Request{}, protocol.ErrorResult(r.Context(), err), api.Status(db.Classify(err).Code)
		}
	}
	var req protocol.Request
	if q, ok := plainString(raw.Query); ok {
		req.Query = q
	} else if err := json.Unmarshal(raw.Query, &req.Query); err != nil || len(raw.Query) == 0 || string(raw.Query) == "null" {
		return bad("query must be a string")
	}
	if len(raw.OperationName) > 0 && string(raw.OperationName) != "null" {
		if err := json.Unmarshal(raw.OperationName, &req.OperationName); err != nil {
			return bad("operationName must be a string")
		}
	}
	for _, p := range []struct {
		raw  json.RawMessage
		dst  *map[string]any
		name string
	}{{raw.Variables, &req.Variables, "variables"}, {raw.Extensions, &req.Extensions, "extensions"}} {
		if len(p.raw) == 0 || string(p.raw) == "null" {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(p.raw))
		d.UseNumber()
		if err := d.Decode(p.dst); err != nil || *p.dst == nil {
			return bad(p.name + " must be a JSON object")
		}
		if _, err := d.Token(); err != io.EOF { // a GET parameter may carry more after the object
			return bad(p.name + " must be a single JSON object")
		}
	}
	if req.Variables != nil {
		req.VariablesJSON = raw.Variables
	}
	return req, nil, 0
}

// writeErr renders a failure before execution (authentication, rate
// limit) as a GraphQL response with the HTTP status of its code.
func (h *Handler) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	media := accepts(r.Header.Get("Accept"))
	if media == "" {
		media = mediaJSON
	}
	h.write(w, media, api.Status(db.Classify(err).Code), protocol.ErrorResult(r.Context(), err))
}

func (h *Handler) write(w http.ResponseWriter, media string, status int, res *protocol.Result) {
	for _, e := range res.Errors {
		// Postgres unreachable: the whole answer is 503 with Retry-After, as on REST and Connect.
		if e.Extensions["code"] == string(apperr.Unavailable) {
			status = http.StatusServiceUnavailable
			w.Header().Set("Retry-After", strconv.Itoa(api.RetryAfterSeconds))
			break
		}
	}
	body, err := res.MarshalJSON()
	if err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"errors":[{"message":"internal error","extensions":{"code":"INTERNAL_ERROR"}}]}`)
	}
	w.Header().Set("Content-Type", contentType(media))
	w.WriteHeader(status)
	// The body is a JSON-encoded GraphQL result served as application/json or
	// application/graphql-response+json (media is one of those two constants, see accepts), never
	// as HTML, so reflected strings inside it are JSON data a browser does not render.
	_, _ = w.Write(body) //nolint:gosec // G705: JSON body under an explicit JSON Content-Type, not HTML.
	res.Release()
}

// contentType is the Content-Type of a response of media type media.
func contentType(media string) string {
	switch media { // constants: no string built per response
	case mediaJSON:
		return mediaJSON + "; charset=utf-8"
	case mediaGraphQLResponse:
		return mediaGraphQLResponse + "; charset=utf-8"
	}
	return media + "; charset=utf-8"
}

// plainString returns the content of a JSON string without escapes (most
// query texts) without decoding it again; ok is false for anything else.
func plainString(raw []byte) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	for _, c := range body {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}

// errorReader returns err (io.EOF when nil).
type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) {
	if e.err == nil {
		return 0, io.EOF
	}
	return 0, e.err
}

// decodeBody reads a well-formed POST body ({query, operationName,
// variables, extensions} with the right types, valid UTF-8, no repeated or
// unknown member) in one pass; ok is false for anything else, which the
// general decoder then refuses with its wording. Numbers in variables and
// extensions are json.Number, as the general decoder gives them.
//
// Once the whole body is known to be valid JSON, its members are found by
// scanning it; only the variables and extensions objects are parsed into
// values (on arena a, when not nil), and the variables' JSON is kept as
// sent, as the general decoder keeps it.
func decodeBody(a arena.Arena, body []byte) (req protocol.Request, ok bool) {
	if astjson.ValidateBytes(body) != nil || hasSurrogateEscape(body) { // strict: the parser alone takes 1.2.3 or NaN
		return protocol.Request{}, false
	}
	i := jsonshape.SkipWS(body, 0)
	if i >= len(body) || body[i] != '{' {
		return protocol.Request{}, false
	}
	var p astjson.Parser
	seen := 0
	for i = jsonshape.SkipWS(body, i+1); i < len(body) && body[i] == '"'; {
		kend, err := jsonshape.SkipString(body, i)
		if err != nil {
			return protocol.Request{}, false
		}
		key := body[i+1 : kend-1]
		i = jsonshape.SkipWS(body, kend)
		if i >= len(body) || body[i] != ':' {
			return protocol.Request{}, false
		}
		start := jsonshape.SkipWS(body, i+1)
		end, err := jsonshape.SkipValue(body, start)
		if err != nil {
			return protocol.Request{}, false
		}
		val := body[start:end]
		bit := 0
		switch string(key) { // a key written with escapes is left to the general decoder
		case "query":
			bit = 1
		case "operationName":
			bit = 2
		case "variables":
			bit = 4
		case "extensions":
			bit = 8
		}
		if bit == 0 || seen&bit != 0 {
			return protocol.Request{}, false
		}
		seen |= bit
		isNull := string(val) == "null"
		switch {
		case bit == 2 && isNull, bit >= 4 && isNull:
		case bit <= 2:
			str, good := jsonString(&p, a, val)
			if !good {
				return protocol.Request{}, false
			}
			if bit == 1 {
				req.Query = str
			} else {
				req.OperationName = str
			}
		default:
			if val[0] != '{' {
				return protocol.Request{}, false
			}
			v, err := p.ParseBytesWithArena(a, val)
			if err != nil {
				return protocol.Request{}, false
			}
			m, good := goValue(v).(map[string]any)
			if !good {
				return protocol.Request{}, false
			}
			if bit == 4 {
				req.Variables, req.VariablesJSON = m, bytes.Clone(val)
			} else {
				req.Extensions = m
			}
		}
		i = jsonshape.SkipWS(body, end)
		if i < len(body) && body[i] == ',' {
			i = jsonshape.SkipWS(body, i+1)
			continue
		}
		break
	}
	if i >= len(body) || body[i] != '}' || seen&1 == 0 {
		return protocol.Request{}, false
	}
	return req, true
}

// hasSurrogateEscape reports whether b holds an escaped UTF-16 surrogate
// (\uD800-\uDFFF): the parser keeps a lone one as its six characters where
// the general decoder gives U+FFFD, so such bodies take the general decoder.
func hasSurrogateEscape(b []byte) bool {
	for {
		i := bytes.Index(b, []byte(`\u`))
		if i < 0 || i+4 > len(b) {
			return false
		}
		if d, n := b[i+2]|0x20, b[i+3]|0x20; d == 'd' && (n >= '8' && n <= '9' || n >= 'a' && n <= 'f') {
			return true
		}
		b = b[i+2:]
	}
}

// jsonString is the content of the JSON string val (valid JSON) when it is
// valid UTF-8: copied as it stands when it has no escape, decoded by the
// parser otherwise.
func jsonString(p *astjson.Parser, a arena.Arena, val []byte) (string, bool) {
	if len(val) < 2 || val[0] != '"' {
		return "", false
	}
	if s, ok := plainString(val); ok {
		return s, true
	}
	v, err := p.ParseBytesWithArena(a, val)
	if err != nil {
		return "", false
	}
	sb, err := v.StringBytes()
	if err != nil || !utf8.Valid(sb) {
		return "", false
	}
	return string(sb), true
}

// goValue converts a JSON value; nil (not a map) when a string or key is
// not valid UTF-8 or an object repeats a key (the general decoder
// handles those).
func goValue(v *astjson.Value) any {
	switch v.Type() {
	case astjson.TypeObject:
		o, _ := v.Object()
		m := make(map[string]any, o.Len())
		good := true
		o.Visit(func(k []byte, item *astjson.Value) {
			x := goValue(item)
			_, dup := m[string(k)]
			if !good || dup || !utf8.Valid(k) || (x == nil && item.Type() != astjson.TypeNull) {
				good = false
				return
			}
			m[string(k)] = x
		})
		if !good {
			return nil
		}
		return m
	case astjson.TypeArray:
		items, _ := v.Array()
		out := make([]any, len(items))
		for i, item := range items {
			if out[i] = goValue(item); out[i] == nil && item.Type() != astjson.TypeNull {
				return nil
			}
		}
		return out
	case astjson.TypeString:
		sb, _ := v.StringBytes()
		if !utf8.Valid(sb) {
			return nil
		}
		return string(sb)
	case astjson.TypeNumber:
		return json.Number(v.MarshalTo(nil))
	case astjson.TypeTrue:
		return true
	case astjson.TypeFalse:
		return false
	}
	return nil
}

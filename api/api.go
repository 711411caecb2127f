// Package api is the HTTP surface shared by every API of DDS: the router
// that authenticates routes, the one place errors become statuses and the
// JSON envelope, request decoding with size caps, and the middleware every
// request passes (request id, logging, panic recovery, rate limits).
// Surfaces live in sub-packages (rest, files, webhooks, graphql, admin,
// connectapi) and register their routes on a Router.
package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/ratelimit"
)

// Authenticator turns an Authorization header into a principal.
type Authenticator interface {
	Authenticate(ctx context.Context, header string) (*auth.Principal, error)
}

// Router is an http.ServeMux whose Handle routes require authentication.
type Router struct {
	mux     *http.ServeMux
	authn   Authenticator
	tenant  *ratelimit.Limiter
	maxBody int64
	idem    Idempotency // nil: Idempotency-Key is ignored
}

// WithIdempotency makes the router honour Idempotency-Key on writes.
func (r *Router) WithIdempotency(idem Idempotency) *Router { r.idem = idem; return r }

// NewRouter returns a router. tenantLimit may be nil (no per-tenant limit).
func NewRouter(authn Authenticator, tenantLimit *ratelimit.Limiter, maxBody int64) *Router {
	r := &Router{mux: http.NewServeMux(), authn: authn, tenant: tenantLimit, maxBody: maxBody}
	r.mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		WriteError(w, req, apperr.New(apperr.NotFound, "no route for %s %s", req.Method, req.URL.Path))
	})
	return r
}

// Handle registers an authenticated route: the principal is in the request
// context, the tenant rate limit applies and the body is size-capped.
func (r *Router) Handle(pattern string, h http.Handler) { r.HandleRendering(pattern, h, WriteError) }

// ErrorWriter renders an error response.
type ErrorWriter func(http.ResponseWriter, *http.Request, error)

// HandleRendering is Handle for a surface whose errors have another shape
// (GraphQL's {"errors": [...]}): authentication and rate-limit failures are
// rendered by writeErr.
func (r *Router) HandleRendering(pattern string, h http.Handler, writeErr ErrorWriter) {
	r.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		p, err := r.authn.Authenticate(req.Context(), req.Header.Get("Authorization"))
		if err != nil {
			writeErr(w, req, err)
			return
		}
		note(req.Context(), func(ri *reqInfo) { ri.tenant = p.TenantID })
		if res := r.tenant.Allow(p.TenantID); res.Limit > 0 {
			if !limitHeaders(w, res) {
				note(req.Context(), func(ri *reqInfo) { ri.rejected = "tenant" })
				writeErr(w, req, apperr.New(apperr.RateLimited, "tenant rate limit of %d requests per minute exceeded", res.Limit))
				return
			}
		}
		req.Body = http.MaxBytesReader(w, req.Body, r.maxBody)
		req = req.WithContext(auth.WithPrincipal(req.Context(), p))
		if key, ok := req.Header["Idempotency-Key"]; ok && r.idem != nil && isWrite(req.Method) {
			r.idempotent(w, req, p.TenantID, key, h, writeErr)
			return
		}
		h.ServeHTTP(w, req)
	}))
}

// HandleFunc is Handle for a function.
func (r *Router) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	r.Handle(pattern, http.HandlerFunc(h))
}

// Public registers a route without authentication (health, presigned
// storage URLs, operator-token and socket routes that authenticate
// themselves).
func (r *Router) Public(pattern string, h http.Handler) { r.mux.Handle(pattern, h) }

func (r *Router) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.mux.ServeHTTP(w, req) }

// Principal returns the authenticated principal of a Handle route.
func Principal(r *http.Request) *auth.Principal {
	p, ok := auth.FromContext(r.Context())
	if !ok {
		panic("api.Principal called on a route registered with Public")
	}
	return p
}

// Authorize returns the caller of a Handle route if it holds kind:*:op —
// the check of every management surface (keys, schemas, files, webhooks).
func Authorize(r *http.Request, kind, op string) (*auth.Principal, error) {
	p := Principal(r)
	return p, p.Require(kind, "*", op)
}

// limitHeaders sets X-RateLimit-* unless a stricter layer already did, and
// reports whether the request is allowed.
func limitHeaders(w http.ResponseWriter, res ratelimit.Result) bool {
	h := w.Header()
	if prev := h.Get("X-RateLimit-Remaining"); prev == "" || res.Remaining <= atoi(prev) || !res.Allowed {
		h.Set("X-RateLimit-Limit", fmt.Sprint(res.Limit))
		h.Set("X-RateLimit-Remaining", fmt.Sprint(res.Remaining))
		h.Set("X-RateLimit-Reset", fmt.Sprint(res.Reset))
	}
	if !res.Allowed {
		h.Set("Retry-After", fmt.Sprint(res.Reset))
	}
	return res.Allowed
}

// atoi parses an X-RateLimit-Remaining value, which only this package writes (a decimal
// int from fmt.Sprint); anything unparsable counts as 0, the strictest value.
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// WriteJSON writes v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// WriteRaw writes JSON that Postgres already built.
func WriteRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// Status maps an error code to its HTTP status.
func Status(code apperr.Code) int {
	switch code {
	case apperr.Validation, apperr.BadRequest, apperr.QueryTooExpensive:
		return http.StatusBadRequest
	case apperr.Unauthenticated:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.CursorExpired:
		return http.StatusGone
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.RateLimited:
		return http.StatusTooManyRequests
	case apperr.Unavailable, apperr.QueryTimeout:
		return http.StatusServiceUnavailable
	case apperr.IdempotencyKeyReused:
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// Envelope is the error body: {"error": {...}}.
func Envelope(e *apperr.Error) map[string]any {
	body := map[string]any{"code": e.Code, "message": e.Message}
	if e.Code == apperr.Internal {
		body["message"] = "internal error; quote the X-Request-Id when reporting it"
	}
	if len(e.Details) > 0 {
		body["details"] = e.Details
	}
	for k, v := range e.Extra {
		body[k] = v
	}
	return map[string]any{"error": body}
}

// RetryAfterSeconds is the Retry-After of a 503: how long a client should
// wait before retrying when a dependency (Postgres) is unreachable.
const RetryAfterSeconds = 5

// SetRetryAfter sets Retry-After on a 503 for an unavailable dependency.
func SetRetryAfter(h http.Header, e *apperr.Error) {
	if e.Code == apperr.Unavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", strconv.Itoa(RetryAfterSeconds))
	}
}

// WriteError is the one place an error becomes a response. Internal causes
// are logged with the request id and never sent.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := db.Classify(err)
	SetRetryAfter(w.Header(), e)
	status := Status(e.Code)
	if e.Code == apperr.Unavailable && isWrite(r.Method) {
		// The server cannot know whether a write that met an unavailable
		// database committed: say so, and how to find out.
		e = &apperr.Error{Code: e.Code, Message: e.Message + ". A write may have committed before the failure: retry it with the same Idempotency-Key to learn its outcome, or read before writing again", Details: e.Details, Extra: e.Extra, Err: e.Err}
	}
	if status >= 500 && r.Context().Err() == nil { // a client that went away is not a server error
		obs.LoggerFrom(r.Context()).Error("request failed", "code", e.Code, "err", e)
	}
	WriteJSON(w, status, Envelope(e))
}

// DecodeJSON is the one decoder of JSON request bodies, used by every
// endpoint: one JSON value into dst, numbers as json.Number. A body that is
// not UTF-8 is a 400 naming the first bad byte (utf8.go). An unknown
// member of a struct (at any depth) is a 400 naming it, data after the value
// is a 400, and a body over the size cap (set by Router.Handle, or by the
// route itself) is a 413. Bodies decoded into maps accept any member: the
// caller validates their names (record fields, webhook patch members).
func DecodeJSON(r *http.Request, dst any) error {
	dec := json.NewDecoder(&utf8Reader{r: r.Body})
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var big *http.MaxBytesError
		var u8 *InvalidUTF8Error
		if errors.As(err, &big) || errors.As(err, &u8) {
			return decodeError(err)
		}
		return apperr.New(apperr.BadRequest, "the request body must hold a single JSON value")
	}
	return nil
}

// UnknownMembers is the 400 for members of a map-decoded body outside
// allowed, naming each.
func UnknownMembers(body map[string]json.RawMessage, allowed ...string) error {
	var errs []apperr.FieldError
	for k := range body {
		if !slices.Contains(allowed, k) {
			errs = append(errs, apperr.FieldError{Field: k, Message: "unknown member"})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	slices.SortFunc(errs, func(a, b apperr.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return apperr.Fields(errs)
}

func decodeError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	var big *http.MaxBytesError
	var u8 *InvalidUTF8Error
	switch {
	case errors.As(err, &u8):
		return apperr.New(apperr.BadRequest, "%s", u8.Error())
	case errors.Is(err, io.EOF):
		return apperr.New(apperr.BadRequest, "a JSON request body is required")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return apperr.Field(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "unknown member")
	case errors.As(err, &big):
		return apperr.New(apperr.TooLarge, "the request body exceeds %d bytes", big.Limit)
	case errors.As(err, &syn):
		return apperr.New(apperr.BadRequest, "invalid JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			return apperr.New(apperr.BadRequest, "the request body must be %s", jsonKind(typ.Type.Kind().String()))
		}
		return apperr.Field(field, "must be %s", jsonKind(typ.Type.Kind().String()))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.New(apperr.BadRequest, "the JSON request body is truncated")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return apperr.New(apperr.BadRequest, "the request body did not arrive in time")
	}
	return apperr.New(apperr.BadRequest, "invalid JSON body: %s", err.Error())
}

func jsonKind(goKind string) string {
	switch {
	case goKind == "map" || goKind == "struct":
		return "an object"
	case goKind == "slice" || goKind == "array":
		return "an array"
	case goKind == "string":
		return "a string"
	case goKind == "bool":
		return "a boolean"
	case strings.HasPrefix(goKind, "int") || strings.HasPrefix(goKind, "uint") || strings.HasPrefix(goKind, "float"):
		return "a number"
	}
	return "of another type"
}

// Func is a handler that returns its response instead of writing it: a
// status and a body, or an error. A json.RawMessage body (JSON Postgres
// built) is written as is, a nil body writes no body (204), anything else
// is encoded as JSON. It keeps handlers to their logic.
type Func func(r *http.Request) (int, any, error)

func (f Func) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	status, body, err := f(r)
	switch b := body.(type) {
	case nil:
		if err == nil {
			w.WriteHeader(status)
		}
	case json.RawMessage:
		if err == nil {
			WriteRaw(w, status, b)
		}
	default:
		if err == nil {
			WriteJSON(w, status, b)
		}
	}
	if err != nil {
		WriteError(w, r, err)
	}
}

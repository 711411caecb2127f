package api

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/ratelimit"
)

// reqInfo is a request's record, kept in its context through
// obs.WithRequest (so that obs.LoggerFrom finds its logger).
type reqInfo struct {
	id       string
	log      *slog.Logger
	tenant   string // set by Router once the caller is authenticated
	rejected string // the rate-limit layer that refused the request
}

// note records facts about a request for its access-log line and metrics.
func note(ctx context.Context, fn func(*reqInfo)) {
	if ri, ok := obs.Request(ctx).(*reqInfo); ok {
		fn(ri)
	}
}

// Logger is the request's logger, carrying its id; built only when
// something logs (obs.LoggerFrom), so a quiet request allocates no logger.
func (ri *reqInfo) Logger() *slog.Logger { return ri.log.With("request_id", ri.id) }

// Limits are the per-IP rate-limit layers; AuthPaths are the routes of the
// stricter auth layer.
type Limits struct {
	Global     *ratelimit.Limiter
	Auth       *ratelimit.Limiter
	AuthPaths  map[string]bool // "POST /api/v1/auth/token"
	TrustProxy bool            // take the client IP from the last X-Forwarded-For entry (one trusted proxy in front)
	Metrics    *Metrics        // nil records nothing
	// AccessLogSample is the fraction of requests answered below 500 that
	// are logged at info (0 none, 1 all); every 5xx is logged.
	AccessLogSample float64
	// Unlimited are the routes ("GET /readyz") no per-IP limit counts:
	// health probes and metric scrapes come from one balancer or scraper
	// address, and refusing them would take a healthy server out of service.
	Unlimited map[string]bool
	// Body bounds how long a request body may take to arrive once the
	// headers are read (0: no bound); Upload replaces it for paths under
	// UploadPrefix (local file uploads are large). Without a bound, a client
	// that trickles its body a byte a second holds a goroutine and a file
	// descriptor for ever.
	Body, Upload time.Duration
	UploadPrefix string
}

// bodyDeadline sets the connection's read deadline for the request body.
// net/http resets the deadline before it reads the next request on the
// connection, so the bound ends with the request. Requests without a body
// and WebSocket upgrades (whose connection outlives the request) are left
// unbounded.
func (l *Limits) bodyDeadline(w http.ResponseWriter, r *http.Request) {
	if l.Body <= 0 || r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 || r.Header.Get("Upgrade") != "" {
		return
	}
	d := l.Body
	if l.Upload > 0 && l.UploadPrefix != "" && strings.HasPrefix(r.URL.Path, l.UploadPrefix) {
		d = l.Upload
	}
	// An error means the connection cannot take deadlines (a test's
	// recorder): the request is then simply unbounded, as before.
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(d))
}

// Middleware wraps the whole server: request id, access log, panic
// recovery, the DELETE body rule, and per-IP rate limits.
func Middleware(next http.Handler, log *slog.Logger, limits Limits) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if id == "" || len(id) > 128 {
			var b [12]byte
			var h [24]byte
			_, _ = rand.Read(b[:])
			hex.Encode(h[:], b[:])
			id = string(h[:])
		}
		w.Header().Set("X-Request-Id", id)
		ri := &reqInfo{id: id, log: log}
		r = r.WithContext(obs.WithRequest(r.Context(), ri))
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				// http.ErrAbortHandler asks net/http to abort the response quietly: pass it on.
				if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
					panic(p)
				}
				obs.LoggerFrom(r.Context()).Error("panic", "panic", p, "stack", string(debug.Stack()))
				if !sw.wrote {
					WriteError(sw, r, apperr.New(apperr.Internal, "internal error"))
				}
			}
			d := time.Since(start)
			if span := trace.SpanFromContext(r.Context()); span.IsRecording() {
				span.SetName(route(r)) // "POST /api/v1/files/upload-url": the pattern carries the method
				span.SetAttributes(attribute.String("http.route", route(r)), attribute.String("dds.request_id", id), attribute.String("dds.tenant", ri.tenant))
			}
			limits.Metrics.observe(r.Pattern, sw.status, d, ri.rejected)
			//nolint:gosec // G404: log sampling needs a fair coin, not an unpredictable one.
			if sw.status >= 500 || limits.AccessLogSample >= 1 || limits.AccessLogSample > 0 && mrand.Float64() < limits.AccessLogSample {
				log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("method", r.Method), slog.String("route", route(r)),
					slog.Int("status", sw.status), slog.Duration("duration", d), slog.String("tenant", ri.tenant), slog.String("request_id", id))
			}
		}()
		limits.bodyDeadline(w, r)
		if limits.Unlimited[r.Method+" "+r.URL.Path] {
			next.ServeHTTP(sw, r)
			return
		}
		ip := clientIP(r, limits.TrustProxy)
		if res := limits.Global.Allow(ip); res.Limit > 0 && !limitHeaders(sw, res) {
			ri.rejected = "ip"
			WriteError(sw, r, apperr.New(apperr.RateLimited, "rate limit of %d requests per minute exceeded", res.Limit))
			return
		}
		if limits.AuthPaths[r.Method+" "+r.URL.Path] {
			if res := limits.Auth.Allow(ip); res.Limit > 0 && !limitHeaders(sw, res) {
				ri.rejected = "auth"
				WriteError(sw, r, apperr.New(apperr.RateLimited, "auth rate limit of %d requests per minute exceeded", res.Limit))
				return
			}
		}
		if r.Method == http.MethodDelete && strings.Contains(r.Header.Get("Content-Type"), "json") && r.ContentLength == 0 {
			WriteError(sw, r, apperr.New(apperr.BadRequest, "a DELETE without a body must not send Content-Type: application/json"))
			return
		}
		next.ServeHTTP(sw, r)
	})
}

// route is the request's route pattern, or "unmatched": the raw path
// would put ids (and whatever a client sends) into logs and metrics.
func route(r *http.Request) string {
	if r.Pattern == "" {
		return "unmatched"
	}
	return r.Pattern
}

func clientIP(r *http.Request, trustProxy bool) string {
	if trustProxy {
		// The last entry is the one the trusted proxy appended; earlier ones
		// are whatever the client sent, so counting by them would let a
		// client pick its own rate-limit bucket.
		if f := r.Header.Values("X-Forwarded-For"); len(f) > 0 {
			last := f[len(f)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			return strings.TrimSpace(last)
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer
// (flushing, hijacking for WebSockets).
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// Flush lets streaming handlers (Connect streams, gRPC reflection) that
// assert http.Flusher flush through the writer.
func (s *statusWriter) Flush() {
	s.wrote = true
	_ = http.NewResponseController(s.ResponseWriter).Flush()
}

// Hijack hands the connection to a WebSocket upgrader that asserts
// http.Hijacker instead of using http.ResponseController (gorilla/websocket
// does): without it the GraphQL subscription socket answered 500.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, rw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil {
		s.status, s.wrote = http.StatusSwitchingProtocols, true
	}
	return conn, rw, err
}

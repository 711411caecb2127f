package api

import (
	"bytes"
	"context"
	"io"
	"net/http"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/idempotency"
	"github.com/dds-project/dds/obs"
)

// Idempotency keeps the answers of writes sent with an Idempotency-Key
// (package idempotency).
type Idempotency interface {
	Begin(ctx context.Context, tenant, key string, hash []byte) (idempotency.State, *idempotency.Answer, error)
	Guard(ctx context.Context, tenant, key string) context.Context
	Finish(ctx context.Context, tenant, key string, a idempotency.Answer) error
}

func isWrite(method string) bool {
	return method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch || method == http.MethodDelete
}

// validKey: 1 to 255 printable ASCII characters.
func validKey(k string) bool {
	if len(k) == 0 || len(k) > 255 {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// idempotent serves a write sent with an Idempotency-Key: the first
// request with a key runs (its write marks the key committed in its own
// transaction) and its answer is kept for 24 hours; the same key with the
// same method, path and body gets that answer again, with
// Idempotency-Replayed: true, and writes nothing.
func (r *Router) idempotent(w http.ResponseWriter, req *http.Request, tenant string, keys []string, h http.Handler, writeErr ErrorWriter) {
	if len(keys) != 1 || !validKey(keys[0]) {
		writeErr(w, req, apperr.Field("Idempotency-Key", "must be one header of 1 to 255 printable ASCII characters"))
		return
	}
	key := keys[0]
	body, err := io.ReadAll(req.Body)
	if err != nil {
		writeErr(w, req, decodeError(err))
		return
	}
	ctx := req.Context()
	state, ans, err := r.idem.Begin(ctx, tenant, key, idempotency.Hash(req.Method, req.URL.RequestURI(), body))
	if err != nil {
		writeErr(w, req, err)
		return
	}
	switch state {
	case idempotency.Replay:
		if ans.ContentType != "" {
			w.Header().Set("Content-Type", ans.ContentType)
		}
		w.Header().Set("Idempotency-Replayed", "true")
		w.WriteHeader(ans.Status)
		_, _ = w.Write(ans.Body) //nolint:gosec // G705: the answer DDS itself gave, replayed with the content type it had
		return
	case idempotency.Reused:
		writeErr(w, req, apperr.New(apperr.IdempotencyKeyReused, "this Idempotency-Key was used with another method, path or body"))
		return
	case idempotency.InFlight:
		writeErr(w, req, apperr.New(apperr.Conflict, "a request with this Idempotency-Key is still running; retry once it has answered"))
		return
	case idempotency.CommittedUnanswered:
		writeErr(w, req, apperr.New(apperr.Conflict, "the first request with this Idempotency-Key committed its write, but its answer was lost; read the resource to see the result"))
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	rec := &recorder{ResponseWriter: w, status: http.StatusOK}
	h.ServeHTTP(rec, req.WithContext(r.idem.Guard(ctx, tenant, key)))
	// Recorded even when the client has gone: the retry it will send needs it.
	if err := r.idem.Finish(context.WithoutCancel(ctx), tenant, key, idempotency.Answer{
		Status: rec.status, ContentType: rec.Header().Get("Content-Type"), Body: rec.body.Bytes()}); err != nil {
		obs.LoggerFrom(ctx).Error("record the answer of an Idempotency-Key; a retry will be told the write committed without its answer", "err", err)
	}
}

// recorder passes a response through and keeps a copy.
type recorder struct {
	http.ResponseWriter
	status int
	body   bytes.Buffer
}

func (r *recorder) WriteHeader(code int) { r.status = code; r.ResponseWriter.WriteHeader(code) }
func (r *recorder) Write(b []byte) (int, error) {
	r.body.Write(b)
	return r.ResponseWriter.Write(b)
}
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

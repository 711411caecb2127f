package load

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"net/http"
	"time"
)

// Minimal is a minimal hand-written net/http server running one SQL
// statement per request and writing the statement's single JSON column:
// the HTTP ceiling benchmarks compare DDS with.
type Minimal struct {
	URL string // http://127.0.0.1:port
	srv *http.Server
}

// MinimalServer starts, on 127.0.0.1 and a free port, a server whose every
// request runs query with argsFn(r)'s bind values on db and writes the one
// JSON column of the one row it returns: 200 for GET, 201 for other
// methods, 404 when no row, 400 when argsFn returns nil (it may read the
// body), 500 on a database error. Stop it with Close.
func MinimalServer(db *sql.DB, query string, argsFn func(r *http.Request) []any) (*Minimal, error) {
	return MinimalServerOf(db, query, argsFn, func(row *sql.Row) ([]byte, error) {
		var out []byte
		err := row.Scan(&out)
		return out, err
	})
}

// MinimalServerOf is MinimalServer for a statement whose row holds more
// than the JSON to write: scan reads the row and returns that JSON.
func MinimalServerOf(db *sql.DB, query string, argsFn func(r *http.Request) []any, scan func(*sql.Row) ([]byte, error)) (*Minimal, error) {
	// Binding a loopback port completes at once; the server's life is bounded by Close.
	ln, err := net.Listen("tcp", "127.0.0.1:0") //nolint:noctx // nothing to cancel: see above
	if err != nil {
		return nil, err
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		args := argsFn(r)
		if args == nil {
			http.Error(w, `{"error":"bad request"}`, http.StatusBadRequest)
			return
		}
		out, err := scan(db.QueryRowContext(r.Context(), query, args...))
		if errors.Is(err, sql.ErrNoRows) {
			http.Error(w, `{"error":"not found"}`, http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, `{"error":"database error"}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusOK)
		} else {
			w.WriteHeader(http.StatusCreated)
		}
		_, _ = w.Write(out)
	})
	m := &Minimal{URL: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second}}
	go func() { _ = m.srv.Serve(ln) }()
	return m, nil
}

// Close stops the server (waiting up to 5 s for requests in flight).
func (m *Minimal) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.srv.Shutdown(ctx)
}

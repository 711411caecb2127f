package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	cases := []struct {
		name  string
		xff   []string
		trust bool
		want  string
	}{
		{"no proxy trusted: the peer", []string{"1.2.3.4"}, false, "10.0.0.9"},
		{"trusted proxy, one hop", []string{"1.2.3.4"}, true, "1.2.3.4"},
		{"a client-forged entry is not used", []string{"6.6.6.6, 1.2.3.4"}, true, "1.2.3.4"},
		{"repeated headers: the last one", []string{"6.6.6.6", "1.2.3.4"}, true, "1.2.3.4"},
		{"trusted but absent: the peer", nil, true, "10.0.0.9"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.9:5000"
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := clientIP(r, c.trust); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

// Streaming handlers that assert http.Flusher flush through the
// middleware's writer. (The WebSocket upgrade through it is
// TestSocketThroughMiddleware.)
func TestMiddlewareKeepsFlusher(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := w.(http.Flusher)
		if !ok {
			http.Error(w, "no flusher", http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("part"))
		f.Flush()
	})
	srv := httptest.NewServer(Middleware(h, slog.New(slog.DiscardHandler), Limits{}))
	defer srv.Close()
	r, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("flush through the middleware: HTTP %d", r.StatusCode)
	}
}

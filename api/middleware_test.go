package api

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
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

// The WebSocket upgrade (GraphQL subscriptions) and streaming need the
// writer's http.Hijacker and http.Flusher through the middleware; gorilla's
// upgrader asserts them directly instead of using http.ResponseController.
func TestMiddlewareKeepsHijackerAndFlusher(t *testing.T) {
	up := websocket.Upgrader{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/flush" {
			f, ok := w.(http.Flusher)
			if !ok {
				http.Error(w, "no flusher", http.StatusInternalServerError)
				return
			}
			_, _ = w.Write([]byte("part"))
			f.Flush()
			return
		}
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		mt, msg, err := c.ReadMessage()
		if err == nil {
			_ = c.WriteMessage(mt, msg)
		}
	})
	srv := httptest.NewServer(Middleware(h, slog.New(slog.DiscardHandler), Limits{}))
	defer srv.Close()

	c, resp, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http")+"/ws", nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("upgrade through the middleware: %v (HTTP %d)", err, status)
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.TextMessage, []byte("ping")); err != nil {
		t.Fatal(err)
	}
	if _, msg, err := c.ReadMessage(); err != nil || string(msg) != "ping" {
		t.Fatalf("echo: %q, %v", msg, err)
	}

	r, err := http.Get(srv.URL + "/flush")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	if r.StatusCode != http.StatusOK {
		t.Fatalf("flush through the middleware: HTTP %d", r.StatusCode)
	}
}

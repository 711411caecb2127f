package graphql

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// countingConn counts the writes that reach the network.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// batchServer upgrades one socket with the write loop's connection, and
// hands the test the server's side of it.
func batchServer(t *testing.T) (server chan *wsConn, writes *atomic.Int64, client *websocket.Conn) {
	t.Helper()
	server, writes = make(chan *wsConn, 1), &atomic.Int64{}
	up := websocket.Upgrader{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hj := &hijacker{ResponseWriter: w}
		ws, err := up.Upgrade(hj, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		hj.conn.Conn = countingConn{Conn: hj.conn.Conn, writes: writes} // after the handshake
		server <- &wsConn{ws: ws, conn: hj.conn, out: make(chan message, 256), closed: make(chan struct{}), log: slog.Default()}
	}))
	t.Cleanup(srv.Close)
	client, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(srv.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return server, writes, client
}

// TestQueuedFramesShareOneWrite: the frames queued for a socket when its
// write loop wakes go out in one write, and the client still reads each
// as its own message, in order, byte for byte what graphql-transport-ws
// sends (the id and type of each, its payload unchanged).
func TestQueuedFramesShareOneWrite(t *testing.T) {
	server, writes, client := batchServer(t)
	c := <-server
	const n = 100
	payload := json.RawMessage(`{"data":{"noteCreated":{"title":"<a & b>"}},"extensions":{"cursor":"c1"}}`)
	for i := 1; i < n; i++ {
		id := fmt.Sprintf("s%d", i)
		c.out <- message{ID: id, Type: "next", Payload: payload, head: withPayload(frameHead(id, "next"))}
	}
	if err := c.writeBatch(message{ID: "s0", Type: "next", Payload: payload, head: withPayload(frameHead("s0", "next"))}); err != nil {
		t.Fatal(err)
	}
	if got := writes.Load(); got != 1 {
		t.Fatalf("%d frames took %d writes, want 1", n, got)
	}
	// s0 first (the one that woke the loop), then the queue in order.
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	for i := range n {
		kind, b, err := client.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf(`{"id":"s%d","type":"next","payload":%s}`, i, payload)
		if kind != websocket.TextMessage || string(b) != want {
			t.Fatalf("message %d: %s, want %s", i, b, want)
		}
	}
	// A lone frame goes at once, in its own write; frames without a
	// payload, and ids that need escaping, are valid JSON.
	c.send(message{ID: `a"b`, Type: "complete"})
	if err := c.writeBatch(<-c.out); err != nil {
		t.Fatal(err)
	}
	_, b, err := client.ReadMessage()
	if err != nil || string(b) != `{"id":"a\"b","type":"complete"}` || writes.Load() != 2 {
		t.Fatalf("%s %v, %d writes", b, err, writes.Load())
	}
}

// TestCloseFrameWrittenDuringABatchIsSent: a close written while the loop
// is batching (a slow consumer closed from the feed's goroutine) is sent
// before the connection closes, after the frames batched before it, so
// the client learns its close code.
func TestCloseFrameWrittenDuringABatchIsSent(t *testing.T) {
	server, _, client := batchServer(t)
	c := <-server
	c.conn.hold()
	if err := (&message{Type: "connection_ack"}).writeTo(c.ws); err != nil {
		t.Fatal(err)
	}
	c.close(4500, "subscriber too slow") // held, then sent by Close
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, b, err := client.ReadMessage(); err != nil || string(b) != `{"type":"connection_ack"}` {
		t.Fatalf("%s %v", b, err)
	}
	_, _, err := client.ReadMessage()
	if !websocket.IsCloseError(err, 4500) {
		t.Fatalf("got %v, want close 4500", err)
	}
}

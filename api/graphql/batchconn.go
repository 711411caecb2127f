package graphql

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"sync"
	"time"
)

// batchConn is a socket's connection as the websocket library sees it,
// letting the write loop coalesce frames: between hold and flush, the
// library's writes (whole frames: the loop's messages, and a pong or
// close another goroutine writes meanwhile) are appended to a buffer in
// the order they were made, and flush sends them with one write. Outside
// a hold, writes go straight through. Under fan-out a socket is handed
// frames faster than one write per frame can send them: one write per
// frame was most of the server's CPU (10,000 subscriptions over 1,000
// sockets).
//
// Frames are never split or reordered: the library writes each frame with
// one Write call under its own lock, and the connection's own write lock
// keeps a flush and a direct write whole.
type batchConn struct {
	net.Conn
	mu     sync.Mutex
	held   bool
	closed bool
	buf    []byte
}

// maxHeldBuffer is the largest buffer kept between batches; a batch that
// grew it past this returns it to the garbage collector.
const maxHeldBuffer = 256 << 10

// Write appends p while held, else writes it.
func (b *batchConn) Write(p []byte) (int, error) {
	b.mu.Lock()
	if b.held {
		b.buf = append(b.buf, p...)
		b.mu.Unlock()
		return len(p), nil
	}
	b.mu.Unlock()
	return b.Conn.Write(p)
}

// hold starts a batch: writes are buffered until flush. Only the write
// loop holds and flushes.
func (b *batchConn) hold() {
	b.mu.Lock()
	b.held = !b.closed
	b.mu.Unlock()
}

// flush ends the batch, sending what it buffered in one write before
// deadline.
func (b *batchConn) flush(deadline time.Time) error {
	b.mu.Lock()
	b.held = false
	buf := b.buf
	b.buf = nil
	b.mu.Unlock()
	if len(buf) == 0 {
		return nil
	}
	_ = b.SetWriteDeadline(deadline)
	_, err := b.Conn.Write(buf)
	b.mu.Lock()
	if !b.closed && cap(buf) <= maxHeldBuffer {
		b.buf = buf[:0] // no one appended: the next hold is this goroutine's
	}
	b.mu.Unlock()
	return err
}

// Close sends what a batch holds (a close frame written while the loop
// was batching is among it), then closes the connection.
func (b *batchConn) Close() error {
	b.mu.Lock()
	buf := b.buf
	b.buf, b.held, b.closed = nil, false, true
	b.mu.Unlock()
	if len(buf) > 0 {
		_ = b.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = b.Conn.Write(buf)
	}
	return b.Conn.Close()
}

// buffered is how many bytes the batch holds so far.
func (b *batchConn) buffered() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.buf)
}

// hijacker hands the websocket upgrader a batchConn in place of the
// request's connection (set when Hijack ran).
type hijacker struct {
	http.ResponseWriter
	conn *batchConn
}

func (h *hijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response does not implement http.Hijacker")
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	h.conn = &batchConn{Conn: c}
	return h.conn, brw, nil
}

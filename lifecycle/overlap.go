package lifecycle

import (
	"io"
	"sync/atomic"
)

// overlapChunk and overlapChunks bound what overlapped holds: at most
// overlapChunks buffers of overlapChunk bytes, whatever the table's size.
const (
	overlapChunk  = 256 << 10
	overlapChunks = 4
)

// overlapped runs fill with a writer whose bytes reach w on another
// goroutine, in chunks, in order. An export's rows arrive from Postgres
// one small write at a time while w hashes and deflates them: written
// straight through, the two take turns on one core; overlapped, Postgres
// renders the next rows while the archive compresses these. A write
// error of w ends fill's next write; overlapped returns fill's error
// first, then w's.
func overlapped(w io.Writer, fill func(io.Writer) error) error {
	ow := &overlapWriter{chunks: make(chan []byte, overlapChunks), free: make(chan []byte, overlapChunks+1)}
	for range overlapChunks + 1 {
		ow.free <- make([]byte, 0, overlapChunk)
	}
	ow.buf = <-ow.free
	done := make(chan error, 1)
	go func() {
		var err error
		for c := range ow.chunks {
			if err == nil {
				if _, err = w.Write(c); err != nil {
					ow.failed.Store(true)
				}
			}
			ow.free <- c[:0]
		}
		done <- err
	}()
	err := fill(ow)
	if err == nil && len(ow.buf) > 0 {
		ow.chunks <- ow.buf
	}
	close(ow.chunks)
	if werr := <-done; err == nil {
		err = werr
	}
	return err
}

type overlapWriter struct {
	chunks chan []byte // full buffers, to the writing goroutine
	free   chan []byte // written buffers, back
	buf    []byte
	failed atomic.Bool
}

func (ow *overlapWriter) Write(p []byte) (int, error) {
	if ow.failed.Load() {
		return 0, io.ErrClosedPipe
	}
	n := len(p)
	for len(p) > 0 {
		k := copy(ow.buf[len(ow.buf):cap(ow.buf)], p)
		ow.buf = ow.buf[:len(ow.buf)+k]
		p = p[k:]
		if len(ow.buf) == cap(ow.buf) {
			ow.chunks <- ow.buf
			ow.buf = <-ow.free
		}
	}
	return n, nil
}

package lifecycle

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// TestOverlappedKeepsOrder: what fill writes, in writes of every size,
// reaches w byte for byte and in order.
func TestOverlappedKeepsOrder(t *testing.T) {
	var want, got bytes.Buffer
	err := overlapped(&got, func(w io.Writer) error {
		for i := range 5000 {
			p := bytes.Repeat([]byte{byte(i)}, i%700+1)
			if i%997 == 0 {
				p = bytes.Repeat([]byte{byte(i)}, overlapChunk+13) // larger than a chunk
			}
			want.Write(p)
			if n, err := w.Write(p); n != len(p) || err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil || !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("overlapped wrote %d bytes of %d (%v)", got.Len(), want.Len(), err)
	}
}

type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (f *failAfter) Write(p []byte) (int, error) {
	if f.n -= len(p); f.n < 0 {
		return 0, errFull
	}
	return len(p), nil
}

// TestOverlappedStopsOnWriteError: a failing w ends fill's writes, and its
// error is the one returned when fill itself has none.
func TestOverlappedStopsOnWriteError(t *testing.T) {
	var fillErr error
	err := overlapped(&failAfter{n: 3 * overlapChunk}, func(w io.Writer) error {
		p := make([]byte, 1000)
		// As a COPY that ends when its writer fails, but reports nothing itself.
		for i := 0; i < 1_000_000 && fillErr == nil; i++ {
			_, fillErr = w.Write(p)
		}
		return nil
	})
	if !errors.Is(err, errFull) || fillErr == nil {
		t.Fatalf("overlapped returned %v; fill's write error %v", err, fillErr)
	}
}

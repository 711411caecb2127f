package api

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// Every way of cutting a body into reads finds the same first invalid
// byte, and passes every UTF-8 body on unchanged.
func TestUTF8ReaderFindsTheFirstInvalidByte(t *testing.T) {
	cases := []struct {
		name string
		body string
		bad  int64 // -1: valid
	}{
		{"ascii", `{"name":"lamp"}`, -1},
		{"multi-byte runes", `{"name":"lámpa ランプ 🪔"}`, -1},
		{"an encoded U+FFFD is valid", "{\"name\":\"\uFFFD\"}", -1},
		{"ff fe in a string", "{\"name\":\"a\xff\xfe\"}", 10},
		{"a lone continuation byte", "{\"a\":\"\x80\"}", 6},
		{"a truncated sequence inside", "{\"a\":\"\xe3\x83\"}", 6},
		{"the body ends inside a sequence", "{\"a\":1}\xf0\x9f", 7},
		{"an overlong encoding", "{\"a\":\"\xc0\xaf\"}", 6},
		{"a surrogate encoded", "{\"a\":\"\xed\xa0\x80\"}", 6},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"halves":   iotest.HalfReader,
	}
	for _, c := range cases {
		for rn, wrap := range readers {
			t.Run(c.name+"/"+rn, func(t *testing.T) {
				got, err := io.ReadAll(&utf8Reader{r: wrap(strings.NewReader(c.body))})
				var u8 *InvalidUTF8Error
				switch {
				case c.bad < 0 && err != nil:
					t.Fatalf("valid body refused: %v", err)
				case c.bad < 0 && string(got) != c.body:
					t.Fatalf("body changed: %q", got)
				case c.bad >= 0 && !errors.As(err, &u8):
					t.Fatalf("invalid body passed: err %v", err)
				case c.bad >= 0 && u8.Offset != c.bad:
					t.Fatalf("first invalid byte at %d, want %d", u8.Offset, c.bad)
				}
			})
		}
	}
}

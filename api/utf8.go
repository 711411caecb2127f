package api

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// JSON must be UTF-8 (RFC 8259 §8.1), and encoding/json does not check it:
// it stores U+FFFD where a string holds bytes that are not UTF-8, so a body
// with the bytes ff fe inside a string would be written with replacement
// characters instead of refused. Every JSON body is read through
// utf8Reader, which fails at the first byte that is not UTF-8.

// InvalidUTF8Error is a request body that is not UTF-8 at byte Offset.
type InvalidUTF8Error struct{ Offset int64 }

func (e *InvalidUTF8Error) Error() string {
	return fmt.Sprintf("the request body is not valid UTF-8 at byte %d (JSON must be UTF-8)", e.Offset)
}

// InvalidUTF8 returns the offset of the first byte of b that is not part of
// a UTF-8 sequence, or -1 when b is UTF-8.
func InvalidUTF8(b []byte) int {
	if utf8.Valid(b) {
		return -1
	}
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return -1
}

// utf8Reader passes r's bytes on, checking that they are UTF-8 as they
// come: a sequence cut by the end of one read is completed by the next, and
// a body ending inside one is invalid there.
type utf8Reader struct {
	r    io.Reader
	off  int64                 // bytes of r checked and passed on before this read
	tail [utf8.UTFMax - 1]byte // the unfinished sequence ending the last read
	nt   int
}

func (u *utf8Reader) Read(p []byte) (int, error) {
	n, err := u.r.Read(p)
	if n > 0 {
		if bad := u.check(p[:n]); bad >= 0 {
			return 0, &InvalidUTF8Error{Offset: bad}
		}
		u.off += int64(n)
	}
	if err == io.EOF && u.nt > 0 {
		return n, &InvalidUTF8Error{Offset: u.off - int64(u.nt)}
	}
	return n, err
}

// check validates b after the sequence the last read left unfinished, and
// keeps b's own unfinished sequence for the next read. It returns the
// offset in the body of the first invalid byte, or -1.
func (u *utf8Reader) check(b []byte) int64 {
	start := 0
	if u.nt > 0 {
		var buf [utf8.UTFMax]byte
		k := copy(buf[:], u.tail[:u.nt])
		m := copy(buf[k:], b)
		if !utf8.FullRune(buf[:k+m]) { // still unfinished: b is one or two bytes
			u.nt = copy(u.tail[:], buf[:k+m])
			return -1
		}
		if r, size := utf8.DecodeRune(buf[:k+m]); r == utf8.RuneError && size <= 1 {
			return u.off - int64(k)
		} else {
			start = size - k
		}
		u.nt = 0
	}
	end := len(b)
	for i := len(b) - 1; i >= start && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				end = i
			}
			break
		}
	}
	if i := InvalidUTF8(b[start:end]); i >= 0 {
		return u.off + int64(start+i)
	}
	u.nt = copy(u.tail[:], b[end:])
	return -1
}

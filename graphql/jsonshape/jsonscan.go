package jsonshape

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"strconv"
)

// A tiny JSON scanner over the documents Postgres builds: it splits objects
// and arrays into raw member slices without decoding values, so reshaping a
// result for GraphQL (aliases, field order, __typename) costs one pass and
// no per-value allocation.

// ErrBadJSON reports JSON from the database the scanner cannot read.
var ErrBadJSON = errors.New("graphql: malformed JSON from the database")

// Member is a member of a JSON object: its key and its raw value.
type Member struct {
	Key string
	Val []byte
}

// SkipWS returns the index of the first byte of b from i on that is not
// JSON whitespace.
func SkipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// SkipValue returns the index just past the value starting at b[i].
func SkipValue(b []byte, i int) (int, error) {
	i = SkipWS(b, i)
	if i >= len(b) {
		return 0, ErrBadJSON
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := SkipString(b, i)
				if err != nil {
					return 0, err
				}
				i = j
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, nil
				}
			}
			i++
		}
		return 0, ErrBadJSON
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		return i, nil
	}
}

// SkipString returns the index just past the string starting at b[i]. It
// looks for the next quote or backslash eight bytes at a time (Postgres'
// strings are mostly short ids and names, too short for bytes.IndexByte
// to pay off).
func SkipString(b []byte, i int) (int, error) {
	i++ // opening quote
	for {
		for i+8 <= len(b) {
			x := binary.LittleEndian.Uint64(b[i:])
			if m := hasByte(x, '"') | hasByte(x, '\\'); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		if i >= len(b) {
			return 0, ErrBadJSON
		}
		if b[i] == '"' {
			return i + 1, nil
		}
		i += 2 // an escape: the byte after the backslash is never the end
	}
}

// hasByte has the high bit set in the bytes of x equal to c, exact up to
// the lowest one (the classic "has zero byte" test on x ^ c).
func hasByte(x uint64, c byte) uint64 {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	y := x ^ (lo * uint64(c))
	return (y - lo) &^ y & hi
}

// MemberAt returns the index of the value of member key of the JSON
// object b (-1 when it has none), skipping the values of the members
// before it.
func MemberAt(b []byte, key string) (int, error) {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, ErrBadJSON
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return -1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, ErrBadJSON
		}
		end, err := SkipString(b, i)
		if err != nil {
			return 0, err
		}
		k := b[i+1 : end-1]
		i = SkipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, ErrBadJSON
		}
		i = SkipWS(b, i+1)
		if string(k) == key {
			return i, nil
		}
		if i, err = SkipValue(b, i); err != nil {
			return 0, err
		}
		i = SkipWS(b, i)
		if i < len(b) && b[i] == '}' {
			return -1, nil
		}
		if i >= len(b) || b[i] != ',' {
			return 0, ErrBadJSON
		}
		i = SkipWS(b, i+1)
	}
}

// ObjectMembers splits a JSON object into members, appending to dst.
func ObjectMembers(b []byte, dst []Member) ([]Member, error) {
	i := SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return dst, ErrBadJSON
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return dst, nil
	}
	for i < len(b) {
		i = SkipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return dst, ErrBadJSON
		}
		end, err := SkipString(b, i)
		if err != nil {
			return dst, err
		}
		key := string(b[i+1 : end-1])
		if containsByte(b[i+1:end-1], '\\') {
			if key, err = strconv.Unquote(string(b[i:end])); err != nil {
				return dst, ErrBadJSON
			}
		}
		i = SkipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return dst, ErrBadJSON
		}
		start := SkipWS(b, i+1)
		vend, err := SkipValue(b, start)
		if err != nil {
			return dst, err
		}
		dst = append(dst, Member{Key: key, Val: b[start:vend]})
		i = SkipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return dst, nil
		}
		return dst, ErrBadJSON
	}
	return dst, ErrBadJSON
}

// ArrayItems splits a JSON array (null is an empty array).
func ArrayItems(b []byte, dst [][]byte) ([][]byte, error) {
	i := SkipWS(b, 0)
	if i >= len(b) || i+4 <= len(b) && string(b[i:i+4]) == "null" {
		return dst, nil
	}
	if i >= len(b) || b[i] != '[' {
		return dst, ErrBadJSON
	}
	i = SkipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst, nil
	}
	for i < len(b) {
		start := SkipWS(b, i)
		end, err := SkipValue(b, start)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b[start:end])
		i = SkipWS(b, end)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			return dst, nil
		}
		return dst, ErrBadJSON
	}
	return dst, ErrBadJSON
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

// Lookup is the value of the first member named key, nil when none.
func Lookup(ms []Member, key string) []byte {
	for i := range ms {
		if ms[i].Key == key {
			return ms[i].Val
		}
	}
	return nil
}

// IsNull reports whether a raw value is null (or absent).
func IsNull(b []byte) bool { return len(b) == 0 || string(b) == "null" }

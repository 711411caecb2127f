package graphql

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

var errBadJSON = errors.New("graphql: malformed JSON from the database")

type member struct {
	key string
	val []byte
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) (int, error) {
	i = skipWS(b, i)
	if i >= len(b) {
		return 0, errBadJSON
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				j, err := skipString(b, i)
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
		return 0, errBadJSON
	default:
		for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\n' && b[i] != '\t' && b[i] != '\r' {
			i++
		}
		return i, nil
	}
}

// skipString returns the index just past the string starting at b[i]. It
// looks for the next quote or backslash eight bytes at a time (Postgres'
// strings are mostly short ids and names, too short for bytes.IndexByte
// to pay off).
func skipString(b []byte, i int) (int, error) {
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
			return 0, errBadJSON
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

// memberAt returns the index of the value of member key of the JSON
// object b (-1 when it has none), skipping the values of the members
// before it.
func memberAt(b []byte, key string) (int, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return 0, errBadJSON
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return -1, nil
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return 0, errBadJSON
		}
		end, err := skipString(b, i)
		if err != nil {
			return 0, err
		}
		k := b[i+1 : end-1]
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return 0, errBadJSON
		}
		i = skipWS(b, i+1)
		if string(k) == key {
			return i, nil
		}
		if i, err = skipValue(b, i); err != nil {
			return 0, err
		}
		i = skipWS(b, i)
		if i < len(b) && b[i] == '}' {
			return -1, nil
		}
		if i >= len(b) || b[i] != ',' {
			return 0, errBadJSON
		}
		i = skipWS(b, i+1)
	}
}

// objectMembers splits a JSON object into members, appending to dst.
func objectMembers(b []byte, dst []member) ([]member, error) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return dst, errBadJSON
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return dst, nil
	}
	for i < len(b) {
		i = skipWS(b, i)
		if i >= len(b) || b[i] != '"' {
			return dst, errBadJSON
		}
		end, err := skipString(b, i)
		if err != nil {
			return dst, err
		}
		key := string(b[i+1 : end-1])
		if containsByte(b[i+1:end-1], '\\') {
			if key, err = strconv.Unquote(string(b[i:end])); err != nil {
				return dst, errBadJSON
			}
		}
		i = skipWS(b, end)
		if i >= len(b) || b[i] != ':' {
			return dst, errBadJSON
		}
		start := skipWS(b, i+1)
		vend, err := skipValue(b, start)
		if err != nil {
			return dst, err
		}
		dst = append(dst, member{key: key, val: b[start:vend]})
		i = skipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == '}' {
			return dst, nil
		}
		return dst, errBadJSON
	}
	return dst, errBadJSON
}

// arrayItems splits a JSON array (null is an empty array).
func arrayItems(b []byte, dst [][]byte) ([][]byte, error) {
	i := skipWS(b, 0)
	if i >= len(b) || i+4 <= len(b) && string(b[i:i+4]) == "null" {
		return dst, nil
	}
	if i >= len(b) || b[i] != '[' {
		return dst, errBadJSON
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == ']' {
		return dst, nil
	}
	for i < len(b) {
		start := skipWS(b, i)
		end, err := skipValue(b, start)
		if err != nil {
			return dst, err
		}
		dst = append(dst, b[start:end])
		i = skipWS(b, end)
		if i < len(b) && b[i] == ',' {
			i++
			continue
		}
		if i < len(b) && b[i] == ']' {
			return dst, nil
		}
		return dst, errBadJSON
	}
	return dst, errBadJSON
}

func containsByte(b []byte, c byte) bool {
	for _, x := range b {
		if x == c {
			return true
		}
	}
	return false
}

func lookup(ms []member, key string) []byte {
	for i := range ms {
		if ms[i].key == key {
			return ms[i].val
		}
	}
	return nil
}

func isNull(b []byte) bool { return len(b) == 0 || string(b) == "null" }

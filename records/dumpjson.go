package records

// The NDJSON writer of DumpTable: it turns the rows COPY … TO STDOUT sends
// in text format into the JSON objects Postgres's row_to_json would print
// for them, byte for byte, so an export is checksum-equal to the archives
// of earlier versions (which let Postgres render the JSON) while the
// database only streams the table. Rendering JSON in Postgres cost it
// three to four times the CPU of the COPY itself; here it runs in the
// worker, beside the compression of the previous entry.
//
// The rules are row_to_json's (src/backend/utils/adt/json.c, datum_to_json
// and composite_to_json): members in column order separated by "," with no
// spaces; numbers as printed unless not valid JSON numbers (NaN, Infinity),
// which are quoted; booleans true/false; json and jsonb as their text;
// timestamptz, timestamp and date in the XSD form (ISO with a "T" and a
// zone of ±hh:mm); arrays as JSON arrays of their elements; every other
// type its output text as a JSON string, escaped as escape_json does.
// Only the types below are rendered here; a table with a column of any
// other type is dumped with row_to_json as before (dumpKind reports it).

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// dumpKind is how a column's text is rendered as JSON.
type dumpKind uint8

const (
	kindString    dumpKind = iota // quoted, escaped (text, uuid, vector, …)
	kindRaw                       // as is (integers, json, jsonb)
	kindFloat                     // as is unless NaN/±Infinity, then quoted
	kindBool                      // t/f → true/false
	kindDate                      // quoted, as is (ISO and XSD dates agree)
	kindTimestamp                 // quoted, "T" for the space, ±hh → ±hh:00
)

// dumpKindOf is the kind of a Postgres type name (pg_type.typname of the
// column's type, or of its element type for an array); ok is false for a
// type whose JSON rendering this file does not reproduce.
func dumpKindOf(typname string) (dumpKind, bool) {
	switch typname {
	case "text", "varchar", "bpchar", "name", "uuid", "vector", "bytea":
		return kindString, true
	case "int2", "int4", "int8", "oid", "json", "jsonb":
		return kindRaw, true
	case "float4", "float8", "numeric":
		return kindFloat, true
	case "bool":
		return kindBool, true
	case "date":
		return kindDate, true
	case "timestamptz", "timestamp":
		return kindTimestamp, true
	}
	return 0, false
}

// dumpColumn is one column of a dumped table, in the order of the COPY.
type dumpColumn struct {
	key   []byte // `"name":`, escaped
	kind  dumpKind
	array bool
}

// ndjsonWriter receives COPY text-format data (any chunking) and writes
// one JSON object per row to out.
type ndjsonWriter struct {
	cols    []dumpColumn
	out     io.Writer
	pending []byte // a row not yet complete
	buf     []byte // the output not yet written
	field   []byte // one unescaped field
}

func newNDJSONWriter(out io.Writer, names []string, kinds []dumpKind, arrays []bool) *ndjsonWriter {
	cols := make([]dumpColumn, len(names))
	for i, n := range names {
		var k []byte
		if i == 0 {
			k = append(k, '{')
		} else {
			k = append(k, ',')
		}
		k = appendJSONString(k, []byte(n))
		k = append(k, ':')
		cols[i] = dumpColumn{key: k, kind: kinds[i], array: arrays[i]}
	}
	return &ndjsonWriter{cols: cols, out: out, buf: make([]byte, 0, 64<<10)}
}

func (w *ndjsonWriter) Write(p []byte) (int, error) {
	n := len(p)
	if len(w.pending) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.pending = append(w.pending, p...)
			return n, nil
		}
		w.pending = append(w.pending, p[:i]...)
		if err := w.row(w.pending); err != nil {
			return 0, err
		}
		w.pending = w.pending[:0]
		p = p[i+1:]
	}
	for {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			break
		}
		if err := w.row(p[:i]); err != nil {
			return 0, err
		}
		p = p[i+1:]
	}
	w.pending = append(w.pending, p...)
	if len(w.buf) >= 48<<10 {
		if err := w.flush(); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// Close writes what is buffered; a partial row left over is an error.
func (w *ndjsonWriter) Close() error {
	if len(w.pending) > 0 {
		return errors.New("COPY data ended inside a row")
	}
	return w.flush()
}

func (w *ndjsonWriter) flush() error {
	if len(w.buf) == 0 {
		return nil
	}
	_, err := w.out.Write(w.buf)
	w.buf = w.buf[:0]
	return err
}

// row renders one COPY text row (tab-separated fields, \N for null).
func (w *ndjsonWriter) row(line []byte) error {
	for i := range w.cols {
		c := &w.cols[i]
		var f []byte
		if i < len(w.cols)-1 {
			j := bytes.IndexByte(line, '\t')
			if j < 0 {
				return fmt.Errorf("COPY row has %d fields, want %d", i+1, len(w.cols))
			}
			f, line = line[:j], line[j+1:]
		} else {
			f = line
		}
		w.buf = append(w.buf, c.key...)
		if len(f) == 2 && f[0] == '\\' && f[1] == 'N' {
			w.buf = append(w.buf, "null"...)
			continue
		}
		if bytes.IndexByte(f, '\\') >= 0 {
			w.field = copyUnescape(w.field[:0], f)
			f = w.field
		}
		if c.array {
			var err error
			if w.buf, err = appendArray(w.buf, f, c.kind); err != nil {
				return fmt.Errorf("column %s: %w", c.key, err)
			}
			continue
		}
		w.buf = appendScalar(w.buf, f, c.kind)
	}
	w.buf = append(w.buf, '}', '\n')
	return nil
}

// copyUnescape undoes COPY's text-format escaping of one field.
func copyUnescape(dst, f []byte) []byte {
	for i := 0; i < len(f); i++ {
		b := f[i]
		if b != '\\' || i == len(f)-1 {
			dst = append(dst, b)
			continue
		}
		i++
		switch e := f[i]; e {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'v':
			dst = append(dst, '\v')
		case 'x':
			v, n := 0, 0
			for n < 2 && i+1 < len(f) && isHex(f[i+1]) {
				i++
				v = v*16 + hexVal(f[i])
				n++
			}
			dst = append(dst, byte(v))
		default:
			if e >= '0' && e <= '7' {
				v := int(e - '0')
				for n := 1; n < 3 && i+1 < len(f) && f[i+1] >= '0' && f[i+1] <= '7'; n++ {
					i++
					v = v*8 + int(f[i]-'0')
				}
				dst = append(dst, byte(v))
			} else {
				dst = append(dst, e)
			}
		}
	}
	return dst
}

func isHex(b byte) bool {
	return (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F')
}

func hexVal(b byte) int {
	switch {
	case b >= '0' && b <= '9':
		return int(b - '0')
	case b >= 'a' && b <= 'f':
		return int(b-'a') + 10
	default:
		return int(b-'A') + 10
	}
}

// appendScalar renders one non-null value of kind k from its output text.
func appendScalar(dst, v []byte, k dumpKind) []byte {
	switch k {
	case kindRaw:
		return append(dst, v...)
	case kindFloat:
		if isJSONNumber(v) {
			return append(dst, v...)
		}
		return appendJSONString(dst, v)
	case kindBool:
		if len(v) == 1 && v[0] == 't' {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case kindTimestamp:
		return appendTimestamp(dst, v)
	default: // kindString, kindDate
		return appendJSONString(dst, v)
	}
}

// isJSONNumber is whether a float's output text is a JSON number (it is
// unless NaN or ±Infinity; Postgres never prints a leading "+" or ".").
func isJSONNumber(v []byte) bool {
	if len(v) == 0 {
		return false
	}
	c := v[0]
	if c == '-' && len(v) > 1 {
		c = v[1]
	}
	return c >= '0' && c <= '9'
}

// appendTimestamp renders an ISO-style timestamp's text ("2026-11-27
// 01:47:07.5+00", perhaps with " BC") in the XSD form row_to_json uses
// ("2026-11-27T01:47:07.5+00:00"), quoted; infinity stays as it is.
func appendTimestamp(dst, v []byte) []byte {
	sp := bytes.IndexByte(v, ' ')
	if sp < 0 || len(v) < sp+9 || v[sp+3] != ':' { // infinity, -infinity
		return appendJSONString(dst, v)
	}
	bc := bytes.HasSuffix(v, []byte(" BC"))
	if bc {
		v = v[:len(v)-3]
	}
	dst = append(dst, '"')
	dst = append(dst, v[:sp]...)
	dst = append(dst, 'T')
	rest := v[sp+1:]
	dst = append(dst, rest...)
	// The zone, if any, follows the time: its sign is the first + or -
	// after hh:mm:ss. ISO prints ±hh when the minutes are zero; XSD ±hh:mm.
	if z := bytes.IndexAny(rest[8:], "+-"); z >= 0 && len(rest[8+z:]) == 3 {
		dst = append(dst, ':', '0', '0')
	}
	if bc {
		dst = append(dst, " BC"...)
	}
	return append(dst, '"')
}

// appendJSONString writes s as a JSON string the way Postgres's
// escape_json does: \b \f \n \r \t \" \\ by name, other bytes below 0x20
// as \u00xx (lowercase hex), everything else as it is.
func appendJSONString(dst, s []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i, b := range s {
		if b >= 0x20 && b != '"' && b != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		start = i + 1
		switch b {
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xf])
		}
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendArray renders an array's output text ("{a,\"b c\",NULL}", nested
// braces for more dimensions, perhaps "[0:1]=" bounds first, which JSON
// leaves out) as a JSON array of its elements.
func appendArray(dst, v []byte, k dumpKind) ([]byte, error) {
	if len(v) > 0 && v[0] == '[' {
		eq := bytes.IndexByte(v, '=')
		if eq < 0 {
			return dst, errors.New("array bounds without '='")
		}
		v = v[eq+1:]
	}
	p := arrayParser{s: v, k: k}
	out, err := p.value(dst)
	if err != nil {
		return dst, err
	}
	if p.i != len(p.s) {
		return dst, errors.New("text after the array")
	}
	return out, nil
}

type arrayParser struct {
	s    []byte
	i    int
	k    dumpKind
	elem []byte
}

// value parses one brace-enclosed level at p.i.
func (p *arrayParser) value(dst []byte) ([]byte, error) {
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return dst, errors.New("array does not start with '{'")
	}
	p.i++
	dst = append(dst, '[')
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return append(dst, ']'), nil
	}
	for {
		if p.i >= len(p.s) {
			return dst, errors.New("array ends early")
		}
		var err error
		switch p.s[p.i] {
		case '{':
			if dst, err = p.value(dst); err != nil {
				return dst, err
			}
		case '"':
			p.i++
			p.elem = p.elem[:0]
			for {
				if p.i >= len(p.s) {
					return dst, errors.New("array ends inside a quoted element")
				}
				b := p.s[p.i]
				p.i++
				if b == '"' {
					break
				}
				if b == '\\' && p.i < len(p.s) {
					b = p.s[p.i]
					p.i++
				}
				p.elem = append(p.elem, b)
			}
			dst = appendScalar(dst, p.elem, p.k)
		default:
			j := p.i
			for j < len(p.s) && p.s[j] != ',' && p.s[j] != '}' {
				j++
			}
			e := p.s[p.i:j]
			p.i = j
			if string(e) == "NULL" {
				dst = append(dst, "null"...)
			} else {
				dst = appendScalar(dst, e, p.k)
			}
		}
		if p.i >= len(p.s) {
			return dst, errors.New("array ends early")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
			dst = append(dst, ',')
		case '}':
			p.i++
			return append(dst, ']'), nil
		default:
			return dst, fmt.Errorf("unexpected %q in array", p.s[p.i])
		}
	}
}

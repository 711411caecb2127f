package records

// The COPY reader of LoadTable: it turns an archive's NDJSON lines (one
// JSON object of column values per line, as DumpTable writes them) into
// rows of COPY's text format, so an import loads each table with
// COPY … FROM STDIN straight into the tenant table: Postgres parses no
// JSON and writes no temporary table, and the worker converts the next
// rows while Postgres stores these.
//
// Each value reaches its column's input function as the text
// jsonb_populate_record would have given it (the way imports loaded
// before): a string's content, a number's or a boolean's literal, the
// JSON text itself for json and jsonb columns, and a JSON array as an
// array literal of its elements for an array column (nested arrays are
// dimensions, but in an array of json or jsonb, whose elements may be
// arrays themselves: DDS's lists are one-dimensional). null and a missing member are NULL; unknown members are
// ignored; a duplicate member's last value wins, as in jsonb. A value of
// the wrong type fails the COPY with Postgres's reason, which names the
// record; a line that is not a JSON object fails with what is wrong.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"
)

// loadColumn is a stored column of a loaded table, in the table's order.
type loadColumn struct {
	name  string
	json  bool // json or jsonb (or an array of them): values stay JSON text
	array bool
}

// maxJSONDepth bounds the nesting of one value (a hostile line must not
// exhaust the stack).
const maxJSONDepth = 512

// copyRows is an io.Reader of COPY text rows converted from next's lines
// (nil at the end).
type copyRows struct {
	cols     []loadColumn
	index    map[string]int
	next     func() ([]byte, error)
	progress func(int64)

	rows       int64 // records converted
	start, end []int // each column's field in arena; start < 0: NULL
	arena      []byte
	key, str   []byte // one unescaped key, string
	arr        []byte // one array literal
	out        []byte
	off        int
	err        error // io.EOF, next's error or a conversion error
	convErr    error // a conversion error, for LoadTable to report
	readErr    error // next's own error, returned as is
}

func newCopyRows(cols []loadColumn, next func() ([]byte, error), progress func(int64)) *copyRows {
	idx := make(map[string]int, len(cols))
	for i, c := range cols {
		idx[c.name] = i
	}
	return &copyRows{cols: cols, index: idx, next: next, progress: progress,
		start: make([]int, len(cols)), end: make([]int, len(cols)), out: make([]byte, 0, 80<<10)}
}

func (c *copyRows) Read(p []byte) (int, error) {
	for c.off >= len(c.out) {
		if c.err != nil {
			return 0, c.err
		}
		c.out, c.off = c.out[:0], 0
		for len(c.out) < 64<<10 {
			line, err := c.next()
			if err != nil {
				c.err, c.readErr = err, err
				break
			}
			if line == nil {
				c.err = io.EOF
				break
			}
			c.rows++
			if err := c.row(line); err != nil {
				c.err = fmt.Errorf("record %d: %w", c.rows, err)
				c.convErr = c.err
				break
			}
			if c.progress != nil && c.rows%10_000 == 0 {
				c.progress(c.rows)
			}
		}
	}
	n := copy(p, c.out[c.off:])
	c.off += n
	return n, nil
}

// row converts one JSON object into one COPY row appended to c.out.
func (c *copyRows) row(line []byte) error {
	for i := range c.start {
		c.start[i] = -1
	}
	c.arena = c.arena[:0]
	p := jsonScanner{s: line}
	p.ws()
	if !p.eat('{') {
		return errors.New("not a JSON object")
	}
	p.ws()
	if !p.eat('}') {
		for {
			p.ws()
			if p.peek() != '"' {
				return p.errorf("a member name")
			}
			var err error
			if c.key, err = p.str(c.key[:0]); err != nil {
				return err
			}
			p.ws()
			if !p.eat(':') {
				return p.errorf("':'")
			}
			p.ws()
			if i, ok := c.index[string(c.key)]; ok {
				if err := c.value(&p, i); err != nil {
					return fmt.Errorf("member %q: %w", c.cols[i].name, err)
				}
			} else if _, err := p.skip(0); err != nil {
				return err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat('}') {
				break
			}
			return p.errorf("',' or '}'")
		}
	}
	p.ws()
	if p.i != len(p.s) {
		return p.errorf("the end of the line")
	}
	for i := range c.cols {
		if i > 0 {
			c.out = append(c.out, '\t')
		}
		if c.start[i] < 0 {
			c.out = append(c.out, '\\', 'N')
		} else {
			c.out = append(c.out, c.arena[c.start[i]:c.end[i]]...)
		}
	}
	c.out = append(c.out, '\n')
	return nil
}

// value renders the value at p as column i's COPY field in c.arena.
func (c *copyRows) value(p *jsonScanner, i int) error {
	col := &c.cols[i]
	start := len(c.arena)
	switch b := p.peek(); {
	case b == 'n':
		if _, err := p.skip(0); err != nil {
			return err
		}
		c.start[i] = -1
		return nil
	case b == '[' && col.array:
		var err error
		if c.arr, err = c.arrayLiteral(p, c.arr[:0], col.json, 0); err != nil {
			return err
		}
		c.arena = appendCopyEscaped(c.arena, c.arr)
	case b == '"' && !col.json:
		var err error
		if c.str, err = p.str(c.str[:0]); err != nil {
			return err
		}
		c.arena = appendCopyEscaped(c.arena, c.str)
	default: // JSON text: numbers, booleans, json and jsonb values
		raw, err := p.skip(0)
		if err != nil {
			return err
		}
		c.arena = appendCopyEscaped(c.arena, raw)
	}
	c.start[i], c.end[i] = start, len(c.arena)
	return nil
}

// arrayLiteral appends the array literal ({…}) of the JSON array at p.
func (c *copyRows) arrayLiteral(p *jsonScanner, dst []byte, json bool, depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return dst, errors.New("nested too deeply")
	}
	p.eat('[')
	dst = append(dst, '{')
	p.ws()
	if p.eat(']') {
		return append(dst, '}'), nil
	}
	for {
		p.ws()
		switch b := p.peek(); {
		case b == '[' && !json:
			var err error
			if dst, err = c.arrayLiteral(p, dst, json, depth+1); err != nil {
				return dst, err
			}
		case b == 'n':
			if _, err := p.skip(0); err != nil {
				return dst, err
			}
			dst = append(dst, "NULL"...)
		case b == '"' && !json:
			var err error
			if c.str, err = p.str(c.str[:0]); err != nil {
				return dst, err
			}
			dst = appendArrayElement(dst, c.str)
		default:
			raw, err := p.skip(depth + 1)
			if err != nil {
				return dst, err
			}
			dst = appendArrayElement(dst, raw)
		}
		p.ws()
		if p.eat(',') {
			dst = append(dst, ',')
			continue
		}
		if p.eat(']') {
			return append(dst, '}'), nil
		}
		return dst, p.errorf("',' or ']'")
	}
}

// appendArrayElement appends v as a double-quoted array element.
func appendArrayElement(dst, v []byte) []byte {
	dst = append(dst, '"')
	for _, b := range v {
		if b == '"' || b == '\\' {
			dst = append(dst, '\\')
		}
		dst = append(dst, b)
	}
	return append(dst, '"')
}

// appendCopyEscaped appends v as one field of COPY's text format.
func appendCopyEscaped(dst, v []byte) []byte {
	for {
		i := bytes.IndexAny(v, "\\\n\r\t")
		if i < 0 {
			return append(dst, v...)
		}
		dst = append(dst, v[:i]...)
		switch v[i] {
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		default:
			dst = append(dst, '\\', 't')
		}
		v = v[i+1:]
	}
}

// jsonScanner reads one JSON text; it checks the grammar of what it
// skips, so that a value's extent is the one a JSON parser would find.
type jsonScanner struct {
	s []byte
	i int
}

func (p *jsonScanner) peek() byte {
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *jsonScanner) eat(b byte) bool {
	if p.i < len(p.s) && p.s[p.i] == b {
		p.i++
		return true
	}
	return false
}

func (p *jsonScanner) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonScanner) errorf(want string) error {
	if p.i >= len(p.s) {
		return fmt.Errorf("invalid JSON: the line ends where %s was expected", want)
	}
	return fmt.Errorf("invalid JSON at byte %d: %q where %s was expected", p.i+1, p.s[p.i], want)
}

// str appends the content of the JSON string at p (escapes undone).
func (p *jsonScanner) str(dst []byte) ([]byte, error) {
	if !p.eat('"') {
		return dst, p.errorf("a string")
	}
	for {
		j := p.i
		for j < len(p.s) && p.s[j] != '"' && p.s[j] != '\\' && p.s[j] >= 0x20 {
			j++
		}
		dst = append(dst, p.s[p.i:j]...)
		p.i = j
		if j >= len(p.s) {
			return dst, p.errorf("the end of a string")
		}
		switch b := p.s[j]; {
		case b == '"':
			p.i++
			return dst, nil
		case b < 0x20:
			return dst, p.errorf("an escaped control character")
		}
		// A backslash escape.
		if j+1 >= len(p.s) {
			return dst, p.errorf("an escape")
		}
		p.i = j + 2
		switch e := p.s[j+1]; e {
		case '"', '\\', '/':
			dst = append(dst, e)
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
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return dst, p.errorf(`four hex digits after \u`)
			}
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if p.i+1 < len(p.s) && p.s[p.i] == '\\' && p.s[p.i+1] == 'u' {
					p.i += 2
					r2, ok = p.hex4()
					if !ok {
						return dst, p.errorf(`four hex digits after \u`)
					}
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return dst, errors.New(`invalid JSON: a \u escape of half a surrogate pair`)
				}
			}
			if r == 0 {
				return dst, errors.New(`invalid JSON: \u0000 cannot be stored in text`)
			}
			dst = utf8.AppendRune(dst, r)
		default:
			p.i = j + 1
			return dst, p.errorf("an escape")
		}
	}
}

func (p *jsonScanner) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, b := range p.s[p.i : p.i+4] {
		if !isHex(b) {
			return 0, false
		}
		r = r*16 + rune(hexVal(b))
	}
	p.i += 4
	return r, true
}

// skip passes over the JSON value at p and returns its text.
func (p *jsonScanner) skip(depth int) ([]byte, error) {
	if depth > maxJSONDepth {
		return nil, errors.New("nested too deeply")
	}
	start := p.i
	switch b := p.peek(); {
	case b == '"':
		for p.i++; ; p.i++ {
			if p.i >= len(p.s) {
				return nil, p.errorf("the end of a string")
			}
			c := p.s[p.i]
			if c == '"' {
				p.i++
				break
			}
			if c < 0x20 {
				return nil, p.errorf("an escaped control character")
			}
			if c == '\\' {
				p.i++
			}
		}
	case b == '{' || b == '[':
		closing := byte('}')
		if b == '[' {
			closing = ']'
		}
		p.i++
		p.ws()
		if p.eat(closing) {
			break
		}
		for {
			p.ws()
			if b == '{' {
				if p.peek() != '"' {
					return nil, p.errorf("a member name")
				}
				if _, err := p.skip(depth + 1); err != nil {
					return nil, err
				}
				p.ws()
				if !p.eat(':') {
					return nil, p.errorf("':'")
				}
				p.ws()
			}
			if _, err := p.skip(depth + 1); err != nil {
				return nil, err
			}
			p.ws()
			if p.eat(',') {
				continue
			}
			if p.eat(closing) {
				break
			}
			return nil, p.errorf(fmt.Sprintf("',' or '%c'", closing))
		}
	case b == 't':
		return p.literal("true")
	case b == 'f':
		return p.literal("false")
	case b == 'n':
		return p.literal("null")
	case b == '-' || b >= '0' && b <= '9':
		return p.number()
	default:
		return nil, p.errorf("a value")
	}
	return p.s[start:p.i], nil
}

func (p *jsonScanner) literal(word string) ([]byte, error) {
	if !bytes.HasPrefix(p.s[p.i:], []byte(word)) {
		return nil, p.errorf(word)
	}
	p.i += len(word)
	return p.s[p.i-len(word) : p.i], nil
}

// number passes over a JSON number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *jsonScanner) number() ([]byte, error) {
	start := p.i
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	p.eat('-')
	if p.eat('0') {
		if p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			return nil, p.errorf("no digit after a leading 0")
		}
	} else if digits() == 0 {
		return nil, p.errorf("a digit")
	}
	if p.eat('.') && digits() == 0 {
		return nil, p.errorf("a digit after '.'")
	}
	if p.eat('e') || p.eat('E') {
		if !p.eat('+') {
			p.eat('-')
		}
		if digits() == 0 {
			return nil, p.errorf("a digit in the exponent")
		}
	}
	return p.s[start:p.i], nil
}

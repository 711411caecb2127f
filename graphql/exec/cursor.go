package exec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/query"
)

// A connection's cursor is opaque to clients: base64url (no padding) of
// the JSON {"k": [the order keys], "v": [the row's values of them]}, id
// last, so a cursor of another order is refused. A page makes the cursors
// its response writes only (an edge's cursor, pageInfo's start and end),
// and both directions have a path for the form they write themselves that
// reads no more than it must: the bytes are those encoding/json writes for
// the struct cursor (TestCursorsAreWhatEncodingJSONWrites), and anything
// else a client sends is read by encoding/json as before.

// cursor is the cursor's JSON.
type cursor struct {
	K []string          `json:"k"`
	V []json.RawMessage `json:"v"`
}

func keyNames(keys []query.Order) []string {
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = k.Field
		if k.Desc {
			out[i] += ":desc"
		}
	}
	return out
}

// cursorKeys is what a connection's cursors are made of and read with,
// built once per request.
type cursorKeys struct {
	names  []string
	keys   []query.Order
	prefix []byte // {"k":[names...],"v":[
	ms     []jsonshape.Member
	buf    bytes.Buffer
}

func newCursorKeys(keys []query.Order) *cursorKeys {
	ck := &cursorKeys{names: keyNames(keys), keys: keys}
	k, _ := json.Marshal(ck.names) // strings: cannot fail
	ck.prefix = append(append(append(make([]byte, 0, len(k)+16), `{"k":`...), k...), `,"v":[`...)
	return ck
}

// encode is the cursor of item (a record's JSON object, holding the order
// keys' members; a missing one is null).
func (ck *cursorKeys) encode(item []byte) (string, error) {
	ms, err := jsonshape.ObjectMembers(item, ck.ms[:0])
	if err != nil {
		return "", err
	}
	ck.ms = ms
	b := &ck.buf
	b.Reset()
	b.Write(ck.prefix)
	for i, k := range ck.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		v := jsonshape.Lookup(ms, k.Field)
		switch {
		case v == nil:
			b.WriteString("null")
		case v[0] == '{' || v[0] == '[': // not an order key's value: encoding/json compacts it
			return encodeCursorSlow(ck.names, ck.keys, ms)
		default:
			// A scalar as Postgres writes it is compact already; this is
			// the escaping encoding/json adds to a json.RawMessage.
			json.HTMLEscape(b, v)
		}
	}
	b.WriteString("]}")
	return base64.RawURLEncoding.EncodeToString(b.Bytes()), nil
}

// encodeCursorSlow is encode through encoding/json.
func encodeCursorSlow(names []string, keys []query.Order, ms []jsonshape.Member) (string, error) {
	c := cursor{K: names}
	for _, k := range keys {
		v := jsonshape.Lookup(ms, k.Field)
		if v == nil {
			v = []byte("null")
		}
		c.V = append(c.V, v)
	}
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// decode reads cursor s of argument arg into the order keys' values
// (numbers as json.Number), refusing one of another order.
func (ck *cursorKeys) decode(s, arg string) ([]any, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, badCursor(arg)
	}
	// The form encode writes: the prefix, then the values.
	if vs, ok := bytes.CutPrefix(raw, ck.prefix[:len(ck.prefix)-1]); ok && bytes.HasSuffix(vs, []byte("]}")) && json.Valid(raw) {
		items, err := jsonshape.ArrayItems(vs[:len(vs)-1], nil) // [values...]
		if err == nil && len(items) == len(ck.names) {
			out := make([]any, len(items))
			ok := true
			for i, v := range items {
				if out[i], ok = scalarValue(v); !ok {
					break
				}
			}
			if ok {
				return out, nil
			}
		}
	}
	var c cursor
	if err := json.Unmarshal(raw, &c); err != nil || strings.Join(c.K, ",") != strings.Join(ck.names, ",") || len(c.V) != len(ck.names) {
		return nil, badCursor(arg)
	}
	out := make([]any, len(c.V))
	for i, v := range c.V {
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&out[i]); err != nil {
			return nil, badCursor(arg)
		}
	}
	return out, nil
}

// scalarValue is what a json.Decoder with UseNumber reads from v, a valid
// JSON value, when v is a string without escapes, a number, true, false or
// null; ok is false for anything else (the caller then decodes it).
func scalarValue(v []byte) (val any, ok bool) {
	if len(v) == 0 {
		return nil, false
	}
	switch c := v[0]; {
	case c == '"':
		// Without a backslash the string is its bytes; invalid UTF-8 the
		// decoder replaces.
		if len(v) < 2 || v[len(v)-1] != '"' || bytes.IndexByte(v[1:len(v)-1], '\\') >= 0 || bytes.IndexByte(v[1:len(v)-1], '"') >= 0 || !utf8.Valid(v) {
			return nil, false
		}
		return string(v[1 : len(v)-1]), true
	case c == '-' || '0' <= c && c <= '9':
		for _, c := range v { // the literal alone (valid JSON: a number)
			if (c < '0' || c > '9') && c != '-' && c != '+' && c != '.' && c != 'e' && c != 'E' {
				return nil, false
			}
		}
		return json.Number(v), true
	case string(v) == "null":
		return nil, true
	case string(v) == "true":
		return true, true
	case string(v) == "false":
		return false, true
	}
	return nil, false
}

func badCursor(arg string) error {
	return apperr.Field(arg, "is not a cursor of this connection and order")
}

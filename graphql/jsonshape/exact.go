package jsonshape

import (
	"bytes"
)

// WriteExactItems writes the items of a list statement compiled with
// Output, raw being {"items" : [...]}: the array as it stands but for
// json_agg's separators. It reports false, having written nothing, when
// raw is not in that form.
func WriteExactItems(b *bytes.Buffer, raw []byte, i int) bool {
	end := len(raw) - 1
	if i <= 0 || end <= i || raw[end] != '}' || raw[end-1] != ']' || raw[i] != '[' {
		return false
	}
	return writeCompact(b, raw[i:end])
}

// WriteExactObject writes the record of a get compiled with Output, raw
// being the object row_to_json built: as it stands but for the separators
// json_agg writes between the items of its nested lists. It reports false,
// having written nothing, when raw is not an object in that form.
func WriteExactObject(b *bytes.Buffer, raw []byte) bool {
	if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
		return false
	}
	return writeCompact(b, raw)
}

// writeCompact writes v but for json_agg's separators (", \n " between
// items: a raw newline never occurs inside Postgres' JSON strings, which
// escape it); it reports false, having written nothing, when v holds a
// newline in another form.
func writeCompact(b *bytes.Buffer, v []byte) bool {
	mark := b.Len()
	for {
		p := bytes.IndexByte(v, '\n')
		if p < 0 {
			b.Write(v)
			return true
		}
		// ", \n " between items: keep the comma, drop the rest.
		if p < 2 || p+1 >= len(v) || v[p-2] != ',' || v[p-1] != ' ' || v[p+1] != ' ' {
			b.Truncate(mark)
			return false
		}
		b.Write(v[:p-1])
		v = v[p+2:]
	}
}

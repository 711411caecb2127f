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
	v := raw[i:end]
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

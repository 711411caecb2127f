package graphql

import (
	"bytes"

	"github.com/dds-project/dds/query"
)

// Writing a list with relationship selections as Postgres wrote it. When
// the selection is made only of the record's columns, __typename and
// relationship lists (no FILE metadata, no edge connections), the
// statement is compiled to build the response's own JSON (query.Selection
// Output: the response keys, aliases included, in selection order, the
// typename as a constant), so the shape that Go would otherwise apply is
// the identity. By construction the statement's members are the
// selection's; what Go still does is take the items out of {"items": …}
// and drop the separators json_agg writes between items (", \n ": a raw
// newline never occurs inside Postgres' JSON strings, which escape it).
// Anything else in the bytes (a newline that is not such a separator)
// sends them through the stream with the identity shape, which writes the
// same bytes the stream writes without Output (TestExactOutputWritesWhat
// TheStreamWrites).

// exactOutput sets sel.Output, and that of its nested selections, to what
// s writes, and returns the shape of the JSON then compiled (every member
// copied under its own key); nil, and sel untouched, when s holds
// something Postgres does not build as the response has it.
func exactOutput(s *shape, sel *query.Selection) *shape {
	if !exactable(s, sel) {
		return nil
	}
	return setOutput(s, sel)
}

func exactable(s *shape, sel *query.Selection) bool {
	if len(sel.Files) > 0 {
		return false
	}
	for _, f := range s.fields {
		switch f.kind {
		case oTypename, oScalar:
		case oList:
			k := nestedIndex(sel, f.src)
			if k < 0 || sel.Nested[k].Edges || !exactable(f.sub, &sel.Nested[k].Select) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func setOutput(s *shape, sel *query.Selection) *shape {
	out := make([]query.Member, 0, len(s.fields))
	id := &shape{fields: make([]outField, 0, len(s.fields))}
	for _, f := range s.fields {
		m := query.Member{Key: f.key}
		o := outField{key: f.key, src: f.key, kind: oScalar}
		switch f.kind {
		case oTypename:
			m.Const = f.typename
		case oScalar:
			m.Field = f.src
		case oList:
			k := nestedIndex(sel, f.src)
			m.Nested = k + 1
			o.kind, o.sub = oList, setOutput(f.sub, &sel.Nested[k].Select)
		}
		out = append(out, m)
		id.fields = append(id.fields, o)
	}
	sel.Output = out
	return id
}

// nestedIndex is the index of the nested selection under key (-1: none).
func nestedIndex(sel *query.Selection, key string) int {
	for i := range sel.Nested {
		if sel.Nested[i].Key == key {
			return i
		}
	}
	return -1
}

// writeExactItems writes the items of a list statement compiled with
// Output, raw being {"items" : [...]}: the array as it stands but for
// json_agg's separators. It reports false, having written nothing, when
// raw is not in that form.
func writeExactItems(b *bytes.Buffer, raw []byte, i int) bool {
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

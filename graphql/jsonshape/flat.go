package jsonshape

import (
	"bytes"
)

// WriteKept is WriteObj for a record of a kept shape: the rows of one
// statement come with their members in one order, so once streaming gave
// up on a row of this shape (it wants them in another order), the rows
// after it are reshaped without trying. Both write the same bytes.
func WriteKept(b *bytes.Buffer, s *Shape, raw []byte) error {
	if IsNull(raw) || s.reorders.Load() {
		return reshapeFlat(b, s, raw)
	}
	if streamed, err := tryStream(b, s, raw); streamed || err != nil {
		return err
	}
	s.reorders.Store(true)
	return reshapeFlat(b, s, raw)
}

// maxFlatFields bounds the shapes reshapeFlat takes (its table of where each
// field's value stands is on the stack).
const maxFlatFields = 32

// reshapeFlat is reshapeObj for a shape of scalars and __typename: one pass
// over raw's members notes where each wanted value stands (the first member
// of each name, as lookup finds it), then the values are written in the
// shape's order, without splitting raw into members. Any other shape, an
// escaped key or malformed JSON goes to reshapeObj, which writes nothing
// different (or returns its error).
func reshapeFlat(b *bytes.Buffer, s *Shape, raw []byte) error {
	if IsNull(raw) || len(s.Fields) > maxFlatFields {
		return reshapeObj(b, s, raw)
	}
	for i := range s.Fields {
		if k := s.Fields[i].Kind; k != Scalar && k != Typename {
			return reshapeObj(b, s, raw)
		}
	}
	var at [maxFlatFields][2]int
	i := SkipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return reshapeObj(b, s, raw)
	}
	i = SkipWS(raw, i+1)
	for i < len(raw) && raw[i] != '}' { // a member, after '{' or ','
		if raw[i] != '"' {
			return reshapeObj(b, s, raw)
		}
		kend, err := SkipString(raw, i)
		if err != nil {
			return reshapeObj(b, s, raw)
		}
		key := raw[i+1 : kend-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return reshapeObj(b, s, raw)
		}
		i = SkipWS(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return reshapeObj(b, s, raw)
		}
		start := SkipWS(raw, i+1)
		end, err := SkipValue(raw, start)
		if err != nil {
			return reshapeObj(b, s, raw)
		}
		for k := range s.Fields {
			if f := &s.Fields[k]; f.Kind == Scalar && at[k][1] == 0 && f.Src == string(key) {
				at[k] = [2]int{start, end}
			}
		}
		i = SkipWS(raw, end)
		if i < len(raw) && raw[i] == ',' {
			if i = SkipWS(raw, i+1); i >= len(raw) || raw[i] != '"' {
				return reshapeObj(b, s, raw)
			}
			continue
		}
		break
	}
	if i >= len(raw) || raw[i] != '}' || SkipWS(raw, i+1) != len(raw) {
		return reshapeObj(b, s, raw)
	}
	b.WriteByte('{')
	for k := range s.Fields {
		f := &s.Fields[k]
		if k > 0 {
			b.WriteByte(',')
		}
		WriteKey(b, f.Key)
		if f.Kind == Typename {
			WriteString(b, f.Typename)
		} else if v := raw[at[k][0]:at[k][1]]; !IsNull(v) {
			b.Write(v)
		} else {
			b.WriteString("null")
		}
	}
	b.WriteByte('}')
	return nil
}

package graphql

import (
	"bytes"
	"slices"
	"sync/atomic"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// A record selection of scalar fields and __typename only, with no
// directive anywhere in it (the get by id's and a flat list's), builds the
// same shape and the same columns for every request: nothing in it reads
// the request's variables or the caller's scopes (the model the operation
// was prepared for already hides what the caller may not see). Such a
// selection is built once, on the operation's tree, and shared by every
// request executing that prepared operation.

// flatMemo is what a field's selection built, once: shape is nil when the
// selection is not flat (it is then built per request).
type flatMemo struct {
	entity string
	shape  *Shape
	fields []string // cap == len: a caller appending to it never writes into the memo
	// list is the Output of a get or list of this selection and its kept
	// statements (exact.go), built on the first request executing it.
	list atomic.Pointer[exactList]
}

// recordOf is record for field cf's selection over e into sel (which must
// be empty), through the memo on the operation's tree when it is flat.
func (x *execCtx) recordOf(e *schema.Entity, cf *cfield, sel *query.Selection) (*Shape, error) {
	f := cf.field
	// A field merged from several occurrences has a selection of its own
	// (collect joins them per request): build it per request.
	merged := len(cf.sel) != len(f.SelectionSet) || (len(cf.sel) > 0 && &cf.sel[0] != &f.SelectionSet[0])
	if merged || sel.Fields != nil || len(sel.Nested) > 0 || len(sel.Files) > 0 || sel.TenantID != "" {
		return x.record(e, cf.sel, sel)
	}
	if m := f.flat.Load(); m != nil && m.entity == e.Name {
		if m.shape == nil {
			return x.record(e, cf.sel, sel)
		}
		sel.Fields = m.fields
		return m.shape, nil
	}
	s, err := x.record(e, cf.sel, sel)
	if err != nil {
		return nil, err
	}
	m := &flatMemo{entity: e.Name}
	if isFlat(s, sel) && !hasDirectives(cf.sel) {
		m.shape, m.fields = s, slices.Clip(sel.Fields)
		sel.Fields = m.fields
	}
	f.flat.Store(m)
	return s, nil
}

// isFlat reports whether a built shape and selection read only the
// record's own columns.
func isFlat(s *Shape, sel *query.Selection) bool {
	if len(sel.Nested) > 0 || len(sel.Files) > 0 || sel.TenantID != "" {
		return false
	}
	for i := range s.Fields {
		if k := s.Fields[i].Kind; k != Scalar && k != Typename {
			return false
		}
	}
	return true
}

// hasDirectives reports whether a directive (@skip/@include, whose
// arguments may be variables) appears in set or its inline fragments.
func hasDirectives(set SelectionSet) bool {
	for _, s := range set {
		switch s := s.(type) {
		case *Field:
			if len(s.Directives) > 0 {
				return true
			}
		case *InlineFragment:
			if len(s.Directives) > 0 || hasDirectives(s.SelectionSet) {
				return true
			}
		}
	}
	return false
}

// flatField is the memo slot of a field of the operation's tree.
type flatField = atomic.Pointer[flatMemo]

// writeKept is writeObj for a record of a kept shape: the rows of one
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

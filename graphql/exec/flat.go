package exec

import (
	"slices"
	"sync/atomic"

	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/operation"
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
	shape  *jsonshape.Shape
	fields []string // cap == len: a caller appending to it never writes into the memo
	// list is the Output of a get or list of this selection and its kept
	// statements (exact.go), built on the first request executing it.
	list atomic.Pointer[exactList]
}

// recordOf is record for field cf's selection over e into sel (which must
// be empty), through the memo on the operation's tree when it is flat.
func (x *execCtx) recordOf(e *schema.Entity, cf *cfield, sel *query.Selection) (*jsonshape.Shape, error) {
	f := cf.field
	// A field merged from several occurrences has a selection of its own
	// (collect joins them per request): build it per request.
	merged := len(cf.sel) != len(f.SelectionSet) || (len(cf.sel) > 0 && &cf.sel[0] != &f.SelectionSet[0])
	if merged || sel.Fields != nil || readsMore(sel) || sel.TenantID != "" {
		return x.record(e, cf.sel, sel)
	}
	if m := memoOf(f); m != nil && m.entity == e.Name {
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
	f.Memo.Store(m)
	return s, nil
}

// isFlat reports whether a built shape and selection read only the
// record's own columns.
func isFlat(s *jsonshape.Shape, sel *query.Selection) bool {
	if readsMore(sel) || sel.TenantID != "" {
		return false
	}
	for i := range s.Fields {
		if k := s.Fields[i].Kind; k != jsonshape.Scalar && k != jsonshape.Typename {
			return false
		}
	}
	return true
}

// hasDirectives reports whether a directive (@skip/@include, whose
// arguments may be variables) appears in set or its inline fragments.
func hasDirectives(set operation.SelectionSet) bool {
	for _, s := range set {
		switch s := s.(type) {
		case *operation.Field:
			if len(s.Directives) > 0 {
				return true
			}
		case *operation.InlineFragment:
			if len(s.Directives) > 0 || hasDirectives(s.SelectionSet) {
				return true
			}
		}
	}
	return false
}

// memoOf is the memo field f of the operation's tree holds, nil when none
// was built yet.
func memoOf(f *operation.Field) *flatMemo {
	m, _ := f.Memo.Load().(*flatMemo)
	return m
}

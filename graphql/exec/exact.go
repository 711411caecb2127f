package exec

import (
	"bytes"
	"database/sql"
	"errors"
	"slices"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Writing a list with relationship selections as Postgres wrote it. When
// the selection is made only of the record's columns, __typename,
// relationship lists and relationship aggregates (no FILE metadata, no
// edge connections), the statement is compiled to build the response's
// own JSON (query.Selection Output: the response keys, aliases included,
// in selection order, the typename as a constant; an aggregate's object
// likewise, query.RelAggregate.Output), so the shape that Go would
// otherwise apply is the identity. By construction the statement's members are the
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
func exactOutput(s *jsonshape.Shape, sel *query.Selection) *jsonshape.Shape {
	if !exactable(s, sel) {
		return nil
	}
	return setOutput(s, sel)
}

// maxColumnName is the longest column name Postgres keeps (it cuts longer
// ones): a response key is a column name of the statement building it.
const maxColumnName = 63

func exactable(s *jsonshape.Shape, sel *query.Selection) bool {
	if len(sel.Files) > 0 {
		return false
	}
	for _, f := range s.Fields {
		if len(f.Key) > maxColumnName { // a longer alias is written by Go
			return false
		}
		switch f.Kind {
		case jsonshape.Typename, jsonshape.Scalar:
		case jsonshape.List:
			k := nestedIndex(sel, f.Src)
			if k < 0 || sel.Nested[k].Edges || !exactable(f.Sub, &sel.Nested[k].Select) {
				return false
			}
		case jsonshape.Object:
			if aggregateIndex(sel, f.Src) < 0 || !exactAggregate(f.Sub, 0) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// exactAggregate reports whether a relationship aggregate's shape
// (relaggregate.go: __typename, count, and per function an object of
// fields) is one Postgres builds as it stands (query.RelAggregate.Output):
// constants and measures, in objects one level deep, each key a column
// name.
func exactAggregate(s *jsonshape.Shape, depth int) bool {
	for _, f := range s.Fields {
		if len(f.Key) > maxColumnName {
			return false
		}
		switch f.Kind {
		case jsonshape.Typename, jsonshape.Scalar:
		case jsonshape.Self:
			if depth > 0 || !exactAggregate(f.Sub, depth+1) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// aggregateOutput is what the aggregate shape s writes, as the members of
// query.RelAggregate.Output.
func aggregateOutput(s *jsonshape.Shape) []query.GroupMember {
	out := make([]query.GroupMember, 0, len(s.Fields))
	for _, f := range s.Fields {
		switch f.Kind {
		case jsonshape.Typename:
			out = append(out, query.GroupMember{Key: f.Key, Const: f.Typename})
		case jsonshape.Scalar:
			out = append(out, query.GroupMember{Key: f.Key, Measure: f.Src})
		case jsonshape.Self:
			out = append(out, query.GroupMember{Key: f.Key, Sub: aggregateOutput(f.Sub)})
		}
	}
	return out
}

func setOutput(s *jsonshape.Shape, sel *query.Selection) *jsonshape.Shape {
	out := make([]query.Member, 0, len(s.Fields))
	id := &jsonshape.Shape{Fields: make([]jsonshape.OutField, 0, len(s.Fields))}
	for _, f := range s.Fields {
		m := query.Member{Key: f.Key}
		o := jsonshape.OutField{Key: f.Key, Src: f.Key, Kind: jsonshape.Scalar}
		switch f.Kind {
		case jsonshape.Typename:
			m.Const = f.Typename
		case jsonshape.Scalar:
			m.Field = f.Src
		case jsonshape.List:
			k := nestedIndex(sel, f.Src)
			m.Nested = k + 1
			o.Kind, o.Sub = jsonshape.List, setOutput(f.Sub, &sel.Nested[k].Select)
		case jsonshape.Object: // a relationship aggregate, copied as Postgres writes it
			k := aggregateIndex(sel, f.Src)
			m.Aggregate = k + 1
			sel.Aggregates[k].Output = aggregateOutput(f.Sub)
		}
		out = append(out, m)
		id.Fields = append(id.Fields, o)
	}
	sel.Output = out
	return id
}

// aggregateIndex is the index of the relationship aggregate under key (-1:
// none).
func aggregateIndex(sel *query.Selection, key string) int {
	for i := range sel.Aggregates {
		if sel.Aggregates[i].Key == key {
			return i
		}
	}
	return -1
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

// A get by id of a kept flat selection (flat.go: columns and __typename,
// no directive, the same for every request executing the operation) is
// compiled once with Output as well: its statement returns the response's
// object itself, which is copied into {"data":{"<key>": …}} as Postgres
// wrote it, rather than running REST's statement (whose members come in
// REST's order, the timestamps early) and reshaping its row. The text is
// kept on the selection's memo (a records.Kept), so a request binds only
// the id. The memo belongs to an operation prepared for one model (one
// schema version and visibility); records serves the kept statement only
// to a scope with the key it was compiled under (compiler and the
// principal's rule inputs), and compiles it again for another.

// exactGet is field cf's kept flat selection over e when its get by id
// builds the response's object (nil when sh is not the field's kept flat
// shape: the get then runs REST's statement and reshapes its row).
func (x *execCtx) exactGet(e *schema.Entity, cf *cfield, sh *jsonshape.Shape) *exactList {
	if x.e.noExact {
		return nil
	}
	return x.flatOutput(e, cf, sh)
}

// writeExactGet reads record id with the get kept on l (records compiles
// and keeps it for the scope) and writes the record as Postgres built it,
// or null when there is none. ran is false when the get cannot be kept
// (it binds more than the id, or did not compile): the caller then reads
// through REST's statement.
func (x *execCtx) writeExactGet(b *bytes.Buffer, e *schema.Entity, l *exactList, id string) (ran bool, err error) {
	ran, err = x.getKept(&l.get, e.Name, id, l.out, func(raw []byte) error {
		if len(raw) < 2 || raw[0] != '{' || raw[len(raw)-1] != '}' {
			return apperr.Wrap(jsonshape.ErrBadJSON, "read result")
		}
		b.Write(raw)
		return nil
	})
	if !ran {
		if err != nil { // exactable admitted what the compiler refuses: ours to fix, the request still answers
			x.e.log.Error("graphql: the get building the response did not compile; REST's statement answers", "entity", e.Name, "err", err)
		}
		return false, nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		b.WriteString("null")
		return true, nil
	}
	return true, err
}

// A list of a kept flat selection is compiled with Output as well, its
// members (and the identity shape the items are then written with) built
// once on the selection's memo. When the list's arguments (where,
// orderBy, limit, offset, search) are all literals, its statement is the
// same for every request executing the operation: it is compiled once and
// kept there too, text and values, for the scope key it was built under.
// Arguments holding a variable compile the statement per request, their
// values bound (LIMIT, a checked integer, written), as REST's list does.

// exactList is what a kept flat selection builds once to be written as
// Postgres builds it: its members, and the statements records keeps for
// it (a get's; a list's when its arguments are literals).
type exactList struct {
	out     []query.Member
	id      *jsonshape.Shape
	literal bool // the field's arguments hold no variable
	st      records.Kept
	get     records.Kept
}

// flatOutput is what a get or list of field cf's selection over e builds
// once, nil when sh is not the field's kept flat shape.
func (x *execCtx) flatOutput(e *schema.Entity, cf *cfield, sh *jsonshape.Shape) *exactList {
	m := memoOf(cf.field)
	if m == nil || m.shape == nil || m.shape != sh || m.entity != e.Name {
		return nil
	}
	if l := m.list.Load(); l != nil {
		return l
	}
	var sel query.Selection
	l := &exactList{id: exactOutput(m.shape, &sel), literal: !hasVariable(cf.field.Arguments)}
	if l.id == nil {
		return nil
	}
	l.out = slices.Clip(sel.Output)
	m.list.Store(l)
	return l
}

// hasVariable reports whether an argument's value holds a variable.
func hasVariable(args []operation.Argument) bool {
	var holds func(v *operation.Value) bool
	holds = func(v *operation.Value) bool {
		if v.Kind == operation.ValueVariable {
			return true
		}
		return slices.ContainsFunc(v.Items, holds)
	}
	for _, a := range args {
		if holds(a.Value) {
			return true
		}
	}
	return false
}

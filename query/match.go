package query

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dds-project/dds/schema"
)

// Local matching: a filter evaluated in Go on one record.
//
// The live feed tests each subscriber's where on each event's record. In
// SQL (records.Matches) that is one round trip per subscriber per event,
// which is what made filtered subscriptions queue for seconds. Most
// filters need no database: comparisons of scalar fields joined by
// and/or/not. Local compiles those to a Go predicate with the SQL
// semantics written at the top of filter.go, including SQL's three-valued
// logic (a comparison with a null field is unknown; Not(unknown) is true,
// as NOT coalesce(t, FALSE) is; only true matches). Anything whose Go
// meaning could drift from Postgres's is left to SQL: relationship
// predicates (they read other rows), list, JSON, VECTOR, FILE and DATE
// fields, and ordering of text (it follows the database's collation).
// records' tests run every operator both ways on the same records and
// require the same answers.

// tri is a truth value of SQL's three-valued logic.
type tri int8

const (
	unknown tri = iota
	no
	yes
)

// LocalMatch is a filter compiled to Go. Eval answers (match, true), or
// (false, false) when a value of the record is not of its field's type
// (the caller must ask SQL).
type LocalMatch struct {
	eval func(rec map[string]any) (tri, bool)
	key  *EqKey // a conjunct every match requires, when there is one
}

// Eval tests rec, a record decoded from JSON with UseNumber.
func (m *LocalMatch) Eval(rec map[string]any) (match, ok bool) {
	t, ok := m.eval(rec)
	return t == yes, ok
}

// Local compiles where on entity to a Go predicate; ok is false when some
// part of it must be evaluated by Postgres. A filter that would not
// compile to SQL is not local either (Where reports its error).
func (c *Compiler) Local(entity string, where Filter) (m *LocalMatch, ok bool) {
	e, found := c.def.Entity(entity)
	if !found {
		return nil, false
	}
	f, ok := local(e, where)
	if !ok {
		return nil, false
	}
	return &LocalMatch{eval: f, key: eqKey(e, where)}, true
}

// EqKey is a conjunct `field = value` that every record matching a filter
// satisfies (a top-level equality, alone or inside top-level ands). The
// live feed indexes its subscribers by it, so that an event is tested only
// against the subscribers whose key its record carries, plus those without
// one: fan-out then costs per matching subscriber, not per subscriber.
// Only text, enum, id, integer and boolean fields give a key (their values
// have one canonical spelling).
type EqKey struct {
	Field string // the record's JSON member
	kind  valueKind
	Value string // canonical: see spell
}

// Key is the filter's equality key, if it has one.
func (m *LocalMatch) Key() (EqKey, bool) {
	if m.key == nil {
		return EqKey{}, false
	}
	return *m.key, true
}

// Of is the key value rec carries for k's field. present is false when
// the field is null or absent (an equality with a value never matches it);
// ok is false when the value is not of the field's type (then only a full
// evaluation can answer: test every subscriber keyed on the field).
func (k EqKey) Of(rec map[string]any) (value string, present, ok bool) {
	v := rec[k.Field]
	if v == nil {
		return "", false, true
	}
	d, ok := k.kind.decode(v)
	if !ok {
		return "", false, false
	}
	return spell(k.kind, d), true, true
}

// spell spells a decoded value of kind one way: what compare finds equal
// spells equally.
func spell(k valueKind, v any) string {
	switch k {
	case kindID:
		return strings.ToLower(v.(string))
	case kindInt:
		return strconv.FormatInt(v.(int64), 10)
	case kindBool:
		return strconv.FormatBool(v.(bool))
	}
	return v.(string)
}

// eqKey finds f's first top-level equality on a keyable field.
func eqKey(e *schema.Entity, f Filter) *EqKey {
	switch f := f.(type) {
	case *Cond:
		return eqKey(e, *f)
	case And:
		for _, t := range f {
			if k := eqKey(e, t); k != nil {
				return k
			}
		}
	case Cond:
		if f.Op != Eq || f.Value == nil {
			return nil
		}
		r, found := entityRef(e, f.Field, "")
		if !found || r.f.List {
			return nil
		}
		var kind valueKind
		switch {
		case r.id:
			kind = kindID
		case r.f.Type == schema.String, r.f.Type == schema.Text, r.f.Type == schema.Enum:
			kind = kindText
		case r.f.Type == schema.Integer:
			kind = kindInt
		case r.f.Type == schema.Boolean:
			kind = kindBool
		default:
			return nil
		}
		want, err := coerceScalar(r, f.Value)
		if err != nil {
			return nil
		}
		return &EqKey{Field: r.name, kind: kind, Value: spell(kind, want)}
	}
	return nil
}

type evalFn = func(rec map[string]any) (tri, bool)

func local(e *schema.Entity, f Filter) (evalFn, bool) {
	switch f := f.(type) {
	case nil:
		return func(map[string]any) (tri, bool) { return yes, true }, true
	case *Cond:
		return local(e, *f)
	case And, Or:
		terms, isAnd := junction(f)
		fns := make([]evalFn, len(terms))
		for i, t := range terms {
			fn, ok := local(e, t)
			if !ok {
				return nil, false
			}
			fns[i] = fn
		}
		return func(rec map[string]any) (tri, bool) {
			// AND: no if any no, else unknown if any unknown; OR mirrors it.
			res := yes
			if !isAnd {
				res = no
			}
			for _, fn := range fns {
				t, ok := fn(rec)
				if !ok {
					return unknown, false
				}
				switch {
				case isAnd && t == no, !isAnd && t == yes:
					return t, true
				case t == unknown:
					res = unknown
				}
			}
			return res, true
		}, true
	case Not:
		fn, ok := local(e, f.Term)
		if !ok {
			return nil, false
		}
		return func(rec map[string]any) (tri, bool) {
			t, ok := fn(rec)
			if t == yes {
				return no, ok
			}
			return yes, ok // NOT coalesce(t, FALSE)
		}, true
	case Cond:
		return localCond(e, f)
	}
	return nil, false // Related, and anything new: SQL
}

// junction is the terms of an And or an Or, and which it is.
func junction(f Filter) (terms []Filter, isAnd bool) {
	if a, ok := f.(And); ok {
		return a, true
	}
	return f.(Or), false
}

func localCond(e *schema.Entity, c Cond) (evalFn, bool) {
	r, found := entityRef(e, c.Field, "")
	if !found {
		return nil, false
	}
	fd := r.f
	if fd.List {
		return nil, false
	}
	name := r.name
	get := func(rec map[string]any) any { return rec[name] }
	if c.Op == IsNull {
		want, ok := c.Value.(bool)
		if !ok {
			return nil, false
		}
		return func(rec map[string]any) (tri, bool) { return truth((get(rec) == nil) == want), true }, true
	}
	var kind valueKind
	switch {
	case r.id:
		kind = kindID
	case fd.Type == schema.String, fd.Type == schema.Text, fd.Type == schema.Enum:
		kind = kindText
	case fd.Type == schema.Integer:
		kind = kindInt
	case fd.Type == schema.Number:
		kind = kindFloat
	case fd.Type == schema.Boolean:
		kind = kindBool
	case fd.Type == schema.Timestamp:
		kind = kindTime
	default:
		return nil, false
	}
	coerce := func(v any) (any, bool) {
		x, err := coerceScalar(r, v)
		if t, isTime := x.(time.Time); isTime && t.Nanosecond()%1000 != 0 {
			return nil, false // Postgres rounds to microseconds: let it
		}
		return x, err == nil
	}
	if c.Value == nil {
		switch c.Op {
		case Eq:
			return func(rec map[string]any) (tri, bool) { return truth(get(rec) == nil), true }, true
		case Neq:
			return func(rec map[string]any) (tri, bool) { return truth(get(rec) != nil), true }, true
		}
		return nil, false
	}
	switch c.Op {
	case Eq, Neq:
		want, ok := coerce(c.Value)
		if !ok {
			return nil, false
		}
		eq := c.Op == Eq
		return func(rec map[string]any) (tri, bool) {
			v := get(rec)
			if v == nil {
				if eq {
					return unknown, true // = NULL
				}
				return yes, true // IS DISTINCT FROM
			}
			got, ok := kind.decode(v)
			if !ok {
				return unknown, false
			}
			return truth(kind.compare(got, want) == 0 == eq), true
		}, true
	case Gt, Gte, Lt, Lte:
		if kind == kindText || kind == kindBool || kind == kindID {
			return nil, false // text order is the database's collation
		}
		want, ok := coerce(c.Value)
		if !ok {
			return nil, false
		}
		op := c.Op
		return func(rec map[string]any) (tri, bool) {
			v := get(rec)
			if v == nil {
				return unknown, true
			}
			got, ok := kind.decode(v)
			if !ok {
				return unknown, false
			}
			d := kind.compare(got, want)
			return truth(op == Gt && d > 0 || op == Gte && d >= 0 || op == Lt && d < 0 || op == Lte && d <= 0), true
		}, true
	case In, NotIn:
		items, ok := c.Value.([]any)
		if !ok {
			return nil, false
		}
		set := make([]any, len(items))
		for i, it := range items {
			if set[i], ok = coerce(it); !ok || it == nil {
				return nil, false
			}
		}
		in := c.Op == In
		return func(rec map[string]any) (tri, bool) {
			v := get(rec)
			if v == nil {
				if in {
					return unknown, true // NULL = ANY(...)
				}
				return yes, true // IS NULL OR ...
			}
			got, ok := kind.decode(v)
			if !ok {
				return unknown, false
			}
			found := slices.ContainsFunc(set, func(w any) bool { return kind.compare(got, w) == 0 })
			return truth(found == in), true
		}, true
	case Contains, StartsWith, EndsWith:
		if kind != kindText {
			return nil, false
		}
		want, ok := c.Value.(string)
		if !ok {
			return nil, false
		}
		test := map[Op]func(string, string) bool{Contains: strings.Contains, StartsWith: strings.HasPrefix, EndsWith: strings.HasSuffix}[c.Op]
		return func(rec map[string]any) (tri, bool) {
			v := get(rec)
			if v == nil {
				return unknown, true
			}
			s, ok := v.(string)
			if !ok {
				return unknown, false
			}
			return truth(test(s, want)), true
		}, true
	}
	return nil, false
}

func truth(b bool) tri {
	if b {
		return yes
	}
	return no
}

// valueKind is how a field's values decode from an event's JSON and
// compare with a filter's coerced operand (schema.CoerceElement's types).
type valueKind int8

const (
	kindText valueKind = iota
	kindID
	kindInt
	kindFloat
	kindBool
	kindTime
)

func (k valueKind) decode(v any) (any, bool) {
	switch k {
	case kindText, kindID:
		s, ok := v.(string)
		return s, ok
	case kindInt:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		i, err := n.Int64()
		return i, err == nil
	case kindFloat:
		n, ok := v.(json.Number)
		if !ok {
			return nil, false
		}
		f, err := n.Float64()
		return f, err == nil
	case kindBool:
		b, ok := v.(bool)
		return b, ok
	case kindTime:
		s, ok := v.(string)
		if !ok {
			return nil, false
		}
		t, err := schema.ParseTimestamp(s)
		return t, err == nil
	}
	return nil, false
}

// compare orders a decoded value against an operand: <0, 0, >0 (only 0
// and non-zero are meaningful for text, ids and booleans).
func (k valueKind) compare(a, b any) int {
	switch k {
	case kindText:
		return strings.Compare(a.(string), b.(string))
	case kindID:
		return strings.Compare(strings.ToLower(a.(string)), b.(string)) // operands are canonical (lower case)
	case kindInt:
		return cmp.Compare(a.(int64), b.(int64))
	case kindFloat:
		return cmp.Compare(a.(float64), b.(float64))
	case kindBool:
		if a.(bool) == b.(bool) {
			return 0
		}
		return 1
	case kindTime:
		return a.(time.Time).Compare(b.(time.Time))
	}
	return 1
}

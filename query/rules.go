package query

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// End-user rules: row rules and field lists, compiled into the one
// statement of every read.
//
// The compiler made by WithRules holds the rules of one set of roles (a
// principal's auth.Principal.RoleSet). Every read of an entity table it
// compiles ANDs in the entity's read predicate beside soft delete's
// (visible): the root rows of a get, list, count, aggregate or vector
// search, the records a relationship selection nests, and the related
// records of a _some/_none/_every predicate of the caller's filter. So a
// hidden row is never returned, counted, aggregated, ranked, nor tested
// by a filter that could reveal it.
//
// Several roles: a record is readable when any role's read rule admits it
// (OR); a role without a read rule on an entity admits all its records, so
// the entity is then unrestricted. Inside a rule, relationship conditions
// see the related records soft delete lets them see, without the related
// entity's own rules (a rule is the role's definition, not a request; and
// two entities' rules naming each other would never end).
//
// Variables ($user.id, $user.roles, $user.claims.<path>) are bound values,
// never SQL text: a condition on a variable compiles to a placeholder
// whose bound value is a Param, which the executor (package records)
// replaces with the principal's value (BindParams). So one statement text
// serves every principal of a role set. A variable the principal lacks,
// or whose value does not fit the field, binds NULL, and the condition
// holding it is false (deny): "($n IS NOT NULL AND <condition>)".
//
// Field lists: fields outside a role's read list are left out of every
// record the compiler selects without an explicit selection; naming one
// explicitly (a selection, a filter, an order, a distinctOn, a group or an
// aggregate) is FORBIDDEN naming the field. Rules themselves may name any
// field (an owner rule reads ownerId whether or not the role may).

// Var is a rule variable: "$user.id", "$user.roles" or
// "$user.claims.<path>".
type Var string

// Variables.
const (
	VarUserID    Var = "$user.id"
	VarUserRoles Var = "$user.roles"
	// VarClaimsPrefix begins a claim variable: "$user.claims.org.id".
	VarClaimsPrefix = "$user.claims."
)

// Param is a bound value known only per request: the value of a rule
// variable, coerced as the condition holding it coerces literals. A
// Statement's Args hold a Param where a variable binds; BindParams replaces
// it before the statement runs.
type Param struct {
	template any // a Var, or a []any holding Vars
	coerce   func(v any) (any, bool)
	// entity and field, when set: the value is compared by equality to
	// this STRING field's column (`field = <variable>`), see TextEquality.
	entity, field string
}

// TextEquality reports the entity and STRING field whose equality to the
// variable p binds (`ownerId = $user.id`), when that is what p binds.
// Postgres estimates such a condition from the column's statistics alone,
// alike for every value outside the column's most common ones (package
// records keys its row estimates by that).
func (p Param) TextEquality() (entity, field string, ok bool) {
	return p.entity, p.field, p.entity != ""
}

// Bind returns the value to bind for a principal whose variables lookup
// returns (nil, a SQL NULL, when a variable is missing or its value does
// not fit).
func (p Param) Bind(lookup func(Var) (any, bool)) any {
	v, ok := substitute(p.template, lookup)
	if !ok || v == nil {
		return nil
	}
	c, ok := p.coerce(v)
	if !ok {
		return nil
	}
	return c
}

// HasParams reports whether args hold a Param.
func HasParams(args []any) bool {
	for _, a := range args {
		if _, ok := a.(Param); ok {
			return true
		}
	}
	return false
}

// OnlyParams reports whether every value of args is a Param (a statement
// whose other values are all supplied per call may keep its text and
// these).
func OnlyParams(args []any) bool {
	for _, a := range args {
		if _, ok := a.(Param); !ok {
			return false
		}
	}
	return true
}

// BindParams returns args with every Param bound through lookup (args
// itself when it holds none).
func BindParams(args []any, lookup func(Var) (any, bool)) []any {
	if !HasParams(args) {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		if p, ok := a.(Param); ok {
			out[i] = p.Bind(lookup)
		} else {
			out[i] = a
		}
	}
	return out
}

func substitute(v any, lookup func(Var) (any, bool)) (any, bool) {
	switch v := v.(type) {
	case Var:
		x, ok := lookup(v)
		return normalize(x), ok
	case []any:
		out := make([]any, 0, len(v))
		for _, it := range v {
			x, ok := substitute(it, lookup)
			if !ok {
				return nil, false
			}
			if l, many := x.([]any); many { // $user.roles inside a list
				out = append(out, l...)
				continue
			}
			out = append(out, x)
		}
		return out, true
	}
	return v, true
}

// normalize makes a claim's JSON value one the coercions take (numbers as
// json.Number, as filters decode them).
func normalize(v any) any {
	switch x := v.(type) {
	case float64:
		return json.Number(strconv.FormatFloat(x, 'f', -1, 64))
	case int:
		return json.Number(strconv.Itoa(x))
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = normalize(s)
		}
		return out
	}
	return v
}

// hasVar reports whether a condition's value holds a variable.
func hasVar(v any) bool {
	switch v := v.(type) {
	case Var:
		return true
	case []any:
		for _, it := range v {
			if _, ok := it.(Var); ok {
				return true
			}
		}
	}
	return false
}

// varCond compiles a condition whose value holds variables: the
// condition as a sample value of the field's type would compile (which
// checks the operator and type), with that value's placeholder bound to a
// Param that coerces the principal's value the same way.
func (s *scope) varCond(r ref, op Op, v any) (string, error) {
	a := s.b.a
	n := len(a.list)
	sample := sampleValue(r, op, v)
	sql, err := s.cond(r, op, sample)
	if err != nil {
		return "", err
	}
	if len(a.list) != n+1 {
		return "", fieldErr(s.path, r.name, "a variable cannot be the operand of %s", opName(op))
	}
	ph := a.last
	c, path, ent, rel, tbl := s.b.c, s.path, s.ent, s.rel, s.tbl
	p := Param{template: v}
	if _, one := v.(Var); one && op == Eq && rel == nil && s.aliases == nil && ent != nil && !r.id && !r.f.List && r.f.Type == schema.String {
		p.entity, p.field = ent.Name, r.name
	}
	p.coerce = func(x any) (any, bool) {
		if (op == In || op == NotIn) && !isSlice(x) {
			x = []any{x}
		}
		var sa Args
		ss := &scope{b: &builder{c: c, a: &sa}, path: path, ent: ent, rel: rel, tbl: tbl}
		if _, err := ss.cond(r, op, x); err != nil || len(sa.list) != 1 {
			return nil, false
		}
		return sa.list[0], true
	}
	a.list[n] = p
	return "(" + ph + " IS NOT NULL AND " + sql + ")", nil
}

func isSlice(v any) bool { _, ok := v.([]any); return ok }

// sampleValue is v with its variables replaced by a value of r's type.
func sampleValue(r ref, op Op, v any) any {
	one := sampleOf(r)
	if l, ok := v.([]any); ok {
		out := make([]any, len(l))
		for i, it := range l {
			if _, isVar := it.(Var); isVar {
				out[i] = one
			} else {
				out[i] = it
			}
		}
		return out
	}
	if op == In || op == NotIn || r.f.List && (op == Eq || op == Neq) {
		return []any{one}
	}
	return one
}

func sampleOf(r ref) any {
	if r.id {
		return "00000000-0000-7000-8000-000000000000"
	}
	switch r.f.Type {
	case schema.Integer, schema.Number:
		return json.Number("0")
	case schema.Boolean:
		return true
	case schema.Timestamp:
		return "2000-01-01T00:00:00Z"
	case schema.Date:
		return "2000-01-01"
	case schema.Enum:
		if len(r.f.Values) > 0 {
			return r.f.Values[0]
		}
	case schema.File:
		return "00000000-0000-7000-8000-000000000000"
	case schema.JSON:
		return map[string]any{}
	}
	return "x"
}

// EntityRules are one role's rules on one entity; a nil filter is no rule.
type EntityRules struct {
	Read        Filter
	CreateCheck Filter
	Preset      map[string]any // field → value (a value may be a Var)
	UpdateWhere Filter
	UpdateCheck Filter
	Delete      Filter
	// ReadFields and WriteFields, when not nil, are the only fields the
	// role may read (id, createdAt and updatedAt always) and write.
	ReadFields, WriteFields []string
}

// RoleRules are one role's rules, parsed against the schema version the
// compiler is for (package roles builds them).
type RoleRules struct {
	Name     string
	Entities map[string]*EntityRules
}

// WriteRules are the rules of a role set on writes to one entity, combined
// across roles (see Compiler.WriteRules). A nil filter is no restriction.
type WriteRules struct {
	Entity      string
	CreateCheck Filter
	Preset      map[string]any
	UpdateWhere Filter
	UpdateCheck Filter
	Delete      Filter
	// Writable, when not nil, holds the only fields that may be written.
	Writable map[string]bool
}

// rules is the combined form the compiler keeps.
type rules struct {
	read     map[string][]Filter        // entity → filters (OR); absent: unrestricted
	readable map[string]map[string]bool // entity → fields; absent: all
	write    map[string]*WriteRules
}

// WithRules returns a copy of c that applies the rules of roles (one
// principal's roles). Callers keep the copy per schema version and role
// set (it is part of what compiled SQL depends on).
func (c *Compiler) WithRules(roles []RoleRules) *Compiler {
	cc := *c
	r := &rules{read: map[string][]Filter{}, readable: map[string]map[string]bool{}, write: map[string]*WriteRules{}}
	for i := range c.def.Entities {
		e := &c.def.Entities[i]
		var reads []Filter
		unrestricted, allFields, allWrite := false, false, false
		readable, writable := map[string]bool{}, map[string]bool{}
		w := &WriteRules{Entity: e.Name}
		var creates, updWhere, updCheck, deletes []Filter
		createAll, updWhereAll, updCheckAll, deleteAll := false, false, false, false
		for _, role := range roles {
			er := role.Entities[e.Name]
			if er == nil {
				er = &EntityRules{}
			}
			if er.Read == nil {
				unrestricted = true
			} else {
				reads = append(reads, er.Read)
			}
			if er.ReadFields == nil {
				allFields = true
			}
			for _, f := range er.ReadFields {
				readable[f] = true
			}
			if er.WriteFields == nil {
				allWrite = true
			}
			for _, f := range er.WriteFields {
				writable[f] = true
			}
			add := func(list *[]Filter, all *bool, f Filter) {
				if f == nil {
					*all = true
				} else {
					*list = append(*list, f)
				}
			}
			add(&creates, &createAll, er.CreateCheck)
			add(&updWhere, &updWhereAll, er.UpdateWhere)
			add(&updCheck, &updCheckAll, er.UpdateCheck)
			add(&deletes, &deleteAll, er.Delete)
			for _, k := range sortedKeys(er.Preset) {
				if w.Preset == nil {
					w.Preset = map[string]any{}
				}
				if _, set := w.Preset[k]; !set { // the first role (by name) setting a field wins
					w.Preset[k] = er.Preset[k]
				}
			}
		}
		if len(roles) == 0 {
			continue
		}
		if !unrestricted {
			r.read[e.Name] = reads
		}
		if !allFields {
			readable[schema.ColID] = true
			readable[schema.ColCreatedAt] = true
			readable[schema.ColUpdatedAt] = true
			readable[schema.ColDeletedAt] = true
			r.readable[e.Name] = readable
		}
		or := func(list []Filter, all bool) Filter {
			if all {
				return nil
			}
			return Or(list)
		}
		w.CreateCheck = or(creates, createAll)
		w.UpdateWhere = or(updWhere, updWhereAll)
		w.UpdateCheck = or(updCheck, updCheckAll)
		w.Delete = or(deletes, deleteAll)
		if !allWrite {
			w.Writable = writable
		}
		if w.CreateCheck != nil || w.UpdateWhere != nil || w.UpdateCheck != nil || w.Delete != nil || w.Preset != nil || w.Writable != nil {
			r.write[e.Name] = w
		}
	}
	cc.rules = r
	return &cc
}

// HasRules reports whether c applies any rule or field list.
func (c *Compiler) HasRules() bool {
	return c.rules != nil && (len(c.rules.read) > 0 || len(c.rules.readable) > 0 || len(c.rules.write) > 0)
}

// WriteRules returns the write rules of entity (nil when writes to it are
// unrestricted).
func (c *Compiler) WriteRules(entity string) *WriteRules {
	if c.rules == nil {
		return nil
	}
	return c.rules.write[entity]
}

// ReadRestricted reports whether entity's records are restricted by a
// read rule.
func (c *Compiler) ReadRestricted(entity string) bool {
	if c.rules == nil {
		return false
	}
	_, ok := c.rules.read[entity]
	return ok
}

// Readable reports whether field name of entity may be read.
func (c *Compiler) Readable(entity, name string) bool {
	if c.rules == nil {
		return true
	}
	m, ok := c.rules.readable[entity]
	return !ok || m[name]
}

// ReadableFields returns the fields of entity the rules let a principal
// read, or nil when it may read all.
func (c *Compiler) ReadableFields(entity string) map[string]bool {
	if c.rules == nil {
		return nil
	}
	return c.rules.readable[entity]
}

// forbiddenField is the FORBIDDEN error of a field outside the read list.
func forbiddenField(path, entity, name, verb string) error {
	return &apperr.Error{Code: apperr.Forbidden,
		Message: "field " + name + " of " + entity + " may not be " + verb + " by the principal's roles (fields." + entity + ".read)",
		Details: []apperr.FieldError{{Field: joinPath(path, name), Message: "is not readable by the principal's roles"}}}
}

// checkReadable refuses a field outside e's read list.
func (b *builder) checkReadable(e *schema.Entity, name, path, verb string) error {
	if b.inRule || b.c.Readable(e.Name, name) {
		return nil
	}
	return forbiddenField(path, e.Name, name, verb)
}

// readSelection is the selection of e's fields a principal may read when
// it selected every field (nil): the readable ones, or nil (all) when the
// entity has no read list.
func (b *builder) readSelection(e *schema.Entity, fields []string, path string) ([]string, error) {
	m := b.c.ReadableFields(e.Name)
	if m == nil || b.inRule {
		return fields, nil
	}
	if fields != nil {
		for _, f := range fields {
			if !m[f] && !schema.IsReserved(f) {
				if _, ok := e.Field(f); ok {
					return nil, forbiddenField(path, e.Name, f, "selected")
				}
			}
		}
		return fields, nil
	}
	out := []string{schema.ColCreatedAt, schema.ColUpdatedAt}
	if e.SoftDelete {
		out = append(out, schema.ColDeletedAt)
	}
	for i := range e.Fields {
		if m[e.Fields[i].Name] {
			out = append(out, e.Fields[i].Name)
		}
	}
	return out, nil
}

// checkOrder refuses sort keys outside e's read list.
func (b *builder) checkOrder(e *schema.Entity, keys []Order, path string) error {
	for _, k := range keys {
		if err := b.checkReadable(e, k.Field, joinPath(path, "orderBy"), "sorted by"); err != nil {
			return err
		}
	}
	return nil
}

// rulePred compiles the filters fs of a rule (OR) on e at alias tbl. A
// rule that no longer compiles against the schema denies ("FALSE").
func (b *builder) rulePred(e *schema.Entity, fs []Filter, tbl, path string) string {
	saved, nodes := b.inRule, b.nodes
	b.inRule = true
	s := &scope{b: b, path: path, ent: e, tbl: tbl, related: true}
	w, err := s.join(fs, " OR ", "FALSE")
	b.inRule, b.nodes = saved, nodes
	if err != nil {
		return "FALSE"
	}
	return w
}

// readRule is e's read predicate at alias tbl ("TRUE" when unrestricted).
func (b *builder) readRule(e *schema.Entity, tbl string) string {
	if b.c.rules == nil || b.inRule {
		return "TRUE"
	}
	fs, ok := b.c.rules.read[e.Name]
	if !ok {
		return "TRUE"
	}
	return b.rulePred(e, fs, tbl, "rules."+e.Name+".read")
}

// ReadRule is entity's read predicate for the records at alias tbl, for
// statements package records composes itself (writes by id: a row the
// principal cannot read is not found), binding its variables into a.
// "TRUE" when the entity is unrestricted.
func (c *Compiler) ReadRule(entity, tbl string, a *Args) string {
	e, ok := c.def.Entity(entity)
	if !ok {
		return "TRUE"
	}
	b := &builder{c: c, a: a, n: 200}
	return b.readRule(e, tbl)
}

// RuleWhere compiles a rule's filter f on entity's records at alias tbl
// (related records as rules see them: without their own rules), binding
// its variables into a; path names the rule in errors.
func (c *Compiler) RuleWhere(entity string, f Filter, tbl, path string, a *Args) (string, error) {
	e, err := c.Entity(entity)
	if err != nil {
		return "", err
	}
	b := &builder{c: c, a: a, n: 300, inRule: true}
	s := &scope{b: b, path: path, ent: e, tbl: tbl, related: true}
	return s.filter(f)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// IsClaimVar reports whether v names a claim and returns its path.
func IsClaimVar(v Var) (string, bool) {
	return strings.CutPrefix(string(v), VarClaimsPrefix)
}

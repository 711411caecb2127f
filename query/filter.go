package query

import (
	"fmt"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// Filter semantics (one definition for REST, GraphQL and subscriptions):
//
//   - $eq / $neq compare with = and IS DISTINCT FROM: {"$neq": "x"} also
//     matches records whose field is null, as a user expects; {"$eq": null}
//     is $isNull true and {"$neq": null} is $isNull false. On list fields
//     the operand is a whole array (exact array equality).
//   - $gt $gte $lt $lte work on ordered types (STRING, TEXT, ENUM, INTEGER,
//     NUMBER, TIMESTAMP, DATE, id, createdAt, updatedAt); timestamps and
//     dates compare as time (the operand is parsed and bound as timestamptz
//     or date), never as text. Null fields never match.
//   - $in / $notIn take an array, bound as one typed array parameter
//     (= ANY($n::type[])). $notIn also matches null fields. On list fields
//     $in means "shares at least one element" (&&, GIN-indexed) and $notIn
//     its negation.
//   - $contains on STRING/TEXT/ENUM is a case-sensitive substring; on list
//     fields it is element membership (@>, GIN-indexed): a scalar operand
//     must be an element, an array operand must be all elements; on JSON it
//     is jsonb containment (@>).
//   - $startsWith / $endsWith are case-sensitive prefix/suffix tests on text
//     (on text lists: any element). The operand is a literal, never a
//     pattern: %, _ and \ are escaped and the test is LIKE ... ESCAPE '\',
//     which a C-collation or text_pattern_ops btree index (prefixes) or a
//     pg_trgm index (substrings, suffixes) can serve.
//   - $isNull takes a boolean.
//   - VECTOR fields support only $isNull (use vector search to rank).
//   - Not(term) is true when term is false or unknown (null).

// scope resolves field names for one filter.
type scope struct {
	b       *builder
	path    string // error path prefix, e.g. "where"
	ent     *schema.Entity
	rel     *schema.Relationship // set when filtering relationship properties
	tbl     string
	related bool // whether Related predicates may appear
	// aliases, when set, are the only names (an aggregation's having
	// names its aggregates).
	aliases map[string]ref
}

func (s *scope) resolve(name string) (ref, error) {
	if s.aliases != nil {
		if r, ok := s.aliases[name]; ok {
			return r, nil
		}
		return ref{}, fieldErr(s.path, name, "is not an alias of the aggregates")
	}
	if s.rel != nil {
		if r, ok := propertyRef(s.rel, name, s.tbl); ok {
			return r, nil
		}
		return ref{}, fieldErr(s.path, name, "unknown property of relationship %s", s.rel.Name)
	}
	if r, ok := entityRef(s.ent, name, s.tbl); ok {
		if err := s.b.checkReadable(s.ent, name, s.path, "filtered by"); err != nil {
			return ref{}, err
		}
		return r, nil
	}
	return ref{}, fieldErr(s.path, name, "unknown field on %s", s.ent.Name)
}

// maxFilterNodes bounds the size of a filter tree.
const (
	maxFilterNodes = 500
	maxInItems     = 10000
)

func (s *scope) filter(f Filter) (string, error) {
	s.b.nodes++
	if s.b.nodes > maxFilterNodes {
		return "", apperr.Field(s.path, "filter is too large (at most %d conditions)", maxFilterNodes)
	}
	switch f := f.(type) {
	case nil:
		return "TRUE", nil
	case And:
		return s.join(f, " AND ", "TRUE")
	case Or:
		return s.join(f, " OR ", "FALSE")
	case Not:
		t, err := s.filter(f.Term)
		if err != nil {
			return "", err
		}
		return "NOT coalesce(" + t + ", FALSE)", nil
	case Cond:
		r, err := s.resolve(f.Field)
		if err != nil {
			return "", err
		}
		return s.cond(r, f.Op, f.Value)
	case *Cond:
		return s.filter(*f)
	case Related:
		return s.relatedPred(f)
	case *Related:
		return s.filter(*f)
	}
	return "", apperr.New(apperr.Internal, "query: unknown filter node %T", f)
}

func (s *scope) join(terms []Filter, sep, empty string) (string, error) {
	if len(terms) == 0 {
		return empty, nil
	}
	parts := make([]string, 0, len(terms))
	for _, t := range terms {
		p, err := s.filter(t)
		if err != nil {
			return "", err
		}
		parts = append(parts, p)
	}
	if len(parts) == 1 {
		return parts[0], nil
	}
	return "(" + strings.Join(parts, sep) + ")", nil
}

func opName(op Op) string { return "$" + string(op) }

// comparison is the SQL operator of each ordering Op.
var comparison = map[Op]string{Gt: ">", Gte: ">=", Lt: "<", Lte: "<="}

func (s *scope) cond(r ref, op Op, v any) (string, error) {
	f := r.f
	a := s.b.a
	bad := func(format string, args ...any) (string, error) {
		return "", fieldErr(s.path, r.name, format, args...)
	}
	unsupported := func() (string, error) {
		kind := describeType(f)
		if r.id {
			kind = "id"
		}
		return bad("operator %s is not supported on %s fields", opName(op), kind)
	}
	switch op {
	case IsNull:
		b, ok := v.(bool)
		if !ok {
			return bad("%s must be true or false", opName(op))
		}
		if b {
			return r.expr + " IS NULL", nil
		}
		return r.expr + " IS NOT NULL", nil
	case Eq, Neq, Gt, Gte, Lt, Lte, In, NotIn, Contains, StartsWith, EndsWith:
	default:
		return bad("unknown operator %s", opName(op))
	}
	if f.Type == schema.Vector {
		return bad("operator %s is not supported on VECTOR fields (only $isNull; rank with vector search)", opName(op))
	}
	if hasVar(v) { // rules.go
		return s.varCond(r, op, v)
	}
	if v == nil {
		switch op {
		case Eq:
			return r.expr + " IS NULL", nil
		case Neq:
			return r.expr + " IS NOT NULL", nil
		}
		return bad("%s must not be null", opName(op))
	}
	switch op {
	case Eq, Neq:
		var p string
		switch {
		case f.List:
			c, err := schema.CoerceValue(filterField(f), v)
			if err != nil {
				return bad("%s %s", opName(op), err.Error())
			}
			p = a.Add(c, schema.ColumnType(f))
		case f.Type == schema.JSON:
			j, err := jsonText(v)
			if err != nil {
				return bad("%s %s", opName(op), err.Error())
			}
			p = a.Add(j, "jsonb")
		default:
			c, err := coerceScalar(r, v)
			if err != nil {
				return bad("%s %s", opName(op), err.Error())
			}
			p = a.Add(c, elementType(r))
		}
		if op == Eq {
			return r.expr + " = " + p, nil
		}
		return r.expr + " IS DISTINCT FROM " + p, nil
	case Gt, Gte, Lt, Lte:
		if !f.Ordered() && !r.id {
			return unsupported()
		}
		c, err := coerceScalar(r, v)
		if err != nil {
			return bad("%s %s", opName(op), err.Error())
		}
		return r.expr + " " + comparison[op] + " " + a.Add(c, elementType(r)), nil
	case In, NotIn:
		if f.Type == schema.JSON {
			return unsupported()
		}
		arr, err := coerceArray(r, v, maxInItems)
		if err != nil {
			return bad("%s %s", opName(op), err.Error())
		}
		p := a.Add(arr, elementType(r)+"[]")
		switch {
		case f.List && op == In:
			return r.expr + " && " + p, nil
		case f.List:
			return "(" + r.expr + " IS NULL OR NOT (" + r.expr + " && " + p + "))", nil
		case op == In:
			return r.expr + " = ANY(" + p + ")", nil
		default:
			return "(" + r.expr + " IS NULL OR " + r.expr + " <> ALL(" + p + "))", nil
		}
	case Contains:
		switch {
		case f.List:
			var arr any
			var err error
			if _, many := v.([]any); many {
				arr, err = coerceArray(r, v, maxInItems)
			} else {
				arr, err = coerceArray(r, []any{v}, 1)
			}
			if err != nil {
				return bad("%s %s", opName(op), err.Error())
			}
			return r.expr + " @> " + a.Add(arr, schema.ColumnType(f)), nil
		case f.Type == schema.JSON:
			j, err := jsonText(v)
			if err != nil {
				return bad("%s %s", opName(op), err.Error())
			}
			return r.expr + " @> " + a.Add(j, "jsonb"), nil
		case f.IsText() && !r.id:
			t, err := textArg(v)
			if err != nil {
				return bad("%s %s", opName(op), err.Error())
			}
			return r.expr + ` LIKE ` + a.Add("%"+likeEscape(t)+"%", "text") + ` ESCAPE '\'`, nil
		}
		return unsupported()
	case StartsWith, EndsWith:
		if !f.IsText() || r.id {
			return unsupported()
		}
		t, err := textArg(v)
		if err != nil {
			return bad("%s %s", opName(op), err.Error())
		}
		pat := likeEscape(t) + "%"
		if op == EndsWith {
			pat = "%" + likeEscape(t)
		}
		p := a.Add(pat, "text")
		if f.List {
			return fmt.Sprintf(`EXISTS (SELECT 1 FROM unnest(%s) AS el(v) WHERE el.v LIKE %s ESCAPE '\')`, r.expr, p), nil
		}
		return r.expr + " LIKE " + p + ` ESCAPE '\'`, nil
	}
	return unsupported()
}

// relatedPred compiles a relationship predicate of the current entity.
func (s *scope) relatedPred(rp Related) (string, error) {
	path := joinPath(s.path, rp.Relationship)
	if !s.related || s.ent == nil {
		return "", apperr.Field(path, "relationship predicates are not allowed here")
	}
	rel, dirs, none, err := s.b.c.relationshipFor(s.ent, rp.Relationship, rp.Direction, path)
	if err != nil {
		return "", err
	}
	q := rp.Quantifier
	if q == "" {
		q = Some
	}
	if q != Some && q != None && q != Every {
		return "", apperr.Field(path, "unknown quantifier %q (some, none or every)", q)
	}
	var parts []string
	for _, d := range dirs {
		other := otherEnd(rel, d)
		oe, _ := s.b.c.def.Entity(other)
		x, n := s.b.alias("x"), s.b.alias("n")
		self, far := `"source_id"`, `"target_id"`
		if d == DirIn {
			self, far = far, self
		}
		inner := &scope{b: s.b, path: path, ent: oe, tbl: n, related: true}
		w, err := inner.filter(rp.Where)
		if err != nil {
			return "", err
		}
		if q == Every {
			w = "NOT coalesce(" + w + ", FALSE)"
		}
		w = andVisible(w, s.b.visible(oe, n, false))
		if none { // a direction the entity is not on: no related node
			w += " AND FALSE"
		}
		parts = append(parts, fmt.Sprintf("EXISTS (SELECT 1 FROM %s %s JOIN %s %s ON %s.\"id\" = %s.%s WHERE %s.%s = %s.\"id\" AND %s)",
			s.b.c.Table(schema.RelTable(rel)), x, s.b.c.Table(oe.Name), n, n, x, far, x, self, s.tbl, w))
	}
	switch q {
	case Some:
		return "(" + strings.Join(parts, " OR ") + ")", nil
	default: // None, Every: no related node (failing the condition)
		return "NOT (" + strings.Join(parts, " OR ") + ")", nil
	}
}

// otherEnd is the entity at the far end of rel when walking in direction d.
func otherEnd(rel *schema.Relationship, d Direction) string {
	if d == DirIn {
		return rel.From
	}
	return rel.To
}

// relationshipFor resolves a relationship walked from entity e in direction
// dir and returns the concrete directions to walk (out, in or both). An
// empty direction means whichever end(s) e is on. A direction e is not on
// (out from the target, in from the source) is a valid filter that matches
// nothing: none is true and dirs holds the direction e is on, so the
// caller compiles (and validates, against the entity at the far end) the
// walk as usual and then makes it empty.
func (c *Compiler) relationshipFor(e *schema.Entity, name string, dir Direction, path string) (rel *schema.Relationship, dirs []Direction, none bool, err error) {
	rel, err = c.Relationship(name)
	if err != nil {
		return nil, nil, false, err
	}
	out, in := rel.From == e.Name, rel.To == e.Name
	if !out && !in {
		return nil, nil, false, apperr.Field(path, "relationship %s connects %s to %s, not %s", rel.Name, rel.From, rel.To, e.Name)
	}
	switch dir {
	case DirOut:
		if !out {
			return rel, []Direction{DirIn}, true, nil
		}
		return rel, []Direction{DirOut}, false, nil
	case DirIn:
		if !in {
			return rel, []Direction{DirOut}, true, nil
		}
		return rel, []Direction{DirIn}, false, nil
	case "", DirBoth:
		if out {
			dirs = append(dirs, DirOut)
		}
		if in {
			dirs = append(dirs, DirIn)
		}
		return rel, dirs, false, nil
	}
	return nil, nil, false, apperr.Field(joinPath(path, "direction"), "must be out, in or both")
}

// builder accumulates the state of one statement's compilation.
type builder struct {
	c     *Compiler
	a     *Args
	n     int // alias counter
	nodes int // filter nodes seen
	// tenant is the tenant of file metadata lookups (Selection.TenantID)
	// and tenantArg its placeholder, bound once per statement.
	tenant, tenantArg string
	// ctes are the CTEs of nested relationship selections, in dependency
	// order (see nested).
	ctes []string
	// inRule is set while a rule's own filter compiles (rules.go).
	inRule bool
}

func (b *builder) alias(prefix string) string {
	b.n++
	return fmt.Sprintf("%s%d", prefix, b.n)
}

// Where compiles filter f on entity's records read from table alias tbl,
// binding values into a. path prefixes field names in errors ("where").
// Used by plans here and by callers composing their own statements
// (GraphQL, subscriptions). A nil filter compiles to TRUE.
func (c *Compiler) Where(entity string, f Filter, tbl, path string, a *Args) (string, error) {
	e, err := c.Entity(entity)
	if err != nil {
		return "", err
	}
	b := &builder{c: c, a: a, n: 100}
	s := &scope{b: b, path: path, ent: e, tbl: tbl, related: true}
	return s.filter(f)
}

// EdgeWhere compiles filter f on the declared properties of relationship
// rel for edge rows of alias tbl ("properties" jsonb column).
func (c *Compiler) EdgeWhere(rel string, f Filter, tbl, path string, a *Args) (string, error) {
	r, err := c.Relationship(rel)
	if err != nil {
		return "", err
	}
	b := &builder{c: c, a: a, n: 100}
	s := &scope{b: b, path: path, rel: r, tbl: tbl}
	return s.filter(f)
}

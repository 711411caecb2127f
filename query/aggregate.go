package query

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// AggFunc is an aggregate function.
type AggFunc string

// Aggregate functions (docs/rest.md, Aggregates).
const (
	Count         AggFunc = "count"
	CountDistinct AggFunc = "countDistinct"
	Sum           AggFunc = "sum"
	Avg           AggFunc = "avg"
	Min           AggFunc = "min"
	Max           AggFunc = "max"
)

// AggFuncs lists the aggregate functions, in the order documents show them.
var AggFuncs = []AggFunc{Count, CountDistinct, Sum, Avg, Min, Max}

// Measure is one aggregate of a group, written under Alias: Func over
// Field ("*" only for Count: every record of the group).
type Measure struct {
	Alias string
	Func  AggFunc
	Field string
	Path  string // where the measure came from, for errors ("aggregates.n")
}

// Buckets a TIMESTAMP or DATE group key may be truncated to (date_trunc,
// in UTC).
var Buckets = []string{"hour", "day", "week", "month"}

// GroupKey is one groupBy key: a field, truncated to Bucket when set.
type GroupKey struct {
	Field  string
	Bucket string
}

// Aggregation is a plan of aggregates over one entity's records, grouped
// by GroupBy (no key: one group over every matching record). It compiles
// to {"groups": [{"key": {<field>: value...}, <alias>: value...}]}.
type Aggregation struct {
	Entity   string
	Where    Filter
	GroupBy  []GroupKey
	Measures []Measure
	// Having filters groups by their measures: conditions name aliases.
	Having Filter
	// OrderBy orders groups by aliases or group key fields; default the
	// group keys ascending.
	OrderBy []Order
	Limit   int // 0 means DefaultLimit (groups)
	Offset  int
	// Output, when set, makes the statement's value the JSON array of the
	// groups, each written as these members say (aggoutput.go) instead of
	// {"groups": [{"key": {...}, <alias>: value}]}.
	Output []GroupMember
}

var aliasRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,62}$`)

// MaxMeasures bounds the aggregates and group keys of one plan.
const MaxMeasures = 50

// Aggregate compiles an aggregation into one statement.
func (c *Compiler) Aggregate(p Aggregation) (Statement, error) {
	e, err := c.Entity(p.Entity)
	if err != nil {
		return Statement{}, err
	}
	limit, err := CheckPage(p.Limit, p.Offset)
	if err != nil {
		return Statement{}, err
	}
	if len(p.Measures) > MaxMeasures || len(p.GroupBy) > MaxMeasures {
		return Statement{}, apperr.Field("aggregates", "at most %d aggregates and %d groupBy keys", MaxMeasures, MaxMeasures)
	}
	var a Args
	b := &builder{c: c, a: &a}
	s := &scope{b: b, path: "where", ent: e, tbl: "t", related: true}
	where, err := s.filter(p.Where)
	if err != nil {
		return Statement{}, err
	}
	where = andVisible(where, b.visible(e, "t", true)) // soft-deleted rows count for nothing
	// Group keys: k0, k1... in the select list; their JSON keys are the
	// field names.
	var sel, groupCols, keyJSON []string
	keyExpr := map[string]string{} // field → SQL column of the grouped rows
	for i, k := range p.GroupBy {
		path := fmt.Sprintf("groupBy[%d]", i)
		if err := b.checkReadable(e, k.Field, path, "grouped by"); err != nil {
			return Statement{}, err
		}
		r, ok := entityRef(e, k.Field, "t")
		switch {
		case !ok:
			return Statement{}, apperr.Field(path, "unknown field %q on %s", k.Field, e.Name)
		case !groupable(r):
			return Statement{}, apperr.Field(path, "cannot group by %s field %q", describeType(r.f), k.Field)
		case keyExpr[k.Field] != "":
			return Statement{}, apperr.Field(path, "field %q is grouped twice", k.Field)
		}
		expr := r.expr
		if k.Bucket != "" {
			if r.f.Type != schema.Timestamp && r.f.Type != schema.Date {
				return Statement{}, apperr.Field(path+".bucket", "only TIMESTAMP and DATE fields have buckets; %q is %s", k.Field, describeType(r.f))
			}
			if !slices.Contains(Buckets, k.Bucket) {
				return Statement{}, apperr.Field(path+".bucket", "must be one of %s", strings.Join(Buckets, ", "))
			}
			if r.f.Type == schema.Date {
				expr = fmt.Sprintf("date_trunc(%s, %s)::date", sqlString(k.Bucket), expr)
			} else {
				expr = fmt.Sprintf("date_trunc(%s, %s, 'UTC')", sqlString(k.Bucket), expr)
			}
		}
		col := fmt.Sprintf(`"k%d"`, i)
		sel = append(sel, expr+" AS "+col)
		groupCols = append(groupCols, fmt.Sprint(i+1))
		keyJSON = append(keyJSON, sqlString(k.Field)+", g."+col)
		keyExpr[k.Field] = "g." + col
	}
	// Measures: a0, a1... and their refs for having.
	if len(p.Measures) == 0 {
		return Statement{}, apperr.Field("aggregates", "name at least one aggregate")
	}
	aliases := map[string]ref{}
	var measureJSON []string
	for i, m := range p.Measures {
		path := m.Path
		if path == "" {
			path = "aggregates." + m.Alias
		}
		if !aliasRe.MatchString(m.Alias) || m.Alias == "key" {
			return Statement{}, apperr.Field(path, "an alias is a name of letters, digits and _ (not \"key\")")
		}
		if _, dup := aliases[m.Alias]; dup {
			return Statement{}, apperr.Field(path, "alias %q is used twice", m.Alias)
		}
		if m.Field != "*" && m.Field != "" {
			if err := b.checkReadable(e, m.Field, path, "aggregated"); err != nil {
				return Statement{}, err
			}
		}
		expr, f, err := measure(e, m, path, "t")
		if err != nil {
			return Statement{}, err
		}
		col := fmt.Sprintf(`"a%d"`, i)
		sel = append(sel, expr+" AS "+col)
		aliases[m.Alias] = ref{name: m.Alias, expr: expr, f: f}
		measureJSON = append(measureJSON, sqlString(m.Alias)+", g."+col)
		keyExpr["\x00"+m.Alias] = "g." + col
	}
	hs := &scope{b: b, path: "having", aliases: aliases}
	having, err := hs.filter(p.Having)
	if err != nil {
		return Statement{}, err
	}
	// Order: by aliases or group keys (inner: their expressions; outer:
	// the grouped rows' columns).
	var inner, outer []string
	for i, o := range p.OrderBy {
		dir := " ASC"
		if o.Desc {
			dir = " DESC"
		}
		if r, ok := aliases[o.Field]; ok {
			inner = append(inner, r.expr+dir)
			outer = append(outer, keyExpr["\x00"+o.Field]+dir)
			continue
		}
		col, ok := keyExpr[o.Field]
		if !ok {
			return Statement{}, apperr.Field(fmt.Sprintf("orderBy[%d]", i), "%q is neither an aggregate alias nor a groupBy field", o.Field)
		}
		n := strings.TrimPrefix(col, "g.")
		inner = append(inner, n+dir)
		outer = append(outer, col+dir)
	}
	if len(p.OrderBy) == 0 {
		for i := range p.GroupBy {
			inner = append(inner, fmt.Sprintf(`"k%d" ASC`, i))
			outer = append(outer, fmt.Sprintf(`g."k%d" ASC`, i))
		}
	}
	q := fmt.Sprintf("SELECT %s FROM %s t WHERE %s", strings.Join(sel, ", "), c.Table(e.Name), where)
	if len(groupCols) > 0 {
		q += " GROUP BY " + strings.Join(groupCols, ", ")
	}
	if having != "TRUE" {
		q += " HAVING " + having
	}
	if len(inner) > 0 {
		q += " ORDER BY " + strings.Join(inner, ", ")
	}
	q += b.limit(limit, p.Offset)
	keyObj := "'{}'::json"
	if len(keyJSON) > 0 {
		keyObj = "json_build_object(" + strings.Join(keyJSON, ", ") + ")"
	}
	obj := "json_build_object('key', " + keyObj + ", " + strings.Join(measureJSON, ", ") + ")"
	if p.Output != nil {
		if obj, err = groupObject(p.Output, keyExpr, "output"); err != nil {
			return Statement{}, err
		}
	}
	agg := "json_agg(" + obj
	if len(outer) > 0 {
		agg += " ORDER BY " + strings.Join(outer, ", ")
	}
	agg += ")"
	sql := fmt.Sprintf("SELECT json_build_object('groups', coalesce(%s, '[]'::json)) FROM (%s) g", agg, q)
	if p.Output != nil {
		sql = fmt.Sprintf("SELECT coalesce(%s, '[]'::json) FROM (%s) g", agg, q)
	}
	return Statement{SQL: sql, Args: a.List(), Budgeted: true}, nil
}

// groupable reports whether records can be grouped by r: scalar fields
// other than JSON, VECTOR and FILE, and the system timestamps.
func groupable(r ref) bool {
	if r.id || r.f.List {
		return false
	}
	switch r.f.Type {
	case schema.JSON, schema.Vector, schema.File:
		return false
	}
	return true
}

// measure renders an aggregate and the synthetic field its value has
// (having compares it as that type).
func measure(e *schema.Entity, m Measure, path, tbl string) (string, *schema.Field, error) {
	integer := &schema.Field{Name: m.Alias, Type: schema.Integer}
	number := &schema.Field{Name: m.Alias, Type: schema.Number}
	if m.Func == Count && m.Field == "*" {
		return "count(*)", integer, nil
	}
	if !slices.Contains(AggFuncs, m.Func) {
		return "", nil, apperr.Field(path, "unknown aggregate %q (count, countDistinct, sum, avg, min, max)", m.Func)
	}
	r, ok := entityRef(e, m.Field, tbl)
	if !ok {
		return "", nil, apperr.Field(path, "unknown field %q on %s", m.Field, e.Name)
	}
	if r.f.Type == schema.JSON || r.f.Type == schema.Vector {
		return "", nil, apperr.Field(path, "cannot aggregate %s field %q", describeType(r.f), m.Field)
	}
	switch m.Func {
	case Count:
		return "count(" + r.expr + ")", integer, nil
	case CountDistinct:
		if r.f.List {
			return "", nil, apperr.Field(path, "cannot count distinct values of %s field %q", describeType(r.f), m.Field)
		}
		return "count(DISTINCT " + r.expr + ")", integer, nil
	case Sum, Avg:
		if r.f.List || (r.f.Type != schema.Integer && r.f.Type != schema.Number) {
			return "", nil, apperr.Field(path, "%s needs an INTEGER or NUMBER field; %q is %s", m.Func, m.Field, describeType(r.f))
		}
		if m.Func == Avg {
			return "avg(" + r.expr + ")::double precision", number, nil
		}
		if r.f.Type == schema.Integer { // bigint: the sum is numeric, an integer in JSON
			return "sum(" + r.expr + ")", integer, nil
		}
		return "sum(" + r.expr + ")", number, nil
	default: // Min, Max
		if !r.f.Ordered() {
			return "", nil, apperr.Field(path, "%s needs a sortable field; %q is %s", m.Func, m.Field, describeType(r.f))
		}
		f := *r.f
		f.Name = m.Alias
		return string(m.Func) + "(" + r.expr + ")", &f, nil
	}
}

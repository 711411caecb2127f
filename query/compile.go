package query

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// Compiler compiles plans against one schema version stored in one Postgres
// schema. It is immutable and safe for concurrent use.
type Compiler struct {
	def      *schema.Definition
	pg       string
	vectorEf int // the connections' hnsw.ef_search; 0 means db.DefaultVectorEfSearch
	// withDeleted shows the soft-deleted records of a statement's root
	// entity (see WithDeleted).
	withDeleted bool
	// rules are the end-user rules applied (see WithRules); nil: none.
	rules *rules
}

// New returns a compiler for def, whose tables live in Postgres schema pg.
func New(def *schema.Definition, pg string) *Compiler { return &Compiler{def: def, pg: pg} }

// WithVectorEfSearch returns a copy of c for connections that run with
// hnsw.ef_search = ef (db.WithVectorEfSearch); 0 means db.DefaultVectorEfSearch.
func (c *Compiler) WithVectorEfSearch(ef int) *Compiler {
	cc := *c
	cc.vectorEf = ef
	return &cc
}

// Table is the quoted, schema-qualified table of an entity or relationship.
func (c *Compiler) Table(name string) string { return schema.QualifiedIdent(c.pg, name) }

// Entity looks up an entity by exact name; NOT_FOUND otherwise.
func (c *Compiler) Entity(name string) (*schema.Entity, error) {
	e, ok := c.def.Entity(name)
	if !ok {
		return nil, apperr.New(apperr.NotFound, "entity %q does not exist in the active schema (names are case-sensitive)", name)
	}
	return e, nil
}

// Relationship looks up a relationship by exact name; NOT_FOUND otherwise.
func (c *Compiler) Relationship(name string) (*schema.Relationship, error) {
	r, ok := c.def.Relationship(name)
	if !ok {
		return nil, apperr.New(apperr.NotFound, "relationship %q does not exist in the active schema (names are case-sensitive)", name)
	}
	return r, nil
}

// Args accumulates bind parameters; Add returns the placeholder.
type Args struct {
	list []any
	last string // the placeholder Add returned last
	// opaque binds values the planner may not look into (rulewalk.go).
	opaque bool
}

// Add binds v and returns "$n::cast" (or "$n" when cast is empty); while
// opaque, "(SELECT $n::cast)::cast" (the outer cast keeps it an
// expression where a subquery would mean something else, as in ANY(...)).
func (a *Args) Add(v any, cast string) string {
	a.list = append(a.list, v)
	switch {
	case cast == "":
		a.last = fmt.Sprintf("$%d", len(a.list))
	case a.opaque:
		a.last = fmt.Sprintf("(SELECT $%d::%s)::%s", len(a.list), cast, cast)
	default:
		a.last = fmt.Sprintf("$%d::%s", len(a.list), cast)
	}
	return a.last
}

// List returns the bound values.
func (a *Args) List() []any { return a.list }

// Columns is the select list of a record of e read from table alias tbl:
// with no selection (nil) every field, system fields first; with one, the id
// plus the selected fields (createdAt/updatedAt only if selected), user
// fields in schema order.
func (c *Compiler) Columns(e *schema.Entity, fields []string, tbl string) ([]string, error) {
	return columns(e, fields, tbl, "select", "")
}

func columns(e *schema.Entity, fields []string, tbl, path, skip string) ([]string, error) {
	if fields == nil {
		cols := []string{tbl + `."id"`, tbl + `."createdAt"`, tbl + `."updatedAt"`}
		if e.SoftDelete {
			cols = append(cols, tbl+"."+schema.Ident(schema.ColDeletedAt))
		}
		for i := range e.Fields {
			if e.Fields[i].Name != skip {
				cols = append(cols, column(&e.Fields[i], tbl))
			}
		}
		return cols, nil
	}
	// A selection is the id plus the selected fields; the system
	// timestamps only when selected by name.
	cols := []string{tbl + `."id"`}
	want := map[string]bool{}
	for _, f := range fields {
		if f == schema.ColCreatedAt || f == schema.ColUpdatedAt || f == schema.ColDeletedAt && e.SoftDelete {
			want[f] = true
			continue
		}
		if schema.IsReserved(f) {
			continue
		}
		if _, ok := e.Field(f); !ok {
			return nil, apperr.Field(path, "unknown field %q on %s", f, e.Name)
		}
		want[f] = true
	}
	for _, sys := range []string{schema.ColCreatedAt, schema.ColUpdatedAt, schema.ColDeletedAt} {
		if want[sys] {
			cols = append(cols, tbl+"."+schema.Ident(sys))
		}
	}
	for i := range e.Fields {
		if want[e.Fields[i].Name] && e.Fields[i].Name != skip {
			cols = append(cols, column(&e.Fields[i], tbl))
		}
	}
	return cols, nil
}

func column(f *schema.Field, tbl string) string {
	expr := schema.SelectExpr(f, tbl)
	if f.Type == schema.Vector {
		return expr + " AS " + schema.Ident(f.Name)
	}
	return expr
}

// ParseID validates a record id; a malformed id is simply not found.
func ParseID(entity, id string) (string, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return "", apperr.New(apperr.NotFound, "%s %q not found", entity, id)
	}
	return u.String(), nil
}

// Get compiles a read of one record by id (with nested relationship
// selections). The statement returns no row when the record does not exist.
func (c *Compiler) Get(entity, id string, sel Selection) (Statement, error) {
	e, err := c.Entity(entity)
	if err != nil {
		return Statement{}, err
	}
	if id, err = ParseID(entity, id); err != nil {
		return Statement{}, err
	}
	var a Args
	b := &builder{c: c, a: &a}
	src := b.source(sel)
	cols, joins, err := b.record(e, sel, "t", src, "", "", 0)
	if err != nil {
		return Statement{}, err
	}
	byID := andVisible(`t."id" = `+a.Add(id, "uuid"), b.visible(e, "t", true))
	if src == "" {
		sql := fmt.Sprintf(`SELECT row_to_json(r) FROM %s t CROSS JOIN LATERAL (SELECT %s) r WHERE %s`,
			c.Table(e.Name), strings.Join(cols, ", "), byID)
		return Statement{SQL: sql, Args: a.List()}, nil
	}
	page := fmt.Sprintf(`SELECT t.* FROM %s t WHERE %s`, c.Table(e.Name), byID)
	sql := fmt.Sprintf(`%s SELECT row_to_json(r) FROM %s t%s CROSS JOIN LATERAL (SELECT %s) r`,
		b.with(src, page), src, joins, strings.Join(cols, ", "))
	return Statement{SQL: sql, Args: a.List()}, nil
}

// CheckPage validates limit and offset, applying the default limit.
func CheckPage(limit, offset int) (int, error) {
	return checkPage(limit, offset, "")
}

func checkPage(limit, offset int, path string) (int, error) {
	if limit == 0 {
		limit = DefaultLimit
	}
	if limit < 1 || limit > MaxLimit {
		return 0, apperr.Field(joinPath(path, "limit"), "must be between 1 and %d", MaxLimit)
	}
	if offset < 0 {
		return 0, apperr.Field(joinPath(path, "offset"), "must not be negative")
	}
	return limit, nil
}

// limit renders a page's LIMIT (a checked integer, written into the text)
// and OFFSET (bound, and left out when 0). A bound LIMIT keeps Postgres from
// using a generic plan, since it cannot know how many rows the plan must
// produce, so the statement would be planned again on every execution; the
// few limits clients use give few statement texts, while offsets, which
// walk through pages, stay bound to keep the prepared statements few.
func (b *builder) limit(limit, offset int) string {
	s := " LIMIT " + strconv.Itoa(limit)
	if offset > 0 {
		s += " OFFSET " + b.a.Add(offset, "int")
	}
	return s
}

// MaxDepth bounds the nesting of relationship selections.
const MaxDepth = 5

// source names the CTE that will hold the top-level rows of a statement
// selecting sel, or "" when sel nests no relationship selection (the rows
// are then read without a CTE).
func (b *builder) source(sel Selection) string {
	if len(sel.Nested) == 0 {
		return ""
	}
	return b.alias("q")
}

// with renders the WITH clause of a statement with nested selections: the
// top-level rows (page) as CTE src, then the CTEs of the nested levels.
func (b *builder) with(src, page string) string {
	return "WITH " + src + " AS (" + page + "), " + strings.Join(b.ctes, ", ")
}

// record renders the select list of a record of e read from alias tbl,
// whose rows are those of CTE src (needed only when sel nests relationship
// selections). Each nested selection is computed once per distinct record
// id in src (see nested) and looked up by id: joins are the LEFT JOINs to
// append to the FROM clause that reads tbl, before the lateral select.
// skip omits one user field (shadowed by edge members).
func (b *builder) record(e *schema.Entity, sel Selection, tbl, src, path, skip string, depth int) (cols []string, joins string, err error) {
	if sel.Output != nil {
		return b.output(e, sel, tbl, src, path, depth)
	}
	fields, err := b.readSelection(e, sel.Fields, joinPath(path, "select")) // rules.go
	if err != nil {
		return nil, "", err
	}
	cols, err = columns(e, fields, tbl, joinPath(path, "select"), skip)
	if err != nil {
		return nil, "", err
	}
	if sel.TenantID != "" {
		if err := b.setTenant(sel.TenantID); err != nil {
			return nil, "", err
		}
	}
	if len(sel.Nested) == 0 && len(sel.Files) == 0 && len(sel.Aggregates) == 0 {
		return cols, "", nil
	}
	taken := map[string]bool{schema.ColID: true, schema.ColCreatedAt: true, schema.ColUpdatedAt: true}
	for i := range e.Fields {
		taken[e.Fields[i].Name] = true
	}
	for i, ra := range sel.Aggregates { // relaggregate.go
		apath := fmt.Sprintf("%s[%d]", joinPath(path, "aggregates"), i)
		if ra.Key == "" || taken[ra.Key] {
			return nil, "", apperr.Field(apath, "key %q is empty or already used by a field or another selection", ra.Key)
		}
		taken[ra.Key] = true
		sub, err := b.relAggregate(e, ra, tbl, apath)
		if err != nil {
			return nil, "", err
		}
		cols = append(cols, sub+" AS "+quoteAlias(ra.Key))
	}
	for i, fm := range sel.Files {
		fpath := fmt.Sprintf("%s[%d]", joinPath(path, "files"), i)
		f, ok := e.Field(fm.Field)
		if !ok || f.Type != schema.File {
			return nil, "", apperr.Field(fpath, "%q is not a FILE field of %s", fm.Field, e.Name)
		}
		key := fm.Key
		if key == "" {
			key = f.Name + "File"
		}
		if taken[key] {
			return nil, "", apperr.Field(fpath, "key %q is already used by a field or another selection", key)
		}
		taken[key] = true
		sub, err := b.fileMeta(f, tbl)
		if err != nil {
			return nil, "", err
		}
		cols = append(cols, sub+" AS "+quoteAlias(key))
	}
	if len(sel.Nested) == 0 {
		return cols, "", nil
	}
	if depth >= MaxDepth {
		return nil, "", apperr.Field(path, "relationship selections nest at most %d levels deep", MaxDepth)
	}
	for i, n := range sel.Nested {
		npath := fmt.Sprintf("%s[%d]", joinPath(path, "traverse"), i)
		key := n.Key
		if key == "" {
			key = n.Relationship
		}
		if taken[key] || key == "" {
			return nil, "", apperr.Field(npath, "key %q is already used by a field or another traversal", key)
		}
		taken[key] = true
		j, err := b.nested(e, src, n, npath, depth+1)
		if err != nil {
			return nil, "", err
		}
		x := b.alias("c")
		joins += fmt.Sprintf(` LEFT JOIN %s %s ON %s."_pid" = %s."id"`, j, x, x, tbl)
		cols = append(cols, fmt.Sprintf(`coalesce(%s."_json", '[]'::json) AS %s`, x, quoteAlias(key)))
	}
	return cols, joins, nil
}

// output renders the columns of a selection with Output: exactly its
// members, in order, under their keys.
func (b *builder) output(e *schema.Entity, sel Selection, tbl, src, path string, depth int) (cols []string, joins string, err error) {
	opath := joinPath(path, "output")
	if len(sel.Files) > 0 {
		return nil, "", apperr.Field(opath, "a selection with output takes no files")
	}
	if len(sel.Nested) > 0 && depth >= MaxDepth {
		return nil, "", apperr.Field(path, "relationship selections nest at most %d levels deep", MaxDepth)
	}
	keys := make(map[string]bool, len(sel.Output))
	written := make([]bool, len(sel.Nested))
	aggWritten := make([]bool, len(sel.Aggregates))
	for i, m := range sel.Output {
		mpath := fmt.Sprintf("%s[%d]", opath, i)
		if m.Key == "" || keys[m.Key] {
			return nil, "", apperr.Field(mpath, "key %q is empty or already used", m.Key)
		}
		keys[m.Key] = true
		switch {
		case m.Nested > 0:
			k := m.Nested - 1
			if k >= len(sel.Nested) || written[k] || sel.Nested[k].Edges {
				return nil, "", apperr.Field(mpath, "names no nested selection it may write")
			}
			written[k] = true
			j, err := b.nested(e, src, sel.Nested[k], fmt.Sprintf("%s[%d]", joinPath(path, "traverse"), k), depth+1)
			if err != nil {
				return nil, "", err
			}
			x := b.alias("c")
			joins += fmt.Sprintf(` LEFT JOIN %s %s ON %s."_pid" = %s."id"`, j, x, x, tbl)
			cols = append(cols, fmt.Sprintf(`coalesce(%s."_json", '[]'::json) AS %s`, x, quoteAlias(m.Key)))
		case m.Aggregate > 0: // relaggregate.go
			k := m.Aggregate - 1
			if k >= len(sel.Aggregates) || aggWritten[k] {
				return nil, "", apperr.Field(mpath, "names no relationship aggregate it may write")
			}
			aggWritten[k] = true
			sub, err := b.relAggregate(e, sel.Aggregates[k], tbl, fmt.Sprintf("%s[%d]", joinPath(path, "aggregates"), k))
			if err != nil {
				return nil, "", err
			}
			cols = append(cols, sub+" AS "+quoteAlias(m.Key))
		case m.Field != "" && b.checkReadable(e, m.Field, mpath, "selected") != nil:
			return nil, "", b.checkReadable(e, m.Field, mpath, "selected")
		case m.Field == schema.ColID || m.Field == schema.ColCreatedAt || m.Field == schema.ColUpdatedAt || m.Field == schema.ColDeletedAt && e.SoftDelete:
			cols = append(cols, tbl+"."+schema.Ident(m.Field)+" AS "+quoteAlias(m.Key))
		case m.Field != "":
			f, ok := e.Field(m.Field)
			if !ok || schema.IsReserved(m.Field) {
				return nil, "", apperr.Field(mpath, "unknown field %q on %s", m.Field, e.Name)
			}
			cols = append(cols, schema.SelectExpr(f, tbl)+" AS "+quoteAlias(m.Key))
		default:
			cols = append(cols, sqlString(m.Const)+"::text AS "+quoteAlias(m.Key))
		}
	}
	for k, w := range written {
		if !w {
			return nil, "", apperr.Field(fmt.Sprintf("%s[%d]", joinPath(path, "traverse"), k), "is not written by output")
		}
	}
	for k, w := range aggWritten {
		if !w {
			return nil, "", apperr.Field(fmt.Sprintf("%s[%d]", joinPath(path, "aggregates"), k), "is not written by output")
		}
	}
	return cols, joins, nil
}

// setTenant records the tenant of file metadata lookups; every selection
// of one statement must name the same tenant.
func (b *builder) setTenant(id string) error {
	u, err := uuid.Parse(id)
	if err != nil {
		return apperr.New(apperr.Internal, "selection tenant is not a tenant id")
	}
	switch {
	case b.tenant == "":
		b.tenant = u.String()
	case b.tenant != u.String():
		return apperr.New(apperr.Internal, "selections of one statement name different tenants")
	}
	return nil
}

// fileMeta renders the metadata of the file FILE field f of the record at
// alias tbl holds: a correlated scalar subquery on dds.files, scoped to the
// tenant by a bind parameter and to confirmed files. It yields null when
// the field is null or the file is missing, unconfirmed or another
// tenant's.
func (b *builder) fileMeta(f *schema.Field, tbl string) (string, error) {
	if b.tenant == "" {
		return "", apperr.New(apperr.Internal, "file metadata selected without a tenant (Selection.TenantID)")
	}
	if b.tenantArg == "" {
		b.tenantArg = b.a.Add(b.tenant, "uuid")
	}
	x := b.alias("f")
	return fmt.Sprintf(`(SELECT json_build_object('id', %[1]s."id", 'fileName', %[1]s."file_name", 'mimeType', %[1]s."mime_type", 'sizeBytes', %[1]s."size_bytes", 'createdAt', %[1]s."created_at") FROM "dds"."files" %[1]s WHERE %[1]s."id" = %[2]s.%[3]s AND %[1]s."tenant_id" = %[4]s AND %[1]s."status" = 'confirmed')`,
		x, tbl, schema.Ident(f.Name), b.tenantArg), nil
}

// orderKey is one compiled sort key.
type orderKey struct {
	ref  ref
	desc bool
}

func (k orderKey) sql(expr string, reverse bool) string {
	d := k.desc != reverse
	if d {
		return expr + " DESC"
	}
	return expr + " ASC"
}

// orderKeys resolves sort keys; id is always the last key: the given keys
// up to the first id key, then, when none was given, an id in the
// direction of the last given key (ascending when none was given). The tie
// breaker follows the last key so that an order whose keys share one
// direction is exactly an index's order read forwards or backwards: a
// newest-first list ("createdAt" DESC, "id" DESC) walks the ("createdAt",
// "id") index backwards instead of sorting every row that shares the
// newest timestamp.
func orderKeys(e *schema.Entity, keys []Order, tbl, path string) ([]orderKey, error) {
	out, hasID, err := givenKeys(e, keys, tbl, path)
	if err != nil || hasID {
		return out, err
	}
	idRef, _ := entityRef(e, schema.ColID, tbl)
	desc := len(out) > 0 && out[len(out)-1].desc
	return append(out, orderKey{ref: idRef, desc: desc}), nil
}

// givenKeys resolves the sort keys given, up to and including the first id
// key (id is unique: no key after it can ever decide an order); every key is
// checked all the same. hasID reports whether an id key was given.
func givenKeys(e *schema.Entity, keys []Order, tbl, path string) (out []orderKey, hasID bool, err error) {
	for _, k := range keys {
		r, ok := entityRef(e, k.Field, tbl)
		if !ok {
			return nil, false, apperr.Field(joinPath(path, "orderBy"), "unknown field %q on %s", k.Field, e.Name)
		}
		if !r.id && !r.f.Ordered() && r.f.Type != schema.Boolean {
			return nil, false, apperr.Field(joinPath(path, "orderBy"), "cannot sort by %s field %q", describeType(r.f), k.Field)
		}
		if !hasID {
			out = append(out, orderKey{ref: r, desc: k.Desc})
		}
		hasID = hasID || r.id
	}
	return out, hasID, nil
}

func describeType(f *schema.Field) string {
	if f.List {
		return string(f.Type) + " list"
	}
	return string(f.Type)
}

func renderOrder(keys []orderKey, reverse bool) string {
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k.sql(k.ref.expr, reverse)
	}
	return strings.Join(parts, ", ")
}

// List compiles a list of records into {"items": [...], "count": n}; count
// is present only when IncludeCount is set. The page is selected first
// (filter, search, seek, order, limit, offset) and only its rows are turned
// into JSON (with their nested selections), aggregated in page order.
func (c *Compiler) List(l List) (Statement, error) {
	e, err := c.Entity(l.Entity)
	if err != nil {
		return Statement{}, err
	}
	limit, err := CheckPage(l.Limit, l.Offset)
	if err != nil {
		return Statement{}, err
	}
	var a Args
	b := &builder{c: c, a: &a}
	s := &scope{b: b, path: "where", ent: e, tbl: "t", related: true}
	// A walk of the read rule's index range binds the caller's values
	// opaque, so Postgres keeps its generic plan (rulewalk.go).
	walk := l.Search == "" && len(l.DistinctOn) == 0 && c.walksRuleRange(e, l.OrderBy)
	a.opaque = walk
	where, err := s.filter(l.Where)
	a.opaque = false
	if err != nil {
		return Statement{}, err
	}
	where = andVisible(where, b.visible(e, "t", true))
	order, distinct := l.OrderBy, ""
	if len(l.DistinctOn) > 0 {
		if l.Seek != nil {
			return Statement{}, apperr.Field("distinctOn", "cannot be combined with a cursor")
		}
		if distinct, order, err = distinctOn(e, l.DistinctOn, l.OrderBy); err != nil {
			return Statement{}, err
		}
	}
	var rank string
	if l.Search != "" {
		q, err := searchQuery(b, e, l.Search, &a)
		if err != nil {
			return Statement{}, err
		}
		where = and(where, `t."_search" @@ `+q)
		if len(order) == 0 {
			rank = `ts_rank(t."_search", ` + q + `)`
		}
	}
	if err := b.checkOrder(e, order, ""); err != nil {
		return Statement{}, err
	}
	for i, f := range l.DistinctOn {
		if err := b.checkReadable(e, f, fmt.Sprintf("distinctOn[%d]", i), "selected"); err != nil {
			return Statement{}, err
		}
	}
	keys, err := orderKeys(e, order, "t", "")
	if err != nil {
		return Statement{}, err
	}
	pageWhere := where
	if l.Seek != nil {
		if rank != "" {
			return Statement{}, apperr.Field("search", "cursor pagination needs an explicit orderBy with search")
		}
		p, err := keyset(keys, l.Seek.Values, l.Seek.Backward, &a)
		if err != nil {
			return Statement{}, err
		}
		pageWhere = and(pageWhere, p)
	}
	backward := l.Seek != nil && l.Seek.Backward
	src := b.source(l.Select)
	cols, joins, err := b.record(e, l.Select, "t", src, "", "", 0)
	if err != nil {
		return Statement{}, err
	}
	if src == "" && rank == "" && l.Seek == nil && l.Offset == 0 && !l.IncludeCount && distinct == "" && byID(l.Where) {
		// At most one row matches (GraphQL's get by id): no page to
		// sort or cut, so the statement is as cheap as a get.
		sql := fmt.Sprintf(`SELECT json_build_object('items', coalesce((SELECT json_agg(r) FROM %s t CROSS JOIN LATERAL (SELECT %s) r WHERE %s), '[]'::json))`,
			c.Table(e.Name), strings.Join(cols, ", "), where)
		return Statement{SQL: sql, Args: a.List()}, nil
	}
	innerOrder, aggOrder := renderOrder(keys, backward), renderOrder(keys, false)
	extra := ""
	if rank != "" {
		extra = ", " + rank + ` AS "_rank"`
		innerOrder = `"_rank" DESC, ` + innerOrder
		aggOrder = `t."_rank" DESC, ` + aggOrder
	}
	page := fmt.Sprintf("SELECT %st.*%s FROM %s t WHERE %s ORDER BY %s%s",
		distinct, extra, c.Table(e.Name), pageWhere, innerOrder, b.limit(limit, l.Offset))
	from := "(" + page + ")"
	sql := ""
	if src != "" {
		from, sql = src, b.with(src, page)+" "
	}
	sql += fmt.Sprintf(`SELECT json_build_object('items', (SELECT coalesce(json_agg(r ORDER BY %s), '[]'::json) FROM %s t%s CROSS JOIN LATERAL (SELECT %s) r)`,
		aggOrder, from, joins, strings.Join(cols, ", "))
	switch {
	case l.IncludeCount && distinct != "":
		sql += fmt.Sprintf(`, 'count', (SELECT count(*) FROM (SELECT %s1 FROM %s t WHERE %s) d)`, distinct, c.Table(e.Name), where)
	case l.IncludeCount:
		sql += fmt.Sprintf(`, 'count', (SELECT count(*) FROM %s t WHERE %s)`, c.Table(e.Name), where)
	}
	sql += ")"
	return Statement{SQL: sql, Args: a.List(), Budgeted: true}, nil
}

// Count compiles the number of records matching where (GraphQL
// <entity>Count, connections' totalCount): one row, one bigint column.
func (c *Compiler) Count(entity string, where Filter, search string) (Statement, error) {
	e, err := c.Entity(entity)
	if err != nil {
		return Statement{}, err
	}
	var a Args
	b := &builder{c: c, a: &a}
	s := &scope{b: b, path: "where", ent: e, tbl: "t", related: true}
	w, err := s.filter(where)
	if err != nil {
		return Statement{}, err
	}
	w = andVisible(w, b.visible(e, "t", true))
	if search != "" {
		q, err := searchQuery(b, e, search, &a)
		if err != nil {
			return Statement{}, err
		}
		w = and(w, `t."_search" @@ `+q)
	}
	return Statement{SQL: fmt.Sprintf("SELECT count(*) FROM %s t WHERE %s", c.Table(e.Name), w), Args: a.List(), Budgeted: true}, nil
}

// searchQuery checks a full-text search of e's records and binds it as a
// tsquery (List and Count share it).
func searchQuery(b *builder, e *schema.Entity, s string, a *Args) (string, error) {
	if len(e.SearchableFields()) == 0 {
		return "", apperr.Field("search", "%s has no searchable fields", e.Name)
	}
	for _, f := range e.SearchableFields() { // a search would test a field the principal may not read
		if err := b.checkReadable(e, f.Name, "search", "searched"); err != nil {
			return "", err
		}
	}
	if _, err := textArg(s); err != nil {
		return "", apperr.Field("search", "%s", err.Error())
	}
	if len(s) > 1000 {
		return "", apperr.Field("search", "must be at most 1000 characters")
	}
	return "websearch_to_tsquery('english', " + a.Add(s, "text") + ")", nil
}

// byID reports whether f matches at most one record: id equals a value.
func byID(f Filter) bool {
	c, ok := f.(Cond)
	return ok && c.Field == schema.ColID && c.Op == Eq
}

func and(a, b string) string {
	if a == "TRUE" {
		return b
	}
	return a + " AND " + b
}

package query

import (
	"fmt"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// nested compiles a relationship selection of the parent records (entity
// pe), which are the rows of CTE src, into two CTEs and returns the name of
// the second one:
//
//	pg AS (SELECT p."id" AS "_pid", n.* FROM (SELECT DISTINCT "id" FROM src) p
//	  CROSS JOIN LATERAL (
//	    SELECT n.*, <edge columns> FROM (<edges of p>) e
//	    JOIN <target> n ON n."id" = e."_other"
//	    WHERE <where on n> AND <edgeWhere on e>
//	    ORDER BY <keys> LIMIT l OFFSET o) n),
//	j AS (SELECT n."_pid", json_agg(r ORDER BY <keys>) AS "_json" FROM pg n
//	  <joins of n's own nested selections>
//	  CROSS JOIN LATERAL (SELECT <selected columns>) r GROUP BY n."_pid")
//
// j holds one JSON array per parent id that has related records; the
// parent looks its array up by id (a missing one is '[]'). A page depends
// on the parent's id alone, so each level is computed once per distinct
// parent, however often that parent occurs among the rows above it (a
// category reached from 200 products is expanded once, not 200 times).
// The CTEs of n's own nested selections come between pg and j.
//
// The page is chosen before any JSON is built; the aggregate re-applies the
// page order, so item order is deterministic (ties broken by edge id).
// Default order is the edges' creation order; an orderBy orders by the
// related records' own fields (id included), as a top-level list does.
func (b *builder) nested(pe *schema.Entity, src string, n Nested, path string, depth int) (string, error) {
	c := b.c
	rel, dirs, none, err := c.relationshipFor(pe, n.Relationship, n.Direction, path)
	if err != nil {
		return "", err
	}
	oe, _ := c.def.Entity(otherEnd(rel, dirs[0]))
	limit, err := checkPage(n.Limit, n.Offset, path)
	if err != nil {
		return "", err
	}
	e, t, r, p := b.alias("e"), b.alias("n"), b.alias("r"), b.alias("p")

	// Edges of the parent, tagged with their direction and far end.
	branches := make([]string, len(dirs))
	for i, d := range dirs {
		self, far := `"source_id"`, `"target_id"`
		if d == DirIn {
			self, far = far, self
		}
		x := b.alias("x")
		branches[i] = fmt.Sprintf(`SELECT %s."id", %s."properties", %s."created_at", '%s'::text AS "_dir", %s.%s AS "_other" FROM %s %s WHERE %s.%s = %s."id"`,
			x, x, x, d, x, far, c.Table(schema.RelTable(rel)), x, x, self, p)
		if none { // a direction the parent is not on: no edges
			branches[i] += " AND FALSE"
		}
	}
	edges := strings.Join(branches, " UNION ALL ")

	ns := &scope{b: b, path: joinPath(path, "where"), ent: oe, tbl: t, related: true}
	nw, err := ns.filter(n.Where)
	if err != nil {
		return "", err
	}
	nw = andVisible(nw, b.visible(oe, t, false))
	es := &scope{b: b, path: joinPath(path, "edgeWhere"), rel: rel, tbl: e}
	ew, err := es.filter(n.EdgeWhere)
	if err != nil {
		return "", err
	}
	where := and(nw, ew)

	var innerOrder, aggOrder string
	if len(n.OrderBy) == 0 {
		innerOrder = fmt.Sprintf(`%s."created_at" ASC, %s."id" ASC`, e, e)
		aggOrder = fmt.Sprintf(`%s."_ecreated" ASC, %s."_eid" ASC`, t, t)
	} else {
		// The record's own keys as given (an id key among them orders
		// by the record's id); the edge id breaks the remaining ties, as
		// a record may appear once per edge.
		if err := b.checkOrder(oe, n.OrderBy, path); err != nil {
			return "", err
		}
		keys, _, err := givenKeys(oe, n.OrderBy, t, path)
		if err != nil {
			return "", err
		}
		parts := renderOrder(keys, false) + ", "
		innerOrder = parts + e + `."id" ASC`
		aggOrder = parts + t + `."_eid" ASC`
	}

	cols := fmt.Sprintf(`%s.*, %s."id" AS "_eid", %s."properties" AS "_eprops", %s."created_at" AS "_ecreated", %s."_dir" AS "_edir"`, t, e, e, e, e)
	var page string
	if len(n.OrderBy) == 0 && nw == "TRUE" {
		// The page is decided by the edges alone (their filter and
		// creation order): cut it from the edges, then join only its
		// records. Every edge has its record (the foreign keys cascade),
		// so the join drops none. Joining first would read the record of
		// every edge of the parent before sorting them. Per direction the
		// cut is the first limit + offset entries of the relationship
		// table's (source_id or target_id, created_at, id) index.
		page = fmt.Sprintf(`SELECT %s FROM (SELECT %s.* FROM (%s) %s WHERE %s ORDER BY %s%s) %s JOIN %s %s ON %s."id" = %s."_other"`,
			cols, e, edges, e, ew, innerOrder, b.limit(limit, n.Offset), e, c.Table(oe.Name), t, t, e)
	} else if len(n.OrderBy) == 0 {
		// Under a condition on the records (the related entity's read
		// rule, the caller's where, or both), in the edges' order: walk
		// the edges in their index order and look each record up with the
		// condition (a one-row probe per edge), until the page is full, so
		// a page whose records the condition all admits reads the edges
		// and records the unconditioned page reads (rulewalk.go, "nested
		// pages").
		page = fmt.Sprintf(`SELECT %s FROM (%s) %s CROSS JOIN LATERAL (SELECT %s.* FROM %s %s WHERE %s."id" = %s."_other" AND %s LIMIT 1) %s WHERE %s ORDER BY %s%s`,
			cols, edges, e, t, c.Table(oe.Name), t, t, e, nw, t, ew, innerOrder, b.limit(limit, n.Offset))
	} else {
		page = fmt.Sprintf(`SELECT %s FROM (%s) %s JOIN %s %s ON %s."id" = %s."_other" WHERE %s ORDER BY %s%s`,
			cols, edges, e, c.Table(oe.Name), t, t, e, where, innerOrder, b.limit(limit, n.Offset))
	}
	pg, j := b.alias("pg"), b.alias("j")
	b.ctes = append(b.ctes, fmt.Sprintf(`%s AS (SELECT %s."id" AS "_pid", %s.* FROM (SELECT DISTINCT "id" FROM %s) %s CROSS JOIN LATERAL (%s) %s)`,
		pg, p, t, src, p, page, t))

	skip := ""
	if n.Edges {
		skip = "properties"
	}
	sel, joins, err := b.record(oe, n.Select, t, pg, path, skip, depth)
	if err != nil {
		return "", err
	}
	if n.Edges {
		sel = append(sel,
			fmt.Sprintf(`json_build_object('id', %s."_eid", 'type', %s, 'direction', %s."_edir", 'createdAt', %s."_ecreated") AS "_relationship"`,
				t, sqlString(rel.Name), t, t),
			t+`."_eprops" AS "properties"`)
	}
	b.ctes = append(b.ctes, fmt.Sprintf(`%s AS (SELECT %s."_pid", json_agg(%s ORDER BY %s) AS "_json" FROM %s %s%s CROSS JOIN LATERAL (SELECT %s) %s GROUP BY %s."_pid")`,
		j, t, r, aggOrder, pg, t, joins, strings.Join(sel, ", "), r, t))
	return j, nil
}

// RelationshipList compiles the edges of one record (REST GET
// .../{Entity}/{id}/relationships/{rel}) into {"items": [...]} where each
// item is the far node with "_relationship" and "properties" members (see
// Nested.Edges). n.Relationship names the relationship; n.Edges is implied.
// The statement returns no row when the source record does not exist.
func (c *Compiler) RelationshipList(entity, id string, n Nested) (Statement, error) {
	e, err := c.Entity(entity)
	if err != nil {
		return Statement{}, err
	}
	if _, err := c.Relationship(n.Relationship); err != nil {
		return Statement{}, err
	}
	if id, err = ParseID(entity, id); err != nil {
		return Statement{}, err
	}
	n.Edges = true
	var a Args
	b := &builder{c: c, a: &a}
	src := b.alias("q")
	j, err := b.nested(e, src, n, "", 1)
	if err != nil {
		return Statement{}, err
	}
	page := fmt.Sprintf(`SELECT t.* FROM %s t WHERE %s`, c.Table(e.Name), andVisible(`t."id" = `+a.Add(id, "uuid"), b.visible(e, "t", true)))
	sql := fmt.Sprintf(`%s SELECT json_build_object('items', coalesce(c."_json", '[]'::json)) FROM %s t LEFT JOIN %s c ON c."_pid" = t."id"`,
		b.with(src, page), src, j)
	return Statement{SQL: sql, Args: a.List()}, nil
}

// Keys returns the sort keys a List with orderBy really uses, in order:
// the given keys up to the first "id", ending with an "id" in the direction
// of the last given key (ascending when there is none) when none was
// given. A Seek's Values follow it.
func (c *Compiler) Keys(entity string, orderBy []Order) ([]Order, error) {
	e, err := c.Entity(entity)
	if err != nil {
		return nil, err
	}
	if err := (&builder{c: c}).checkOrder(e, orderBy, ""); err != nil {
		return nil, err
	}
	keys, err := orderKeys(e, orderBy, "t", "")
	if err != nil {
		return nil, err
	}
	out := make([]Order, len(keys))
	for i, k := range keys {
		out[i] = Order{Field: k.ref.name, Desc: k.desc}
	}
	return out, nil
}

// keyset renders the predicate "row comes after (or, backward, before) the
// cursor" for the sort keys, matching Postgres' default null placement
// (NULLS LAST ascending, NULLS FIRST descending). values are the cursor's
// JSON values of each key (nil for a null), the id last.
func keyset(keys []orderKey, values []any, backward bool, a *Args) (string, error) {
	if len(values) != len(keys) {
		return "", apperr.New(apperr.Validation, "invalid cursor: it was made for a different order")
	}
	binds := make([]string, len(keys))
	for i, k := range keys {
		if values[i] == nil {
			continue
		}
		v, err := coerceScalar(k.ref, values[i])
		if err != nil {
			return "", apperr.New(apperr.Validation, "invalid cursor: %s %s", k.ref.name, err.Error())
		}
		binds[i] = a.Add(v, elementType(k.ref))
	}
	if rowComparable(keys, binds) {
		// One direction, no nulls: the row comparison, which Postgres
		// turns into an index condition on an index of the keys (read
		// forwards or backwards), where the expanded form below would
		// filter rows one by one.
		exprs := make([]string, len(keys))
		for i, k := range keys {
			exprs[i] = k.ref.expr
		}
		op := "<"
		if keys[0].desc == backward {
			op = ">"
		}
		return "(" + strings.Join(exprs, ", ") + ") " + op + " (" + strings.Join(binds, ", ") + ")", nil
	}
	var ors []string
	for i, k := range keys {
		var conj []string
		for j := 0; j < i; j++ {
			if binds[j] == "" {
				conj = append(conj, keys[j].ref.expr+" IS NULL")
			} else {
				conj = append(conj, keys[j].ref.expr+" = "+binds[j])
			}
		}
		// Postgres sorts null as larger than every value. greater: the
		// wanted rows have larger keys (ascending forward, descending
		// backward), nulls included.
		greater := k.desc == backward
		var step string
		switch {
		case binds[i] == "" && greater: // nothing is larger than null
			continue
		case binds[i] == "":
			step = k.ref.expr + " IS NOT NULL"
		case greater && notNull(k.ref):
			step = k.ref.expr + " > " + binds[i]
		case greater:
			step = "(" + k.ref.expr + " > " + binds[i] + " OR " + k.ref.expr + " IS NULL)"
		default:
			step = k.ref.expr + " < " + binds[i]
		}
		conj = append(conj, step)
		ors = append(ors, "("+strings.Join(conj, " AND ")+")")
	}
	if len(ors) == 0 {
		return "FALSE", nil
	}
	return "(" + strings.Join(ors, " OR ") + ")", nil
}

// rowComparable reports whether the keyset of keys can be the row
// comparison (k1, k2, ..., id) > (v1, v2, ..., vid): at least two keys, all
// in one direction, none of them ever null and no null in the cursor. With
// mixed directions or nullable keys only the expanded form is correct.
func rowComparable(keys []orderKey, binds []string) bool {
	if len(keys) < 2 {
		return false
	}
	for i, k := range keys {
		if k.desc != keys[0].desc || !notNull(k.ref) || binds[i] == "" {
			return false
		}
	}
	return true
}

// notNull reports whether the column can never be null.
func notNull(r ref) bool {
	return r.id || r.name == schema.ColCreatedAt || r.name == schema.ColUpdatedAt || r.f.Required
}

package query

import (
	"fmt"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// RelAggregate is an aggregate over the records related to each record of
// a selection ("products with their review count and average rating"):
// the member Key of the record is the object {"<alias>": value} of the
// Measures over the far records of Relationship (in Direction) that match
// Where and are visible (soft-deleted far records count for nothing). A
// far record is counted once per edge, as a relationship selection lists
// it once per edge.
//
// It compiles to a correlated scalar subquery in the record's select list,
// in the same statement as the records: per record, one index range of the
// relationship table (by source or target id) joined to the far records.
type RelAggregate struct {
	Key          string
	Relationship string
	Direction    Direction
	Where        Filter
	Measures     []Measure
	// Output, when set, makes the member this object exactly instead of
	// {"<alias>": value}: measures by alias, constants and nested objects
	// (relaggoutput.go; a GroupMember names no KeyField here).
	Output []GroupMember
}

// relAggregate renders the subquery of a for the record of pe at alias tbl.
func (b *builder) relAggregate(pe *schema.Entity, a RelAggregate, tbl, path string) (string, error) {
	c := b.c
	rel, dirs, none, err := c.relationshipFor(pe, a.Relationship, a.Direction, path)
	if err != nil {
		return "", err
	}
	oe, _ := c.def.Entity(otherEnd(rel, dirs[0]))
	if len(a.Measures) == 0 {
		return "", apperr.Field(joinPath(path, "aggregates"), "name at least one aggregate")
	}
	if len(a.Measures) > MaxMeasures {
		return "", apperr.Field(joinPath(path, "aggregates"), "at most %d aggregates", MaxMeasures)
	}
	n := b.alias("n")
	ns := &scope{b: b, path: joinPath(path, "where"), ent: oe, tbl: n, related: true}
	where, err := ns.filter(a.Where)
	if err != nil {
		return "", err
	}
	where = andVisible(where, b.visible(oe, n, false))
	seen := map[string]bool{}
	members := make([]string, 0, len(a.Measures))
	cols := make(map[string]string, len(a.Measures)) // for Output: alias → column of the measures' row
	for _, m := range a.Measures {
		mpath := m.Path
		if mpath == "" {
			mpath = "aggregates." + m.Alias
		}
		mpath = joinPath(path, mpath)
		if !aliasRe.MatchString(m.Alias) || seen[m.Alias] {
			return "", apperr.Field(mpath, "an alias is a name of letters, digits and _, used once")
		}
		seen[m.Alias] = true
		expr, _, err := measure(oe, m, mpath, n)
		if err != nil {
			return "", err
		}
		if a.Output != nil {
			col := fmt.Sprintf(`"a%d"`, len(members))
			cols["\x00"+m.Alias] = col
			members = append(members, expr+" AS "+col)
			continue
		}
		members = append(members, sqlString(m.Alias)+", "+expr)
	}
	var src string
	if len(dirs) == 1 && !none {
		// One direction: the relationship table's rows of the record (an
		// index range) joined to the far records.
		x := b.alias("x")
		self, far := `"source_id"`, `"target_id"`
		if dirs[0] == DirIn {
			self, far = far, self
		}
		src = fmt.Sprintf(`%s %s JOIN %s %s ON %s."id" = %s.%s WHERE %s.%s = %s."id"`,
			c.Table(schema.RelTable(rel)), x, c.Table(oe.Name), n, n, x, far, x, self, tbl)
		if where != "TRUE" {
			src += " AND " + where
		}
	} else {
		// Both directions (a relationship of an entity to itself), or
		// none the record is on: one branch per direction.
		from := make([]string, len(dirs))
		for i, d := range dirs {
			self, far := `"source_id"`, `"target_id"`
			if d == DirIn {
				self, far = far, self
			}
			x := b.alias("x")
			cond := fmt.Sprintf(`%s.%s = %s."id"`, x, self, tbl)
			if none {
				cond += " AND FALSE"
			}
			from[i] = fmt.Sprintf(`SELECT %s.%s AS "_other" FROM %s %s WHERE %s`, x, far, c.Table(schema.RelTable(rel)), x, cond)
		}
		e := b.alias("e")
		src = fmt.Sprintf(`(%s) %s JOIN %s %s ON %s."id" = %s."_other" WHERE %s`,
			strings.Join(from, " UNION ALL "), e, c.Table(oe.Name), n, n, e, where)
	}
	if a.Output != nil {
		g := b.alias("g")
		obj, err := relObject(b, a.Output, cols, g, joinPath(path, "output"))
		if err != nil {
			return "", err
		}
		return fmt.Sprintf(`(SELECT %s FROM (SELECT %s FROM %s) %s)`, obj, strings.Join(members, ", "), src, g), nil
	}
	return fmt.Sprintf(`(SELECT json_build_object(%s) FROM %s)`, strings.Join(members, ", "), src), nil
}

package query

import "github.com/dds-project/dds/schema"

// Soft delete: the built-in row predicate.
//
// The records of an entity with softDelete whose deletedAt is set are
// invisible to every read this package compiles, at every level: the
// top-level rows of a get, list, count or vector search, the records a
// relationship selection nests, and the related records of a _some/_none/
// _every predicate. visible is the one place that says so; every read of
// an entity table ANDs it in, the way end-user row rules will be applied.
//
// A compiler made by WithDeleted shows the deleted records of the entity a
// statement is about (the "root": the records of a get, list, count or
// vector search, the source of a relationship list), never those of
// related entities, whose deleted records stay hidden.

// WithDeleted returns a copy of c whose statements show the soft-deleted
// records of their root entity (?withDeleted=true). Callers keep the copy
// (it is part of what compiled SQL depends on: a statement compiled by it
// must only serve a scope that asked for deleted records).
func (c *Compiler) WithDeleted() *Compiler {
	cc := *c
	cc.withDeleted = true
	return &cc
}

// ShowsDeleted reports whether c was made by WithDeleted.
func (c *Compiler) ShowsDeleted() bool { return c.withDeleted }

// visible is the predicate a record of e read from alias tbl must meet:
// "TRUE" for entities without soft delete (and for the root of a
// WithDeleted compiler), else deletedAt IS NULL.
// Under end-user rules (rules.go) it is also the entity's read rule.
func (b *builder) visible(e *schema.Entity, tbl string, root bool) string {
	v, r := b.c.visible(e, tbl, root), b.readRule(e, tbl)
	if r == "TRUE" {
		return v
	}
	return and(v, r)
}

func (c *Compiler) visible(e *schema.Entity, tbl string, root bool) string {
	if !e.SoftDelete || root && c.withDeleted {
		return "TRUE"
	}
	return tbl + "." + schema.Ident(schema.ColDeletedAt) + " IS NULL"
}

// Visible is the row predicate of entity's records read from alias tbl
// as the root of a statement, for statements package records composes
// itself (writes by id, bulk writes, edge writes): "TRUE" or a condition.
func (c *Compiler) Visible(entity, tbl string) string {
	e, ok := c.def.Entity(entity)
	if !ok {
		return "TRUE"
	}
	return c.visible(e, tbl, true)
}

// Live is the predicate "the record at tbl is not soft-deleted", whatever
// the compiler shows: writes act on live records only.
func (c *Compiler) Live(entity, tbl string) string {
	e, ok := c.def.Entity(entity)
	if !ok || !e.SoftDelete {
		return "TRUE"
	}
	return tbl + "." + schema.Ident(schema.ColDeletedAt) + " IS NULL"
}

// andVisible ANDs the row predicate vis into the condition w, leaving w's
// text unchanged when vis is "TRUE" (entities without soft delete compile
// exactly as before).
func andVisible(w, vis string) string {
	if vis == "TRUE" {
		return w
	}
	return and(w, vis)
}

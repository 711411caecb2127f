package records

import (
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// What the benchmarks need of a scope to measure DDS against its own
// statements run bare (a minimal handler must run the very statement DDS
// runs) and to prepare their data (ANALYZE, seeding, exact-recall
// references, all deliberately raw SQL). Nothing in DDS calls these; its
// surfaces hand Store plans.

// Table is the quoted, schema-qualified table of an entity or
// relationship of the scope's schema.
func (sc *Scope) Table(name string) string { return sc.compiler.Table(name) }

// Returning is the column list DDS's writes return for e's records (alias
// t), as they build it.
func (sc *Scope) Returning(e *schema.Entity) []string {
	ret, _ := sc.compiler.Columns(e, nil, "t")
	return ret
}

// GetStatement is the statement Store.Get compiles for a read by id.
func (sc *Scope) GetStatement(entity, id string, sel query.Selection) (query.Statement, error) {
	return sc.compiler.Get(entity, id, sel)
}

// ListStatement is the statement Store.Query compiles for l.
func (sc *Scope) ListStatement(l query.List) (query.Statement, error) { return sc.compiler.List(l) }

// VectorStatement is the statement Store.VectorSearch compiles for v.
func (sc *Scope) VectorStatement(v query.VectorSearch) (query.Statement, error) {
	return sc.compiler.VectorSearch(v)
}

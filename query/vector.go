package query

import (
	"fmt"
	"strings"

	"github.com/pgvector/pgvector-go"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/schema"
)

// MaxEfSearch is the largest efSearch a search may ask for: pgvector's
// limit for hnsw.ef_search, which the connections' setting obeys too.
const MaxEfSearch = db.MaxVectorEfSearch

// VectorEfSearch is the HNSW candidate list size for a search of topK: at
// least 100 and at least 2×topK, capped at pgvector's 1000. A search without
// its own efSearch runs at the larger of this and the connections'
// hnsw.ef_search (db.DefaultVectorEfSearch unless configured).
func VectorEfSearch(topK int) int {
	ef := 2 * topK
	if ef < 100 {
		ef = 100
	}
	if ef > MaxEfSearch {
		ef = MaxEfSearch
	}
	return ef
}

// VectorSearch compiles a similarity search into a JSON array of
// {"data": {...selected fields}, "score": s} ordered by similarity, where s
// is the cosine similarity 1 - (v <=> query) clamped to [0, 1].
//
// With a where filter, an own efSearch or a topK above half the
// connections' hnsw.ef_search the statement must run in a transaction after
// its Setup statements (SET LOCAL hnsw.ef_search, and):
// "SET LOCAL hnsw.iterative_scan = relaxed_order" makes pgvector (≥ 0.8)
// continue the HNSW scan until topK rows pass Where, so a selective filter
// applied after ranking does not return fewer than topK matches when that
// many exist; relaxed order is re-sorted by exact distance in the outer
// aggregate. Records whose vector is null are never returned.
func (c *Compiler) VectorSearch(v VectorSearch) (Statement, error) {
	e, f, err := c.vectorField(v)
	if err != nil {
		return Statement{}, err
	}
	topK := v.TopK
	if topK == 0 {
		topK = DefaultTopK
	}
	if topK < 1 || topK > MaxTopK {
		return Statement{}, apperr.Field("topK", "must be between 1 and %d", MaxTopK)
	}
	if v.EfSearch != 0 && (v.EfSearch < topK || v.EfSearch > MaxEfSearch) {
		return Statement{}, apperr.Field("efSearch", "must be between topK (%d) and %d", topK, MaxEfSearch)
	}
	vec, err := vectorValue(f, v.Vector)
	if err != nil {
		return Statement{}, err
	}
	var a Args
	b := &builder{c: c, a: &a}
	if err := b.checkReadable(e, f.Name, "", "ranked by"); err != nil {
		return Statement{}, err
	}
	s := &scope{b: b, path: "where", ent: e, tbl: "t", related: true}
	where, err := s.filter(v.Where)
	if err != nil {
		return Statement{}, err
	}
	where = andVisible(where, b.visible(e, "t", true))
	src := b.source(v.Select)
	cols, joins, err := b.record(e, v.Select, "t", src, "", "", 0)
	if err != nil {
		return Statement{}, err
	}
	col := "t." + schema.Ident(f.Name)
	q := a.Add(vec, "vector")
	page := fmt.Sprintf(`SELECT t.*, %s <=> %s AS "_dist" FROM %s t WHERE %s ORDER BY "_dist" LIMIT %d`,
		col, q, c.Table(e.Name), and(where, col+" IS NOT NULL"), topK)
	from, sql := "("+page+")", ""
	if src != "" {
		from, sql = src, b.with(src, page)+" "
	}
	sql += fmt.Sprintf(`SELECT coalesce(json_agg(json_build_object('data', r, 'score', greatest(0, least(1, 1 - t."_dist"))) ORDER BY t."_dist", t."id"), '[]'::json) FROM %s t%s CROSS JOIN LATERAL (SELECT %s) r`,
		from, joins, strings.Join(cols, ", "))
	st := Statement{SQL: sql, Args: a.List()}
	// Connections run with hnsw.ef_search = session (db.Open sets it when
	// it connects): without a filter, an own efSearch or a topK whose
	// VectorEfSearch passes it, a plain HNSW scan needs no transaction (one
	// round trip).
	session := c.vectorEf
	if session == 0 {
		session = db.DefaultVectorEfSearch
	}
	ef := max(session, VectorEfSearch(topK))
	if v.EfSearch != 0 {
		ef = v.EfSearch
	}
	if v.Where != nil || ef != session || c.ReadRestricted(e.Name) {
		// A read rule filters like a where: the iterative scan keeps
		// going until topK visible records are found.
		st.Setup = []string{
			"SET LOCAL hnsw.iterative_scan = relaxed_order",
			fmt.Sprintf("SET LOCAL hnsw.ef_search = %d", ef),
		}
	}
	return st, nil
}

// VectorValue checks the query vector of v against its VECTOR field and
// returns the value VectorSearch binds for it. A statement of a search
// without a where filter or nested selections binds only that value, so a
// caller may keep its text and bind VectorValue's result to it.
func (c *Compiler) VectorValue(v VectorSearch) (any, error) {
	_, f, err := c.vectorField(v)
	if err != nil {
		return nil, err
	}
	return vectorValue(f, v.Vector)
}

func (c *Compiler) vectorField(v VectorSearch) (*schema.Entity, *schema.Field, error) {
	e, err := c.Entity(v.Entity)
	if err != nil {
		return nil, nil, err
	}
	f, ok := e.Field(v.Field)
	if !ok {
		return nil, nil, apperr.Field("field", "unknown field %q on %s", v.Field, e.Name)
	}
	if f.Type != schema.Vector {
		return nil, nil, apperr.Field("field", "%q is a %s field, not a VECTOR field", v.Field, describeType(f))
	}
	return e, f, nil
}

func vectorValue(f *schema.Field, v []any) (any, error) {
	if v == nil {
		return nil, apperr.Field("vector", "is required")
	}
	vec, err := schema.ParseVector(v, f.VectorDimensions)
	if err != nil {
		return nil, apperr.Field("vector", "%s", err.Error())
	}
	return pgvector.NewVector(vec), nil
}

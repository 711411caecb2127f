package records

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/dds-project/dds/query"
)

// VectorSearch ranks records by cosine similarity of a VECTOR field and
// returns [{"data": {...}, "score": s}] (docs/rest.md, Vector search). The compiled statement
// runs in one read-only transaction after SET LOCAL hnsw.iterative_scan, so
// a where filter applied after ranking still yields topK matches when that
// many exist.
func (s *Store) VectorSearch(ctx context.Context, sc *Scope, v query.VectorSearch) (json.RawMessage, error) {
	// Without a filter, an own efSearch, nested selections or an Output the
	// query vector is the only bound value and the fields name the text: it
	// is built once per schema version.
	key := ""
	if v.Where == nil && v.EfSearch == 0 && len(v.Select.Nested) == 0 && len(v.Select.Files) == 0 && len(v.Select.Aggregates) == 0 && v.Select.Output == nil {
		key = fmt.Sprintf("vector\x00%s\x00%s\x00%d\x00%q", v.Entity, v.Field, v.TopK, v.Select.Fields)
		if v.Select.Fields == nil {
			key += "*"
		}
	}
	if key != "" {
		if text, ok := sc.stmts().get(key); ok {
			vec, err := sc.compiler.VectorValue(v)
			if err != nil {
				return nil, err
			}
			return s.run(ctx, sc, v.Entity, query.Statement{SQL: text, Args: []any{vec}})
		}
	}
	st, err := sc.compiler.VectorSearch(v)
	if err != nil {
		return nil, err
	}
	if key != "" && len(st.Args) == 1 && len(st.Setup) == 0 {
		sc.stmts().put(key, st.SQL)
	}
	return s.run(ctx, sc, v.Entity, st)
}

package records

import (
	"context"
	"encoding/json"

	"github.com/dds-project/dds/query"
)

// VectorSearch ranks records by cosine similarity of a VECTOR field and
// returns [{"data": {...}, "score": s}] (docs/rest.md, Vector search). The compiled statement
// runs in one read-only transaction after SET LOCAL hnsw.iterative_scan, so
// a where filter applied after ranking still yields topK matches when that
// many exist.
func (s *Store) VectorSearch(ctx context.Context, sc *Scope, v query.VectorSearch) (json.RawMessage, error) {
	st, err := sc.Compiler.VectorSearch(v)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, sc, v.Entity, st)
}

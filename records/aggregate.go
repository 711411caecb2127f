package records

import (
	"context"
	"encoding/json"

	"github.com/dds-project/dds/query"
)

// Aggregate runs an aggregation (REST .../aggregate, GraphQL
// <plural>Aggregate) as one statement and returns {"groups": [...]}. It is
// a read: the scope's rules apply as for lists, and the row budget and
// statement deadline bound it.
func (s *Store) Aggregate(ctx context.Context, sc *Scope, p query.Aggregation) (json.RawMessage, error) {
	st, err := sc.compiler.Aggregate(p)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, sc, p.Entity, st)
}

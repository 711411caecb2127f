package records

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/db"
)

// WithReplicas sends the store's reads of committed tenant data (get,
// list, query, count, aggregates, vector search, edges, history: every
// statement that runs outside a write) to r's replicas behind its LSN
// barrier, so a read never misses a write acknowledged before it arrived.
// Writes, and reads inside a write's transaction, stay on the primary.
func WithReplicas(r *db.Replicas) Option {
	return func(s *Store) { s.replicas = r }
}

// read runs fn, one read of committed data, where the replicas pick (the
// primary without replicas). When a replica fails it for a reason of its
// own before fn handed anything on (handed false), it runs again on the
// primary: a replica going away costs a read nothing but time.
func (s *Store) read(ctx context.Context, fn func(q *sqlx.DB) (handed bool, err error)) error {
	rd := s.replicas.Pick(ctx, s.db)
	handed, err := fn(rd.DB)
	if err != nil && !handed && rd.Retry(ctx, err) {
		_, err = fn(s.db)
	}
	return err
}

package records

import (
	"context"
	"math"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// EstimateRows is Postgres's estimate of the rows of pg.table (its
// statistics, 0 before the table was first analyzed), read in q: a tenant
// export's progress total, which counting every table first would cost a
// whole scan of each before the export writes anything.
func (s *Store) EstimateRows(ctx context.Context, q sqlx.QueryerContext, pg, table string) (int64, error) {
	var n float64
	err := sqlx.GetContext(ctx, q, &n, `SELECT coalesce(max(c.reltuples), 0) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2 AND c.relkind = 'r'`, pg, table)
	if err != nil {
		return 0, apperr.Wrap(err, "estimate the rows of %s", table)
	}
	return int64(math.Max(n, 0)), nil
}

package records

import (
	"context"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
)

// CommitHook runs inside a write's own transaction, just before it
// commits: what it writes commits exactly when the write does. The API
// records a request's Idempotency-Key this way, so that a retry after an
// answer that never arrived learns whether the first attempt committed.
type CommitHook func(ctx context.Context, tx *sqlx.Tx) error

type commitHookKey struct{}

// WithCommitHook returns ctx carrying hook for every write records makes
// under it.
func WithCommitHook(ctx context.Context, hook CommitHook) context.Context {
	return context.WithValue(ctx, commitHookKey{}, hook)
}

func commitHookFrom(ctx context.Context) CommitHook {
	h, _ := ctx.Value(commitHookKey{}).(CommitHook)
	return h
}

// write runs fn, a write of one statement, directly on the pool; when ctx
// carries a commit hook, fn runs in a transaction that runs the hook and
// commits only if fn succeeded (a write without a hook pays no BEGIN).
func (s *Store) write(ctx context.Context, fn func(q sqlx.QueryerContext) error) error {
	hook := commitHookFrom(ctx)
	if hook == nil {
		return fn(s.db)
	}
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return apperr.Wrap(err, "begin")
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	return s.commit(ctx, tx)
}

// commit runs ctx's commit hook in tx, then commits it.
func (s *Store) commit(ctx context.Context, tx *sqlx.Tx) error {
	if hook := commitHookFrom(ctx); hook != nil {
		if err := hook(ctx, tx); err != nil {
			return err
		}
	}
	return tx.Commit()
}

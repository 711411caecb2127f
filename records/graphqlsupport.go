package records

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Observed returns a store that reports each statement run and Get execute to fn
// before running it (a seam for tests counting statements per request and
// for the benchmark replaying a request's statement); the store it is
// made from is unchanged.
func (s *Store) Observed(fn func(query.Statement)) *Store {
	c := *s
	c.observe = fn
	return &c
}

// EdgeSource returns the source record of edge edgeID of relationship rel
// (the by-id edge writes act on edges of a record). An id that is not a
// UUID or names no edge is NOT_FOUND.
func (s *Store) EdgeSource(ctx context.Context, sc *Scope, rel *schema.Relationship, edgeID string) (string, error) {
	notFound := apperr.New(apperr.NotFound, "%s edge %q not found", rel.Name, edgeID)
	if _, err := uuid.Parse(edgeID); err != nil {
		return "", notFound
	}
	var source string
	q := `SELECT "source_id" FROM ` + sc.compiler.Table(schema.RelTable(rel)) + ` WHERE "id" = $1`
	err := s.db.QueryRowContext(ctx, q, edgeID).Scan(&source)
	if errors.Is(err, sql.ErrNoRows) {
		return "", notFound
	}
	if err != nil {
		return "", MapError(sc, rel.From, err)
	}
	return source, nil
}

// Events reads the events of a tenant among ids, in outbox order, in one
// statement (a notification announces many; for subscriptions).
func (s *Store) Events(ctx context.Context, tenantID string, ids []string) ([]outbox.Event, error) {
	return outbox.ReadMany(ctx, s.db, tenantID, ids)
}

// EventsHighWater is the outbox position of the tenant's newest event: a
// subscription set up now follows only the events after it.
func (s *Store) EventsHighWater(ctx context.Context, tenantID string) (int64, error) {
	return outbox.HighWater(ctx, s.db, tenantID)
}

// Match is a where filter compiled once to test records of an entity that
// are not rows of its table (an event's record), bound as JSON.
type Match struct {
	sql   string
	args  []any             // args[0] is the record's placeholder
	local *query.LocalMatch // nil: only SQL can evaluate it
}

// CompileMatch compiles where on entity for Matches; a bad filter is a
// VALIDATION_ERROR naming it.
func CompileMatch(sc *Scope, entity string, where query.Filter) (*Match, error) {
	var a query.Args
	rec := a.Add(nil, "jsonb")
	w, err := sc.compiler.Where(entity, where, "t", "where", &a)
	if err != nil {
		return nil, err
	}
	local, _ := sc.compiler.Local(entity, where)
	return &Match{
		sql:   fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM jsonb_populate_record(NULL::%s, %s) t WHERE %s)`, sc.compiler.Table(entity), rec, w),
		args:  sc.bind(a.List()), // a Match serves its scope's principal only
		local: local,
	}, nil
}

// MatchesLocally evaluates m in Go on fields (a record decoded with
// UseNumber) when it can (query.Local): ok is false when only Matches can
// answer.
func (m *Match) MatchesLocally(fields map[string]any) (match, ok bool) {
	if m.local == nil {
		return false, false
	}
	return m.local.Eval(fields)
}

// Key is m's equality key (query.EqKey): a subscriber whose filter has
// one can only match events whose record carries it.
func (m *Match) Key() (query.EqKey, bool) {
	if m.local == nil {
		return query.EqKey{}, false
	}
	return m.local.Key()
}

// Matches evaluates m on record (a JSON object of the entity's fields) in
// Postgres, with the query semantics of the filter.
func (s *Store) Matches(ctx context.Context, m *Match, record []byte) (bool, error) {
	args := append([]any{string(record)}, m.args[1:]...)
	var ok bool
	err := s.db.QueryRowContext(ctx, m.sql, args...).Scan(&ok)
	return ok, err
}

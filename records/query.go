package records

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
)

// Query runs a list plan (the REST query endpoint and the GET list share
// it) and returns {"items": [...], "count": n}.
func (s *Store) Query(ctx context.Context, sc *Scope, l query.List) (json.RawMessage, error) {
	st, err := sc.compiler.List(l)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, sc, l.Entity, st)
}

// Count runs the number of entity's records matching where and search
// (GraphQL <entity>Count) and returns it as JSON.
func (s *Store) Count(ctx context.Context, sc *Scope, entity string, where query.Filter, search string) (json.RawMessage, error) {
	st, err := sc.compiler.Count(entity, where, search)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, sc, entity, st)
}

// run executes a compiled statement that returns one JSON value. A
// statement with Setup runs in a read-only transaction after its Setup
// statements. sql.ErrNoRows is returned as is (callers decide what is not
// found).
func (s *Store) run(ctx context.Context, sc *Scope, entity string, st query.Statement) (json.RawMessage, error) {
	var out []byte
	err := s.runFunc(ctx, sc, entity, st, func(raw []byte) error {
		out = bytes.Clone(raw)
		return nil
	})
	return out, err
}

// runFunc is run handing the JSON value to fn where the driver read it,
// without a copy: raw is valid only until fn returns (nil for SQL NULL).
// An error of fn is returned as it is.
func (s *Store) runFunc(ctx context.Context, sc *Scope, entity string, st query.Statement, fn func(raw []byte) error) error {
	if s.observe != nil {
		s.observe(st)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	if err := s.checkBudget(ctx, sc, entity, st); err != nil {
		return err
	}
	return s.read(ctx, func(d *sqlx.DB) (bool, error) { return s.runOn(ctx, d, sc, entity, st, fn) })
}

// runOn is runFunc's statement on d; handed reports whether fn was called
// (a read that handed its result on cannot run again elsewhere).
func (s *Store) runOn(ctx context.Context, d *sqlx.DB, sc *Scope, entity string, st query.Statement, fn func(raw []byte) error) (handed bool, _ error) {
	var q sqlx.QueryerContext = d
	var tx *sqlx.Tx
	if len(st.Setup) > 0 {
		var err error
		if tx, err = d.BeginTxx(ctx, &sql.TxOptions{ReadOnly: true}); err != nil {
			return false, MapError(sc, entity, err)
		}
		defer tx.Rollback()
		// One round trip for every setup statement (simple protocol, no args).
		if _, err := tx.ExecContext(ctx, strings.Join(st.Setup, "; ")); err != nil {
			return false, MapError(sc, entity, err)
		}
		q = tx
	}
	rows, err := q.QueryContext(ctx, st.SQL, sc.bind(st.Args)...)
	if err != nil {
		return false, MapError(sc, entity, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return false, MapError(sc, entity, err)
		}
		return false, sql.ErrNoRows
	}
	var raw sql.RawBytes // the driver's bytes, not a copy
	if err := rows.Scan(&raw); err != nil {
		return false, MapError(sc, entity, err)
	}
	if err := fn(raw); err != nil {
		return true, err
	}
	if err := rows.Close(); err != nil {
		return true, MapError(sc, entity, err)
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return true, commitError(ctx, sc, entity, err)
		}
	}
	return true, nil
}

// notFound turns sql.ErrNoRows into a NOT_FOUND error.
func notFound(err error, format string, args ...any) error {
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.New(apperr.NotFound, format, args...)
	}
	return err
}

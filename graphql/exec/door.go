package exec

import (
	"context"
	"database/sql"
	"errors"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// The door to the tenant's tables: every statement the engine compiles
// with the scope's compiler, and every compiled statement it runs through
// the records store itself, is in this file (the executor's and the live
// feed's, through EventRecord). Everything else reaches the data through
// the records store's own methods (Get, Create, Update, Delete, the
// batches and the edges).

// compiler is the scope's compiler: the statements kept on a prepared
// operation (exact.go) name the compiler they were built with.
func (x *execCtx) compiler() *query.Compiler { return x.sc.Compiler }

// listStatement compiles a list query.
func (x *execCtx) listStatement(l query.List) (query.Statement, error) {
	return x.sc.Compiler.List(l)
}

// countStatement compiles the count of entity's records matching where
// and search.
func (x *execCtx) countStatement(entity string, where query.Filter, search string) (query.Statement, error) {
	return x.sc.Compiler.Count(entity, where, search)
}

// orderKeys is the keyset order of a connection: order, then id.
func (x *execCtx) orderKeys(entity string, order []query.Order) ([]query.Order, error) {
	return x.sc.Compiler.Keys(entity, order)
}

// vectorSearchStatement compiles a vector search.
func (x *execCtx) vectorSearchStatement(v query.VectorSearch) (query.Statement, error) {
	return x.sc.Compiler.VectorSearch(v)
}

// getStatement compiles a get by id with compiler c (the one the caller
// keeps the statement for).
func getStatement(c *query.Compiler, entity, id string, sel query.Selection) (query.Statement, error) {
	return c.Get(entity, id, sel)
}

// query runs one compiled statement through the records store and returns
// its JSON value.
func (x *execCtx) query(st query.Statement, entity string) ([]byte, error) {
	out, err := x.e.store.Run(x.ctx, x.sc, entity, st)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.Wrap(err, "the statement returned no row")
	}
	return out, err
}

// queryFunc runs st like query, handing its JSON value to fn without a
// copy (raw is valid only until fn returns).
func (x *execCtx) queryFunc(st query.Statement, entity string, fn func(raw []byte) error) error {
	err := x.e.store.RunFunc(x.ctx, x.sc, entity, st, fn)
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.Wrap(err, "the statement returned no row")
	}
	return err
}

// runFunc runs st handing its JSON value to fn, its error as the store
// returns it (sql.ErrNoRows when there is no row).
func (x *execCtx) runFunc(st query.Statement, entity string, fn func(raw []byte) error) error {
	return x.e.store.RunFunc(x.ctx, x.sc, entity, st, fn)
}

// EventRecord reads the record id of entity with selection sel (its
// relationships and file metadata), as the live feed shows an event's
// record: the list statement's JSON, {"items": [the record]} or no item
// when the record no longer exists.
func (e *Executor) EventRecord(ctx context.Context, sc *records.Scope, entity string, sel query.Selection, id string) ([]byte, error) {
	l := query.List{Entity: entity, Where: query.Cond{Field: schema.ColID, Op: query.Eq, Value: id}, Limit: 1, Select: sel}
	st, err := sc.Compiler.List(l)
	if err != nil {
		return nil, err
	}
	return e.store.Run(ctx, sc, l.Entity, st)
}

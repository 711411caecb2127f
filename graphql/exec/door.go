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

// The door to the tenant's tables: every read the engine makes (the
// executor's and the live feed's, through EventRecord) is in this file,
// and each hands records a plan for the request's scope. The engine
// compiles no SQL: records compiles it, applies the scope (tenant, schema
// version, principal) and keeps the statements a prepared operation
// reuses (records.Kept), serving one only to a scope with the key it was
// compiled under. The writes go through the records store's own methods
// (Create, Update, Delete, the batches and the edges).

// noRow turns sql.ErrNoRows from the records store into an internal
// error: every statement GraphQL runs returns one row.
func noRow(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return apperr.Wrap(err, "the statement returned no row")
	}
	return err
}

// count is the JSON count of entity's records matching where and search.
func (x *execCtx) count(entity string, where query.Filter, search string) ([]byte, error) {
	raw, err := x.e.store.Count(x.ctx, x.sc, entity, where, search)
	return raw, noRow(err)
}

// runList runs the list plan builds (or the statement kept on memo, when
// it serves this scope; memo may be nil) and hands its JSON to fn.
func (x *execCtx) runList(memo *records.Kept, entity string, plan func() (query.List, error), fn func(raw []byte) error) error {
	return noRow(x.e.store.ListKeptFunc(x.ctx, x.sc, memo, entity, plan, fn))
}

// listRaw runs list l and returns its JSON ({"items": [...]}).
func (x *execCtx) listRaw(l query.List) ([]byte, error) {
	raw, err := x.e.store.Query(x.ctx, x.sc, l)
	return raw, noRow(err)
}

// orderKeys is the keyset order of a connection: order, then id.
func (x *execCtx) orderKeys(entity string, order []query.Order) ([]query.Order, error) {
	return x.sc.Keys(entity, order)
}

// vectorSearch runs a vector search and returns its JSON.
func (x *execCtx) vectorSearch(v query.VectorSearch) ([]byte, error) {
	raw, err := x.e.store.VectorSearch(x.ctx, x.sc, v)
	return raw, noRow(err)
}

// getKept reads record id of entity with the get kept on memo, built with
// output out (records.Store.GetKeptFunc: ran is false when the caller must
// read through REST's statement instead).
func (x *execCtx) getKept(memo *records.Kept, entity, id string, out []query.Member, fn func(raw []byte) error) (ran bool, err error) {
	sel := func() query.Selection { return query.Selection{Output: out} }
	return x.e.store.GetKeptFunc(x.ctx, x.sc, memo, entity, id, sel, fn)
}

// EventRecord reads the record id of entity with selection sel (its
// relationships and file metadata), as the live feed shows an event's
// record: the list statement's JSON, {"items": [the record]} or no item
// when the record no longer exists.
func (e *Executor) EventRecord(ctx context.Context, sc *records.Scope, entity string, sel query.Selection, id string) ([]byte, error) {
	l := query.List{Entity: entity, Where: query.Cond{Field: schema.ColID, Op: query.Eq, Value: id}, Limit: 1, Select: sel}
	return e.store.Query(ctx, sc, l)
}

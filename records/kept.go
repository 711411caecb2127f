package records

import (
	"context"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/dds-project/dds/query"
)

// Kept holds one compiled statement that a caller keeps across requests:
// GraphQL keeps, on a field of a prepared operation, the statement of its
// list (when the field's arguments are literals) and of its get by id. The
// caller ties a Kept to one plan (the operation field); records checks and
// fills it, so a statement is served only to a scope it was compiled for.
// The zero value is empty and ready to use; a Kept is safe for concurrent
// use.
//
// Invariant: a kept statement is served only when its key equals the
// scope's (keptKeyOf): the compiler, which stands for the schema version,
// its Postgres schema and ef_search, AND the principal's rule inputs
// (Scope.ruleKey). Anything else a compiled statement comes to depend on
// must be added to keptKey.
type Kept struct{ p atomic.Pointer[keptStatement] }

// keptKey is everything a kept statement's SQL depends on besides the plan
// its holder stands for.
type keptKey struct {
	c     *query.Compiler
	rules string
}

func keptKeyOf(sc *Scope) keptKey { return keptKey{c: sc.compiler, rules: sc.ruleKey()} }

// keptStatement is a statement and the key it was compiled under. An
// empty SQL records that the plan has no statement worth keeping (the
// caller takes its general path).
type keptStatement struct {
	key keptKey
	st  query.Statement
}

// load returns the statement kept for sc, if any.
func (k *Kept) load(sc *Scope) (*keptStatement, bool) {
	if k == nil {
		return nil, false
	}
	ks := k.p.Load()
	if ks == nil || ks.key != keptKeyOf(sc) {
		return nil, false
	}
	return ks, true
}

// store keeps st as compiled for sc (no-op on a nil Kept).
func (k *Kept) store(sc *Scope, st query.Statement) {
	if k != nil {
		k.p.Store(&keptStatement{key: keptKeyOf(sc), st: st})
	}
}

// ListKeptFunc runs a list of entity and hands its JSON
// ({"items": [...]}) to fn as runFunc does. The statement kept on k runs
// when it was compiled for sc; otherwise plan builds the list, which is
// compiled, kept on k (unless k is nil) and run. plan is not called when
// the kept statement serves; its error is returned as is.
func (s *Store) ListKeptFunc(ctx context.Context, sc *Scope, k *Kept, entity string, plan func() (query.List, error), fn func(raw []byte) error) error {
	if ks, ok := k.load(sc); ok {
		return s.runFunc(ctx, sc, entity, ks.st, fn)
	}
	l, err := plan()
	if err != nil {
		return err
	}
	st, err := sc.compiler.List(l)
	if err != nil {
		return err
	}
	k.store(sc, st)
	return s.runFunc(ctx, sc, l.Entity, st, fn)
}

// GetKeptFunc reads record id of entity with the get statement kept on k
// and hands the record's JSON to fn as runFunc does (sql.ErrNoRows when
// there is none). When k holds no statement for sc, sel builds the
// selection, whose get is compiled and kept; a get that binds more than
// the id cannot serve every request and is kept as unusable.
//
// ran reports whether the kept statement ran. When it is false the caller
// reads through Get instead, and err, when not nil, is the compile error
// met filling k: it is returned once (k then holds the unusable mark).
// k must not be nil.
func (s *Store) GetKeptFunc(ctx context.Context, sc *Scope, k *Kept, entity, id string, sel func() query.Selection, fn func(raw []byte) error) (ran bool, err error) {
	ks, ok := k.load(sc)
	if !ok {
		// Any well-formed id: it is bound, not written into the text.
		st, cerr := sc.compiler.Get(entity, uuid.Nil.String(), sel())
		ks = &keptStatement{key: keptKeyOf(sc)}
		if cerr == nil && len(st.Args) >= 1 && query.OnlyParams(st.Args[1:]) {
			ks.st.SQL = st.SQL       // otherwise "": the caller reads through Get
			ks.st.Args = st.Args[1:] // the rule variables' params
		}
		k.p.Store(ks)
		if cerr != nil {
			return false, cerr
		}
	}
	if ks.st.SQL == "" {
		return false, nil
	}
	// In the form Postgres reads as a uuid, as the compiler's Get takes it.
	pid, err := query.ParseID(entity, id)
	if err != nil {
		return true, err
	}
	return true, s.runFunc(ctx, sc, entity, query.Statement{SQL: ks.st.SQL, Args: withID(pid, ks.st.Args)}, fn)
}

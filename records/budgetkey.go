package records

import (
	"context"
	"time"

	"github.com/dds-project/dds/query"
)

// What an estimate near the budget depends on when a rule variable is
// bound (budget.go keys those estimates by their values).
//
// A read rule's `field = $user.id` binds each user's id into one statement
// text, so keying by the bound values made every user a new key: each new
// user of a near-budget ruled statement (a count of a user's records, a
// list of them in another order) paid an EXPLAIN, every minute. Postgres
// estimates `column = value` from the column's statistics: a value among
// the column's most common values by its frequency, and every other value
// alike (what the common ones leave, shared among the other distinct
// values). So the key holds, for a rule variable's value on a STRING
// field's equality, what the estimate sees of it: the frequency when the
// value is one of the column's most common values, one marker for all
// others, and NULL as itself (a principal lacking the variable, planned as
// no rows). Users of equal frequency, and all users outside the most common
// values, share one estimate; a user owning far more than the others is
// estimated, and refused, on its own.
//
// Invariant: a valued entry is keyed by the text, every bound value that
// is not a rule variable's equality value, and for each of those its class
// (commonFreq, uncommonValue, or NULL) as the column's statistics stood
// when read; they are read again after budgetMemoTTL, so an ANALYZE that
// changes them is seen within the memo's own lifetime.

// uncommonValue stands in a key for a value outside its column's most
// common values.
type uncommonValue struct{}

// commonFreq stands in a key for one of its column's most common values:
// its frequency, as the statistics hold it.
type commonFreq struct{ f float32 }

// commonValues is a column's most common values and their frequencies, as
// read at until - budgetMemoTTL.
type commonValues struct {
	freqs map[string]float32
	err   error // the statistics could not be read (kept, not asked again, until until)
	until time.Time
}

// estimateKey returns args (bound) with each rule variable's equality value
// replaced by its class. It reads the statistics of the columns such
// values compare (cached per column for budgetMemoTTL); a column whose
// statistics cannot be read keeps its values (explained per value, as
// before).
func (s *Store) estimateKey(ctx context.Context, sc *Scope, memo *budgetMemo, params, args []any, now time.Time) []any {
	var key []any
	for i, p := range params {
		param, ok := p.(query.Param)
		if !ok {
			continue
		}
		entity, field, ok := param.TextEquality()
		if !ok {
			continue
		}
		v, isText := args[i].(string)
		if !isText { // NULL: its own class
			continue
		}
		common, err := s.commonValues(ctx, sc, memo, entity, field, now)
		if err != nil {
			continue
		}
		if key == nil {
			key = append([]any(nil), args...)
		}
		if f, ok := common[v]; ok {
			key[i] = commonFreq{f}
		} else {
			key[i] = uncommonValue{}
		}
	}
	if key == nil {
		return args
	}
	return key
}

// commonValues returns the most common values of entity's field as its
// statistics hold them (none before ANALYZE: every value estimated alike).
func (s *Store) commonValues(ctx context.Context, sc *Scope, memo *budgetMemo, entity, field string, now time.Time) (map[string]float32, error) {
	k := entity + "\x00" + field
	memo.mu.Lock()
	c, ok := memo.common[k]
	memo.mu.Unlock()
	if ok && now.Before(c.until) {
		return c.freqs, c.err
	}
	var vals []struct {
		V string
		F float32
	}
	err := s.db.SelectContext(ctx, &vals, `SELECT u.v, u.f FROM pg_stats s, unnest(s.most_common_vals::text::text[], s.most_common_freqs) AS u(v, f)
WHERE s.schemaname = $1 AND s.tablename = $2 AND s.attname = $3`, sc.Schema.PgSchema, entity, field)
	switch {
	case err != nil && ctx.Err() != nil: // the request ended: nothing learnt about the column
		return nil, MapError(sc, entity, err)
	case err != nil: // remembered, so that every request does not ask again
		c = commonValues{err: MapError(sc, entity, err), until: now.Add(budgetMemoTTL)}
	default:
		c = commonValues{freqs: make(map[string]float32, len(vals)), until: now.Add(budgetMemoTTL)}
		for _, v := range vals {
			c.freqs[v.V] = v.F
		}
	}
	memo.mu.Lock()
	if memo.common == nil || len(memo.common) >= budgetMemoMax {
		memo.common = map[string]commonValues{}
	}
	memo.common[k] = c
	memo.mu.Unlock()
	return c.freqs, c.err
}

package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
)

// The cost budget of a request's statements (docs/configuration.md):
//
//   - Every statement a request runs through records runs under a deadline
//     (WithStatementTimeout). The deadline is the request context's, so it
//     holds through a connection pooler in transaction mode, where a
//     session's statement_timeout would not; when it passes, the driver
//     sends Postgres a cancel request (db.Open), which a pooler forwards,
//     and the request answers QUERY_TIMEOUT. Batch jobs' statements
//     (bulk.go) take their own time and are not bounded.
//   - A list or aggregate whose plan Postgres estimates to read more rows
//     than the row budget (WithRowBudget) is refused with 400
//     QUERY_TOO_EXPENSIVE before it runs. The estimate is an EXPLAIN of the
//     statement with its values, one extra round trip (and a full planning
//     of the statement, which the statement itself may skip with a cached
//     plan); to keep it off repeated requests, a statement text whose
//     estimate was below a tenth of the budget is not explained again for a
//     minute whatever its values (they rarely move the estimate that far;
//     the deadline still bounds it), and one estimated near the budget but
//     within it is not explained again for a minute with the same bound
//     values (the same text and values plan the same; there the values
//     decide, so other values are explained; a rule variable's value
//     counts only as the estimate sees it, budgetkey.go: a user outside the
//     owner column's most common values is estimated as every other such
//     user). Texts estimated above the budget are explained on every
//     request. A relationship aggregate such
//     as "20 categories with their products' count and average price" is
//     estimated near the budget (a merge join's inner index is counted
//     whole though it stops early), and was explained on every request.

// WithStatementTimeout bounds each statement a request runs through the
// store (0: no bound).
func WithStatementTimeout(d time.Duration) Option {
	return func(s *Store) { s.timeout = d }
}

// WithRowBudget refuses lists and aggregates whose plan Postgres estimates
// to read more than n rows (0: no budget).
func WithRowBudget(n int64) Option {
	return func(s *Store) { s.rowBudget = n }
}

// bound returns ctx with the statement deadline, unless ctx already ends
// sooner.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.timeout <= 0 {
		return ctx, func() {}
	}
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= s.timeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// timeoutError is QUERY_TIMEOUT: Postgres cancelled a statement that ran
// past its deadline (or a statement_timeout set on the database).
func timeoutError(err error) error {
	return &apperr.Error{Code: apperr.QueryTimeout, Err: err,
		Message: "the statement ran past the statement timeout (DDS_STATEMENT_TIMEOUT); narrow where or search, or lower limit"}
}

// commitError maps the failure of a commit: a transaction whose statement
// deadline passed was rolled back by database/sql (nothing was written),
// which is QUERY_TIMEOUT, not a database error.
func commitError(ctx context.Context, sc *Scope, entity string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timeoutError(err)
	}
	return MapError(sc, entity, err)
}

// budgetMemo remembers, per statement text, until when its estimate need
// not be taken again. It lives on the schema version (Scope.Schema.Memo),
// so a schema change starts afresh.
//
// Invariant: an entry of m is keyed by everything its estimate depends on
// but the bound values: the statement text (which names the tenant's
// Postgres schema, the tables, the filter's shape, order and limit) within
// one schema version; an entry of valued by everything: the text and the
// bound values (valuesKey), a rule variable's equality value by its class
// (budgetkey.go, whose invariant covers it). The budget is the store's,
// fixed for its life.
type budgetMemo struct {
	mu sync.Mutex
	m  map[string]time.Time // text → until when: estimated below a tenth of the budget
	// renewing holds the texts of m whose entry expired and whose estimate
	// one request is taking again (freshText).
	renewing map[string]bool
	valued   map[string]time.Time    // valuesKey → until when: estimated within the budget
	common   map[string]commonValues // entity, field → its most common values (budgetkey.go)
	// explained counts the estimates taken (tests).
	explained atomic.Int64
}

const (
	budgetMemoMax = 4096
	budgetMemoTTL = time.Minute
)

// valuesKey is the key of a statement text with its bound values: the
// values as fmt writes them with %#v (type and value; a pointer, which
// would print its address, only misses).
func valuesKey(sql string, args []any) string {
	return sql + "\x00" + fmt.Sprintf("%#v", args)
}

// freshText reports whether sql's estimate need not be taken at now,
// whatever its values. When the text's entry has expired, the first caller
// to ask takes the estimate again (claimed: it calls renewed when done)
// and the others keep the entry's verdict meanwhile. Before, every request
// running when an entry expired explained the text: in bench/cmd/ddsbench
// -only rules, 32 EXPLAINs of one nested statement at once, 23 ms each,
// in a 2 s round. A new estimate that is no longer below a tenth of the
// budget removes the entry (remember), so a text grown expensive is not
// let through for longer than one estimate takes.
func (m *budgetMemo) freshText(sql string, now time.Time) (fresh, claimed bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	until, ok := m.m[sql]
	switch {
	case !ok:
		return false, false
	case now.Before(until), m.renewing[sql]:
		return true, false
	}
	if m.renewing == nil {
		m.renewing = map[string]bool{}
	}
	m.renewing[sql] = true
	return false, true
}

// renewed ends a claim of freshText on sql, whatever became of the
// estimate (an error leaves the expired entry for the next caller).
func (m *budgetMemo) renewed(sql string) {
	m.mu.Lock()
	delete(m.renewing, sql)
	m.mu.Unlock()
}

// anyValued reports whether any estimate is remembered with its values.
func (m *budgetMemo) anyValued() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.valued) > 0
}

// freshValues reports whether sql's estimate with the values of key need
// not be taken at now.
func (m *budgetMemo) freshValues(sql string, key []any, now time.Time) bool {
	k := valuesKey(sql, key)
	m.mu.Lock()
	until, ok := m.valued[k]
	m.mu.Unlock()
	return ok && now.Before(until)
}

// remember keeps an estimate of rows taken at now: for the text whatever
// its values when below a tenth of budget, else, within the budget, for
// these values. An estimate that is not below a tenth ends the text's
// entry (freshText lets others pass on it while it is renewed), whether
// or not it is over the budget.
func (m *budgetMemo) remember(sql string, args []any, rows float64, budget int64, now time.Time) {
	cheap := rows < float64(budget)/10
	m.mu.Lock()
	defer m.mu.Unlock()
	if !cheap {
		delete(m.m, sql)
	}
	if rows > float64(budget) {
		return
	}
	memo, k := m.m, sql
	if !cheap {
		if m.valued == nil {
			m.valued = map[string]time.Time{}
		}
		memo, k = m.valued, valuesKey(sql, args)
	}
	if len(memo) >= budgetMemoMax {
		clear(memo)
	}
	memo[k] = now.Add(budgetMemoTTL)
}

func (s *Store) budgetMemo(sc *Scope) *budgetMemo {
	return sc.Schema.Memo("records.budget", func() any { return &budgetMemo{m: map[string]time.Time{}} }).(*budgetMemo)
}

// checkBudget refuses st when its plan's estimate is above the row budget.
func (s *Store) checkBudget(ctx context.Context, sc *Scope, entity string, st query.Statement) error {
	if s.rowBudget <= 0 || !st.Budgeted || len(st.Setup) > 0 {
		return nil
	}
	memo := s.budgetMemo(sc)
	now := time.Now()
	fresh, claimed := memo.freshText(st.SQL, now)
	if fresh {
		return nil
	}
	if claimed {
		defer memo.renewed(st.SQL)
	}
	args := sc.bind(st.Args)
	var key []any // args as the estimate sees them (budgetkey.go)
	if memo.anyValued() {
		key = s.estimateKey(ctx, sc, memo, st.Args, args, now)
		if memo.freshValues(st.SQL, key, now) {
			return nil
		}
	}
	memo.explained.Add(1)
	var plan []byte
	if err := s.db.QueryRowContext(ctx, "EXPLAIN (FORMAT JSON) "+st.SQL, args...).Scan(&plan); err != nil {
		return MapError(sc, entity, err)
	}
	rows, err := EstimatedRows(plan)
	if err != nil {
		return apperr.Wrap(err, "read the plan's estimate")
	}
	over := rows > float64(s.rowBudget)
	if key == nil && !over && rows >= float64(s.rowBudget)/10 {
		key = s.estimateKey(ctx, sc, memo, st.Args, args, now)
	}
	// Remembered also when over the budget: that ends a cheap entry the
	// text may have had, which concurrent requests would otherwise still
	// pass on while this one's claim is followed by another's.
	memo.remember(st.SQL, key, rows, s.rowBudget, now)
	if over {
		return &apperr.Error{Code: apperr.QueryTooExpensive,
			Message: fmt.Sprintf("Postgres estimates this query reads about %.0f rows, above the row budget of %d; narrow where (an indexed field), or lower limit", rows, s.rowBudget),
			Extra:   map[string]any{"budget": s.rowBudget, "estimate": int64(rows)}}
	}
	return nil
}

// planNode is a node of EXPLAIN (FORMAT JSON).
type planNode struct {
	NodeType string     `json:"Node Type"`
	Rows     float64    `json:"Plan Rows"`
	Plans    []planNode `json:"Plans"`
}

// EstimatedRows reads the rows a plan (EXPLAIN (FORMAT JSON) output) is
// estimated to read: the largest row estimate of any of its nodes, where a
// node below a Limit that streams into it counts only the fraction the
// Limit takes (a newest-first page of 20 reads 20 index entries, not the
// table), a node below a blocking node (Sort, Aggregate, Hash, ...) counts
// whole, and the inner side of a nested loop counts once per outer row.
// Postgres estimates a filtered scan by the rows it returns, not those it
// reads, so a scan whose filter rejects most rows under a Limit can read
// more than this; the statement timeout bounds those.
func EstimatedRows(explain []byte) (float64, error) {
	var out []struct {
		Plan planNode `json:"Plan"`
	}
	if err := json.Unmarshal(explain, &out); err != nil || len(out) == 0 {
		return 0, fmt.Errorf("not an EXPLAIN (FORMAT JSON) result: %w", err)
	}
	return nodeRows(&out[0].Plan, 1), nil
}

func nodeRows(n *planNode, frac float64) float64 {
	most := n.Rows * frac
	childFrac := frac
	switch n.NodeType {
	case "Limit":
		if len(n.Plans) > 0 && n.Plans[0].Rows > 0 {
			childFrac = frac * min(1, n.Rows/n.Plans[0].Rows)
		}
	case "Sort", "Aggregate", "Hash", "Materialize", "WindowAgg", "SetOp", "Gather", "Gather Merge":
		childFrac = 1
	}
	for i := range n.Plans {
		f := childFrac
		if n.NodeType == "Nested Loop" && i == 1 { // once per outer row
			f = max(n.Plans[0].Rows*childFrac, 1)
		}
		most = max(most, nodeRows(&n.Plans[i], f))
	}
	return most
}

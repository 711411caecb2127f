package records

import (
	"encoding/json"
	"testing"
	"time"
)

// EstimatedRows reads what a plan reads: a Limit over a streaming index
// walk counts its page, a Sort under a Limit counts its whole input, and a
// nested loop's inner side counts once per outer row.
func TestEstimatedRows(t *testing.T) {
	for _, tc := range []struct {
		name, plan string
		want       float64
	}{
		{"newest-first page", `[{"Plan": {"Node Type": "Aggregate", "Plan Rows": 1, "Plans": [
			{"Node Type": "Limit", "Plan Rows": 20, "Plans": [{"Node Type": "Index Scan", "Plan Rows": 100000}]}]}}]`, 20},
		{"top-N sort", `[{"Plan": {"Node Type": "Limit", "Plan Rows": 20, "Plans": [
			{"Node Type": "Sort", "Plan Rows": 100000, "Plans": [{"Node Type": "Seq Scan", "Plan Rows": 100000}]}]}}]`, 100000},
		{"group by", `[{"Plan": {"Node Type": "Aggregate", "Plan Rows": 3, "Plans": [{"Node Type": "Seq Scan", "Plan Rows": 50000}]}}]`, 50000},
		{"nested loop", `[{"Plan": {"Node Type": "Nested Loop", "Plan Rows": 10, "Plans": [
			{"Node Type": "Seq Scan", "Plan Rows": 400}, {"Node Type": "Index Scan", "Plan Rows": 5}]}}]`, 2000},
	} {
		got, err := EstimatedRows([]byte(tc.plan))
		if err != nil || got != tc.want {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := EstimatedRows([]byte(`{}`)); err == nil {
		t.Error("a non-plan was read")
	}
}

// The budget memo remembers a cheap text whatever its values, a text
// estimated near the budget (within it) only with the values it was
// estimated with, and nothing over the budget; each for a minute.
func TestBudgetMemo(t *testing.T) {
	const budget = 1000
	var m budgetMemo
	m.m = map[string]time.Time{}
	now := time.Now()
	cheap, near, over := "SELECT cheap", "SELECT near", "SELECT over"
	m.remember(cheap, []any{1}, 99, budget, now)
	m.remember(near, []any{"a", json.Number("2")}, 100, budget, now)
	m.remember(near, nil, budget, budget, now)
	m.remember(over, []any{1}, budget+1, budget, now)
	for _, c := range []struct {
		sql  string
		args []any
		at   time.Duration
		want bool
	}{
		{cheap, []any{1}, 0, true},
		{cheap, []any{2}, 0, true}, // any values
		{cheap, []any{1}, budgetMemoTTL, false},
		{near, []any{"a", json.Number("2")}, time.Second, true},
		{near, nil, time.Second, true},
		{near, []any{"a", json.Number("3")}, 0, false}, // other values are explained
		{near, []any{"a"}, 0, false},
		{near, []any{"a", json.Number("2")}, budgetMemoTTL, false},
		{over, []any{1}, 0, false},
		{"SELECT other", []any{"a", json.Number("2")}, 0, false},
	} {
		fresh, claimed := m.freshText(c.sql, now.Add(c.at))
		if claimed {
			m.renewed(c.sql)
		}
		if got := fresh || m.anyValued() && m.freshValues(c.sql, c.args, now.Add(c.at)); got != c.want { // as checkBudget asks
			t.Errorf("%s %v after %v: fresh = %v, want %v", c.sql, c.args, c.at, got, c.want)
		}
	}
}

// When a cheap text's entry expires, one caller takes its estimate again
// and the others, meanwhile, keep its verdict; a new estimate that is no
// longer cheap ends that at once, and one that is renews the entry.
func TestBudgetMemoRenewsAnExpiredTextOnce(t *testing.T) {
	const budget = 1000
	for _, tc := range []struct {
		name       string
		rows       float64 // the new estimate
		freshAfter bool    // the text then passes unexplained, whatever its values
	}{
		{"still cheap", 50, true},
		{"near the budget", 500, false},
		{"over the budget", budget + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var m budgetMemo
			m.m = map[string]time.Time{}
			now := time.Now()
			m.remember("SELECT x", nil, 10, budget, now)
			later := now.Add(budgetMemoTTL)
			fresh, claimed := m.freshText("SELECT x", later)
			if fresh || !claimed {
				t.Fatalf("the first caller after expiry: fresh %v claimed %v, want it to take the estimate", fresh, claimed)
			}
			for range 3 {
				if fresh, claimed := m.freshText("SELECT x", later); !fresh || claimed {
					t.Fatalf("a caller while it is taken: fresh %v claimed %v, want the old verdict", fresh, claimed)
				}
			}
			m.remember("SELECT x", []any{"a"}, tc.rows, budget, later)
			m.renewed("SELECT x")
			fresh, claimed = m.freshText("SELECT x", later)
			if claimed {
				m.renewed("SELECT x")
			}
			if fresh != tc.freshAfter {
				t.Fatalf("after the new estimate: fresh %v, want %v", fresh, tc.freshAfter)
			}
		})
	}
}

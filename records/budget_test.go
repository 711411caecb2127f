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
		if got := m.freshText(c.sql, now.Add(c.at)) || m.anyValued() && m.freshValues(c.sql, c.args, now.Add(c.at)); got != c.want { // as checkBudget asks
			t.Errorf("%s %v after %v: fresh = %v, want %v", c.sql, c.args, c.at, got, c.want)
		}
	}
}

package records

import "testing"

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

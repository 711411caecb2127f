package records

import "time"

// Explained is how many row estimates (EXPLAINs) the store has taken for
// sc's schema version (budget.go).
func Explained(s *Store, sc *Scope) int64 { return s.budgetMemo(sc).explained.Load() }

// ForgetCommonValues drops the columns' statistics read for sc's schema
// version, as budgetMemoTTL does (budgetkey.go).
func ForgetCommonValues(s *Store, sc *Scope) {
	m := s.budgetMemo(sc)
	m.mu.Lock()
	m.common = nil
	m.mu.Unlock()
}

// ExpireBudgetTexts ends, for sc's schema version, every text's minute of
// passing unexplained, as budgetMemoTTL does, with no renewal under way.
func ExpireBudgetTexts(s *Store, sc *Scope) {
	m := s.budgetMemo(sc)
	m.mu.Lock()
	for k := range m.m {
		m.m[k] = time.Time{}
	}
	m.renewing = nil
	m.mu.Unlock()
}

// RenewBudgetTextsElsewhere marks every remembered text of sc's schema
// version as being estimated again by another request (freshText's claim).
func RenewBudgetTextsElsewhere(s *Store, sc *Scope) {
	m := s.budgetMemo(sc)
	m.mu.Lock()
	m.renewing = map[string]bool{}
	for k := range m.m {
		m.renewing[k] = true
	}
	m.mu.Unlock()
}

package records

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

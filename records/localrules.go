package records

import (
	"sync"

	"github.com/dds-project/dds/query"
)

// localRules holds a scope's read rules compiled to Go (query.LocalReadRule)
// per compiler and entity: the compiler carries the rules, the scope's
// principal the variables, so the key is everything the predicate depends
// on. Copies of a scope with another compiler (WithDeleted) share the
// holder but not the entries.
type localRules struct {
	mu sync.Mutex
	m  map[localRuleKey]localRule
}

type localRuleKey struct {
	compiler *query.Compiler
	entity   string
}

type localRule struct {
	match        *query.LocalMatch
	unrestricted bool
	ok           bool
}

// AdmitsLocally is Admits evaluated in Go on fields (an event's record
// decoded with UseNumber), for rules Go can evaluate: ok is false when only
// Admits can answer (a relationship condition, a variable the principal
// lacks, a value not of its field's type). The live feed asks it first for
// each subscriber, so a ruled subscription costs no round trip per event.
func (sc *Scope) AdmitsLocally(entity string, fields map[string]any) (admit, ok bool) {
	if _, err := sc.compiler.Entity(entity); err != nil {
		return false, false // Admits answers the error
	}
	sc.local.mu.Lock()
	k := localRuleKey{sc.compiler, entity}
	r, found := sc.local.m[k]
	if !found {
		r.match, r.unrestricted, r.ok = sc.compiler.LocalReadRule(entity, sc.variable)
		if sc.local.m == nil {
			sc.local.m = map[localRuleKey]localRule{}
		}
		sc.local.m[k] = r
	}
	sc.local.mu.Unlock()
	switch {
	case !r.ok:
		return false, false
	case r.unrestricted:
		return true, true
	}
	return r.match.Eval(fields)
}

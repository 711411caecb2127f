package query

// LocalReadRule compiles entity's read rule for one principal, its
// variables replaced through lookup, to a Go predicate (Local's subset), so
// that the live feed tests a ruled subscriber on each event's record
// without a round trip per subscriber. unrestricted is true when the
// entity has no read rule. A condition on a variable the principal lacks
// is false, as in SQL. ok is false when Postgres must decide: a
// relationship condition, or a variable's value not of its field's type.
func (c *Compiler) LocalReadRule(entity string, lookup func(Var) (any, bool)) (m *LocalMatch, unrestricted, ok bool) {
	if c.rules == nil {
		return nil, true, true
	}
	fs, restricted := c.rules.read[entity]
	if !restricted {
		return nil, true, true
	}
	e, found := c.def.Entity(entity)
	if !found {
		return nil, false, false
	}
	bound := make(Or, len(fs))
	for i, f := range fs {
		if bound[i], ok = bindVars(f, lookup); !ok {
			return nil, false, false
		}
	}
	fn, ok := local(e, bound)
	if !ok {
		return nil, false, false
	}
	return &LocalMatch{eval: fn}, false, true
}

// bindVars is f with every variable replaced by the principal's value (a
// condition on a missing one by false).
func bindVars(f Filter, lookup func(Var) (any, bool)) (Filter, bool) {
	switch f := f.(type) {
	case *Cond:
		return bindVars(*f, lookup)
	case Cond:
		if !hasVar(f.Value) {
			return f, true
		}
		v, ok := substitute(f.Value, lookup)
		if !ok || v == nil {
			// SQL denies it: "($n IS NOT NULL AND …)" is a definite
			// false, also under a not. An empty Or is that false.
			return Or{}, true
		}
		f.Value = v
		return f, true
	case And, Or:
		terms, isAnd := junction(f)
		out := make([]Filter, len(terms))
		for i, t := range terms {
			var ok bool
			if out[i], ok = bindVars(t, lookup); !ok {
				return nil, false
			}
		}
		if isAnd {
			return And(out), true
		}
		return Or(out), true
	case Not:
		t, ok := bindVars(f.Term, lookup)
		return Not{Term: t}, ok
	}
	return f, true // Related and nil: local() decides
}

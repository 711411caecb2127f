package query

import "github.com/dds-project/dds/schema"

// Planning a list that walks its read rule's index range.
//
// DDS prepares each statement once per connection, and Postgres (its
// default plan_cache_mode = auto) plans the first five executions with
// their values, then keeps the generic plan unless it is estimated dearer
// than the average plan made for the values. A filter's value beside a
// rule tips that comparison: the generic plan assumes 1/3 of the rows pass
// `price >= $1` where the plan for 0 knows all of them do, so a page of a
// user's rows, whose range costs more per row than the primary key's walk
// of an unruled list, looks three times dearer generic and is planned
// again on every execution (docs/auth.md, "What a rule costs").
//
// A list whose read rule keys an indexed field on a variable by equality
// and whose order is the id's reads one range of that field's (field, id)
// index, in list order: the page is the first rows of the range whatever
// the other values. For those lists the compiler binds the caller's filter
// values as one-row subqueries, "(SELECT $n::type)::type": an
// index condition and a filter as before, but a value the planner cannot
// look into, so the plans made for the values estimate as the generic plan
// does, cost the same, and Postgres keeps the generic plan after five
// executions (query test TestRuleWalkKeepsTheGenericPlan). The price is the
// estimate a value could have given: a rare filter value makes no other
// plan, which a page bounded by the user's own rows does not need. The
// rule's own variable stays a plain parameter: its estimate is the
// field's, one per value, and not what makes the generic plan dearer. So
// does a cursor's: hidden, the planner would assume a third of the range
// lies past it, and a range it then thinks small is read whole and sorted
// rather than walked to the page (a cursor's value decides how much of
// the range is left, so the plans made for it are worth their planning).

// Nested pages. A relationship selection's page (in the edges' creation
// order) under the related entity's read rule cannot be cut from the edges
// alone, as an unruled one is: a hidden record must not take a place. Joined
// to the related table and filtered, it left the plan to Postgres, which
// assumes the rule admits its share of the table's rows (a tenth, for ten
// owners) of any parent's related records; so it expected a page never to
// fill, and read every edge of the parent joined to all the user's records
// by hash, sorted: 2,000 record rows for ten projects' pages of ten when
// each project holds its owner's items, where the unruled page reads 100
// edges and 100 records. The page is instead the edges walked in their
// index order, each record looked up with the rule in a one-row subquery
// (LIMIT 1, which Postgres keeps as a probe per edge rather than turning
// into a join), stopped at the page's last row: the unruled page's reads
// when the rule admits every record the page would show, and one edge and
// one index probe more per hidden record otherwise (a project whose links
// are half other users' items: ~185 edges and probes for ten pages of
// ten). A nested selection's own where is a condition on the records too,
// and the planner's guess of its share is no better: the same owner's
// page asked for with the caller's filter instead of a rule cost Postgres
// 1.05 ms against the ruled page's 545 µs in the rules benchmark, so it
// walks the same way (with a rule and a where, the probe holds both); a
// filter that admits few of many links pays a probe per link it passes.
// query test TestRuledNestedPageWalksTheEdges.

// walksRuleRange reports whether a list of e ordered by order (with no
// search and no distinctOn) is a walk of its read rule's index range: the
// principal's roles read e through one rule, whose terms (an And's, or the
// rule itself) include `field = <variable>` on a field with the (field, id)
// index, or a unique field; and the order is the id's alone.
func (c *Compiler) walksRuleRange(e *schema.Entity, order []Order) bool {
	if c.rules == nil {
		return false
	}
	fs, ok := c.rules.read[e.Name]
	if !ok || len(fs) != 1 {
		return false
	}
	for _, o := range order {
		if o.Field != schema.ColID {
			return false
		}
	}
	terms := []Filter{fs[0]}
	if a, ok := fs[0].(And); ok {
		terms = a
	}
	for _, t := range terms {
		var cond Cond
		switch t := t.(type) {
		case Cond:
			cond = t
		case *Cond:
			cond = *t
		default:
			continue
		}
		if _, isVar := cond.Value.(Var); !isVar || cond.Op != Eq {
			continue
		}
		if f, ok := e.Field(cond.Field); ok && pagedField(f) {
			return true
		}
	}
	return false
}

// pagedField reports whether f's index serves an equality on it in id
// order: an indexed scalar field's (field, id) index (schema.Field.PagedIndex),
// or a unique field's (one row).
func pagedField(f *schema.Field) bool {
	return f.PagedIndex() || f.ConflictTarget() && f.Type != schema.File
}

package query

// Field lists as a schema view: what a role set's schema (GraphQL SDL,
// introspection, OpenAPI) shows of each entity. The compiler's rules
// decide; these only report them.

// FieldListed reports whether c's rules restrict the fields of any entity
// (a read or write list): the schema a principal sees then differs from
// the one its scopes alone give.
func (c *Compiler) FieldListed() bool {
	if c.rules == nil {
		return false
	}
	if len(c.rules.readable) > 0 {
		return true
	}
	for _, w := range c.rules.write {
		if w.Writable != nil {
			return true
		}
	}
	return false
}

// Writable reports whether field name of entity may be written (its
// roles' write lists; true without one).
func (c *Compiler) Writable(entity, name string) bool {
	if c.rules == nil {
		return true
	}
	w := c.rules.write[entity]
	return w == nil || w.Writable == nil || w.Writable[name]
}

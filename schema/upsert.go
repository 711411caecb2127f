package schema

// ConflictTarget reports whether an upsert may match records on f: a
// unique field with its own unique index (the DDL gives one to every
// unique scalar field), which INSERT ... ON CONFLICT (f) can infer.
func (f *Field) ConflictTarget() bool {
	return f.Unique && !f.List && f.Type != Vector && f.Type != JSON
}

// ConflictTargets are the fields of e an upsert may match on, in schema
// order.
func (e *Entity) ConflictTargets() []string {
	var out []string
	for i := range e.Fields {
		if e.Fields[i].ConflictTarget() {
			out = append(out, e.Fields[i].Name)
		}
	}
	return out
}

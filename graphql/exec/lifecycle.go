package exec

// withDeleted applies a root field's withDeleted: true (an entity with
// softDelete, for a credential that may delete its records: the model
// declares the argument only then) by running the field in a scope that
// shows the entity's soft-deleted records (records.Scope.WithDeleted).
// back restores the request's scope; nil when the field does not ask.
// Root fields resolve one after another, so the swap is the field's own.
func (x *execCtx) withDeleted(cf *cfield) (back func(), err error) {
	rf, ok := x.m.Root(cf.field.Name)
	if !ok || rf.Entity == nil || !rf.Entity.SoftDelete {
		return nil, nil
	}
	if show, _ := cf.field.Argument("withDeleted", x.vars).(bool); !show {
		return nil, nil
	}
	sc, err := x.sc.WithDeleted(rf.Entity.Name)
	if err != nil {
		return nil, err
	}
	prev := x.sc
	x.sc = sc
	return func() { x.sc = prev }, nil
}

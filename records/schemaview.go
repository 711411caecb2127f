package records

// A schema per role (docs/auth.md, "A schema per role"): the GraphQL model
// and the OpenAPI document a principal is shown leave out the fields its
// roles' field lists do not name. These report the lists of the scope's
// compiler, so what is shown and what is enforced come from one place.

// FieldListed reports whether the scope's roles restrict any entity's
// fields: its schema then differs from the one its scopes alone give.
func (sc *Scope) FieldListed() bool { return sc.compiler.FieldListed() }

// Writable reports whether the scope's principal may write field of
// entity (its roles' write lists).
func (sc *Scope) Writable(entity, field string) bool { return sc.compiler.Writable(entity, field) }

// RuleSet names the exact role definitions ("name@version,...", sorted)
// the scope's rules and field lists were compiled from; "" without rules.
// It may be newer than Principal().RoleSet when the principal was resolved
// just before a role changed. Anything derived from the field lists (a
// role's GraphQL model) is keyed by it together with the schema version.
func (sc *Scope) RuleSet() string { return sc.ruleSet }

package model

import (
	"strings"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

type modelMemo struct {
	m   *Model
	err error
}

// ModelFor returns the GraphQL model of the scope's active schema version
// as principal p may see it (nil: all of it), built once per version and
// visibility: introspection, schema.graphql and validation then show a
// credential only the entities, relationships and operations its scopes
// allow and, when its roles have field lists, only the fields they let it
// read (output, where and aggregate types) and write (input types).
//
// Invariant: a model is kept on the schema version (sc.Schema.Memo), under
// a key holding everything else it is built from: the bits of what p's
// scopes allow on each entity and relationship (visibilityKey; "" is the
// full model every unrestricted credential shares) and, when the scope's
// roles restrict fields, the exact role definitions the field lists come
// from (Scope.RuleSet, "name@version,..."). A role change bumps its
// version, so the next request (on any server: roles are reloaded on
// NOTIFY dds_roles) looks up another key; two principals share a model
// only when their scopes allow the same and their field lists come from
// the same role definitions, which give the same fields. User ids and
// claims never shape a model. The prepared-operation cache keys on the
// model's identity, so a plan validated for one role is never reused for
// another.
func ModelFor(sc *records.Scope, p *auth.Principal) (*Model, error) {
	var fields Fields
	if sc.FieldListed() {
		fields = sc
	}
	return modelFor(sc.Schema, p, fields, sc.RuleSet())
}

// modelFor is ModelFor for fields (nil: none listed) that come from the
// role definitions ruleSet names.
func modelFor(a *schema.Active, p *auth.Principal, fields Fields, ruleSet string) (*Model, error) {
	key, allow := visibilityKey(a.Def, p)
	if fields != nil {
		key += "\x00fields\x00" + ruleSet
	}
	mm := a.Memo("graphql.Model"+key, func() any {
		m, err := buildView(a.Def, allow, fields)
		return modelMemo{m, err}
	}).(modelMemo)
	return mm.m, mm.err
}

var visibilityOps = [...]string{"read", "create", "update", "delete"}

// visibilityKey is the cache key of what p may do on def's entities and
// relationships ("" when p may do everything, the shared model) and the
// matching Allows.
func visibilityKey(def *schema.Definition, p *auth.Principal) (string, Allows) {
	if p == nil {
		return "", nil
	}
	for _, s := range p.Scopes {
		if s.Kind == "*" && s.Name == "*" && s.Op == "*" { // a grant of everything: the shared model
			return "", nil
		}
	}
	var b strings.Builder
	all := true
	bit := func(kind, name string) {
		for _, op := range visibilityOps {
			if p.Scopes.Allows(kind, name, op) {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
				all = false
			}
		}
	}
	b.WriteByte(':')
	for i := range def.Entities {
		bit("entity", def.Entities[i].Name)
	}
	for i := range def.Relationships {
		bit("relationship", def.Relationships[i].Name)
	}
	if all {
		return "", nil
	}
	return b.String(), p.Scopes.Allows
}

// Visible builds the model of def as principal p may see it, afresh
// (ModelFor keeps one per schema version and visibility).
func Visible(def *schema.Definition, p *auth.Principal) (*Model, error) {
	_, allow := visibilityKey(def, p)
	return build(def, allow)
}

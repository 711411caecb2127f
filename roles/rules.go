package roles

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Variable is a rule value read from the principal when the rule is
// applied: "$user.id", "$user.roles" or "$user.claims.<path>". A rule's
// parsed filter (ParseWhere) holds Variables where the JSON had them; they
// must be bound as values (never written into SQL text), which is what
// lets compiled statements be shared by every principal with the same
// roles (auth.Principal.RoleSet). A variable the principal lacks (no user
// id, a missing claim) must deny: it binds as NULL, and a comparison with
// NULL is never true.
type Variable = query.Var

// variable syntax: $user.id, $user.roles, $user.claims.<segment>(.<segment>)*
var claimPathRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}(\.[A-Za-z0-9_-]{1,64}){0,7}$`)

// parseVariable reports whether s is a variable (it begins with "$user"),
// and whether it is a valid one.
func parseVariable(s string) (Variable, bool, error) {
	if !strings.HasPrefix(s, "$user") {
		return "", false, nil
	}
	switch {
	case s == "$user.id", s == "$user.roles":
		return Variable(s), true, nil
	case strings.HasPrefix(s, "$user.claims."):
		if claimPathRe.MatchString(strings.TrimPrefix(s, "$user.claims.")) {
			return Variable(s), true, nil
		}
	}
	return "", true, fmt.Errorf("unknown variable %q (use $user.id, $user.roles or $user.claims.<path>)", s)
}

// Quantifier suffixes of relationship conditions in rules, as in GraphQL:
// {"owners_some": {"id": "$user.id"}}.
var quantifiers = map[string]query.Quantifier{"_some": query.Some, "_none": query.None, "_every": query.Every}

// ParseWhere parses a rule's where on entity: the REST filter DSL
// (query.ParseWhereAt) whose values may be Variables, plus relationship
// conditions "<relationship field>_some|_none|_every": {<where on the
// related entity>} crossing a relationship by the field name it has on
// entity (fromField or toField). Errors name the path.
func ParseWhere(def *schema.Definition, entity string, m map[string]any, path string) (query.Filter, error) {
	e, ok := def.Entity(entity)
	if !ok {
		return nil, apperr.Field(path, "unknown entity %s", entity)
	}
	return parseWhere(def, e, m, path, 0)
}

const maxRuleDepth = 8

func parseWhere(def *schema.Definition, e *schema.Entity, m map[string]any, path string, depth int) (query.Filter, error) {
	if depth > maxRuleDepth {
		return nil, apperr.Field(path, "is nested too deeply (at most %d levels)", maxRuleDepth)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var and query.And
	for _, k := range keys {
		v := m[k]
		p := path + "." + k
		switch k {
		case "$and", "$or":
			list, ok := v.([]any)
			if !ok {
				return nil, apperr.Field(p, "must be an array of conditions")
			}
			terms := make([]query.Filter, 0, len(list))
			for i, it := range list {
				sub, ok := it.(map[string]any)
				if !ok {
					return nil, apperr.Field(fmt.Sprintf("%s[%d]", p, i), "must be an object of conditions")
				}
				f, err := parseWhere(def, e, sub, fmt.Sprintf("%s[%d]", p, i), depth+1)
				if err != nil {
					return nil, err
				}
				terms = append(terms, f)
			}
			if k == "$and" {
				and = append(and, query.And(terms))
			} else {
				and = append(and, query.Or(terms))
			}
		case "$not":
			sub, ok := v.(map[string]any)
			if !ok {
				return nil, apperr.Field(p, "must be an object of conditions")
			}
			f, err := parseWhere(def, e, sub, p, depth+1)
			if err != nil {
				return nil, err
			}
			and = append(and, query.Not{Term: f})
		default:
			if rel, dir, q, far, ok := relationshipCondition(def, e, k); ok {
				sub, isObj := v.(map[string]any)
				if !isObj {
					return nil, apperr.Field(p, "must be an object of conditions on %s", far.Name)
				}
				f, err := parseWhere(def, far, sub, p, depth+1)
				if err != nil {
					return nil, err
				}
				and = append(and, query.Related{Relationship: rel.Name, Direction: dir, Quantifier: q, Where: f})
				continue
			}
			f, err := query.ParseWhereAt(map[string]any{k: v}, path)
			if err != nil {
				return nil, err
			}
			f, err = variables(f, path)
			if err != nil {
				return nil, err
			}
			and = append(and, f)
		}
	}
	if len(and) == 1 {
		return and[0], nil
	}
	return and, nil
}

// relationshipCondition resolves "<field>_some|_none|_every" on e.
func relationshipCondition(def *schema.Definition, e *schema.Entity, key string) (*schema.Relationship, query.Direction, query.Quantifier, *schema.Entity, bool) {
	for suffix, q := range quantifiers {
		field, ok := strings.CutSuffix(key, suffix)
		if !ok || field == "" {
			continue
		}
		for _, rel := range def.RelationshipsOf(e.Name) {
			if rel.From == e.Name && rel.FromField == field {
				far, _ := def.Entity(rel.To)
				return rel, query.DirOut, q, far, far != nil
			}
			if rel.To == e.Name && rel.ToField == field {
				far, _ := def.Entity(rel.From)
				return rel, query.DirIn, q, far, far != nil
			}
		}
	}
	return nil, "", "", nil, false
}

// variables replaces the variable strings of a parsed leaf with Variables,
// refusing unknown ones.
func variables(f query.Filter, path string) (query.Filter, error) {
	conv := func(v any, field string) (any, error) {
		s, ok := v.(string)
		if !ok {
			return v, nil
		}
		vr, isVar, err := parseVariable(s)
		if err != nil {
			return nil, apperr.Field(path+"."+field, "%s", err.Error())
		}
		if isVar {
			return vr, nil
		}
		return v, nil
	}
	switch f := f.(type) {
	case query.Cond:
		if list, ok := f.Value.([]any); ok {
			out := make([]any, len(list))
			for i, it := range list {
				x, err := conv(it, f.Field)
				if err != nil {
					return nil, err
				}
				out[i] = x
			}
			f.Value = out
			return f, nil
		}
		x, err := conv(f.Value, f.Field)
		if err != nil {
			return nil, err
		}
		f.Value = x
		return f, nil
	case query.And:
		out := make(query.And, len(f))
		for i, t := range f {
			x, err := variables(t, path)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	}
	return f, nil
}

// sampled returns f with every Variable replaced by a value of its field's
// type, so that compiling it checks fields, operators and types as a
// literal would (the variable's own value is only known per request).
func sampled(def *schema.Definition, e *schema.Entity, f query.Filter) query.Filter {
	switch f := f.(type) {
	case query.And:
		out := make(query.And, len(f))
		for i, t := range f {
			out[i] = sampled(def, e, t)
		}
		return out
	case query.Or:
		out := make(query.Or, len(f))
		for i, t := range f {
			out[i] = sampled(def, e, t)
		}
		return out
	case query.Not:
		return query.Not{Term: sampled(def, e, f.Term)}
	case query.Related:
		rel, _ := def.Relationship(f.Relationship)
		far := e
		if rel != nil {
			name := rel.To
			if f.Direction == query.DirIn {
				name = rel.From
			}
			if x, ok := def.Entity(name); ok {
				far = x
			}
		}
		f.Where = sampled(def, far, f.Where)
		return f
	case query.Cond:
		sample := func(v any) any {
			vr, ok := v.(Variable)
			if !ok {
				return v
			}
			s := sampleOf(e, f.Field)
			if vr == "$user.roles" && (f.Op == query.In || f.Op == query.NotIn) {
				return []any{s}
			}
			return s
		}
		if list, ok := f.Value.([]any); ok {
			out := make([]any, len(list))
			for i, it := range list {
				out[i] = sample(it)
			}
			f.Value = out
			return f
		}
		if fld, ok := e.Field(f.Field); ok && fld.List && (f.Op == query.Eq || f.Op == query.Neq) {
			if _, isVar := f.Value.(Variable); isVar {
				f.Value = []any{sampleOf(e, f.Field)}
				return f
			}
		}
		f.Value = sample(f.Value)
		return f
	}
	return f
}

// sampleOf is a valid scalar of field name on e (an element, for lists).
func sampleOf(e *schema.Entity, name string) any {
	switch name {
	case schema.ColID:
		return "00000000-0000-7000-8000-000000000000"
	case schema.ColCreatedAt, schema.ColUpdatedAt:
		return "2000-01-01T00:00:00Z"
	}
	f, ok := e.Field(name)
	if !ok {
		return "x"
	}
	switch f.Type {
	case schema.Integer, schema.Number:
		return json.Number("0")
	case schema.Boolean:
		return true
	case schema.Timestamp:
		return "2000-01-01T00:00:00Z"
	case schema.Date:
		return "2000-01-01"
	case schema.Enum:
		if len(f.Values) > 0 {
			return f.Values[0]
		}
	case schema.File:
		return "00000000-0000-7000-8000-000000000000"
	}
	return "x"
}

package roles

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// RoleRules implements records.RuleSource: the rules and field lists of
// those of names the tenant has, parsed against def (the schema version a
// scope compiles for), in name order, and the role set they are
// ("name@version,...", as auth.Principal.RoleSet).
//
// A rule that no longer parses against def (it names a field a later
// schema removed) denies: it becomes a filter matching nothing, so a
// schema change never widens what a role may reach.
func (s *Store) RoleRules(ctx context.Context, tenantID string, def *schema.Definition, names []string) ([]query.RoleRules, string, error) {
	all, err := s.tenantRoles(ctx, tenantID)
	if err != nil {
		return nil, "", err
	}
	sorted := slices.Clone(names)
	slices.Sort(sorted)
	sorted = slices.Compact(sorted)
	var out []query.RoleRules
	var set []string
	for _, n := range sorted {
		r, ok := all[n]
		if !ok {
			continue
		}
		set = append(set, r.Name+"@"+strconv.FormatInt(r.Version, 10))
		out = append(out, compileRole(def, r))
	}
	return out, strings.Join(set, ","), nil
}

// deny is a filter that matches nothing.
var deny = query.Or{}

func compileRole(def *schema.Definition, r *Role) query.RoleRules {
	rr := query.RoleRules{Name: r.Name, Entities: map[string]*query.EntityRules{}}
	entity := func(name string) *query.EntityRules {
		er := rr.Entities[name]
		if er == nil {
			er = &query.EntityRules{}
			rr.Entities[name] = er
		}
		return er
	}
	where := func(name string, m map[string]any, path string) query.Filter {
		if m == nil {
			return nil
		}
		f, err := ParseWhere(def, name, m, path)
		if err != nil {
			return deny
		}
		if f == nil {
			return query.And{}
		}
		return f
	}
	for name, er := range r.Rules {
		if er == nil {
			continue
		}
		out := entity(name)
		p := "rules." + name
		out.Read = where(name, er.Read, p+".read")
		if er.Create != nil {
			out.CreateCheck = where(name, er.Create.Check, p+".create.check")
			if len(er.Create.Preset) > 0 {
				out.Preset = map[string]any{}
				for k, v := range er.Create.Preset {
					if str, ok := v.(string); ok {
						if vr, isVar, err := parseVariable(str); isVar {
							if err != nil {
								out.CreateCheck = deny
								continue
							}
							v = vr
						}
					}
					out.Preset[k] = v
				}
			}
		}
		if er.Update != nil {
			out.UpdateWhere = where(name, er.Update.Where, p+".update.where")
			out.UpdateCheck = where(name, er.Update.Check, p+".update.check")
		}
		out.Delete = where(name, er.Delete, p+".delete")
	}
	for name, fl := range r.Fields {
		if fl == nil {
			continue
		}
		out := entity(name)
		if fl.Read != nil {
			out.ReadFields = slices.Clone(fl.Read)
		}
		if fl.Write != nil {
			out.WriteFields = slices.Clone(fl.Write)
		}
	}
	return rr
}

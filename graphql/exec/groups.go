package exec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
)

// The arguments of <E>Aggregate's groups that REST's aggregate has too
// (docs/graphql.md, Aggregates): buckets on TIMESTAMP and DATE group keys,
// having over the groups' aggregates, and an order by aggregates or keys.
// GraphQL names an aggregate by its function and field (count, sum.price)
// where REST names the alias the request gave it; both compile to the same
// query.Aggregation.

// addMeasure adds fn over field to p once and returns its alias (a measure
// selected twice, or ordered or filtered by, is computed once).
func addMeasure(p *query.Aggregation, fn query.AggFunc, field string) string {
	for _, m := range p.Measures {
		if m.Func == fn && m.Field == field {
			return m.Alias
		}
	}
	alias := "m" + strconv.Itoa(len(p.Measures))
	p.Measures = append(p.Measures, query.Measure{Alias: alias, Func: fn, Field: field, Path: string(fn) + "." + field})
	return alias
}

// buckets applies buckets: [{field, unit}] to p's group keys; each names a
// groupBy field (the compiler checks its type).
func buckets(p *query.Aggregation, v any) error {
	for i, item := range asList(v) {
		m, _ := item.(map[string]any)
		f, _ := m["field"].(string)
		unit, _ := m["unit"].(string)
		k := -1
		for j := range p.GroupBy {
			if p.GroupBy[j].Field == f {
				k = j
			}
		}
		switch {
		case k < 0:
			return apperr.Field(fmt.Sprintf("buckets[%d].field", i), "%q is not named in groupBy", f)
		case p.GroupBy[k].Bucket != "":
			return apperr.Field(fmt.Sprintf("buckets[%d].field", i), "%q has a bucket already", f)
		}
		p.GroupBy[k].Bucket = unit
	}
	return nil
}

// groupOrderHaving sets p's order and having from the groups field's
// arguments.
func (x *execCtx) groupOrderHaving(p *query.Aggregation, args map[string]any) error {
	for i, item := range asList(args["orderBy"]) {
		m, _ := item.(map[string]any)
		name, _ := m["field"].(string)
		d, _ := m["direction"].(string)
		field, err := groupTerm(p, name, fmt.Sprintf("orderBy[%d].field", i))
		if err != nil {
			return err
		}
		p.OrderBy = append(p.OrderBy, query.Order{Field: field, Desc: strings.EqualFold(d, "DESC")})
	}
	h, err := havingTree(p, args["having"], "having")
	if err != nil {
		return err
	}
	if p.Having, err = x.filter(nil, h); err != nil {
		return err
	}
	return nil
}

// groupTerm resolves an order term: count, <function>.<field> (an
// aggregate, added to p), key.<field> or a groupBy field.
func groupTerm(p *query.Aggregation, name, path string) (string, error) {
	if name == "count" {
		return addMeasure(p, query.Count, "*"), nil
	}
	fn, field, dotted := strings.Cut(name, ".")
	if dotted && fn != "key" {
		for _, f := range query.AggFuncs {
			if string(f) == fn && f != query.Count {
				return addMeasure(p, f, field), nil
			}
		}
		return "", apperr.Field(path, "%q: an aggregate is count or <function>.<field> with function one of countDistinct, sum, avg, min, max", name)
	}
	if dotted {
		name = field
	}
	for _, k := range p.GroupBy {
		if k.Field == name {
			return name, nil
		}
	}
	return "", apperr.Field(path, "%q is neither an aggregate (count, sum.price, ...) nor a groupBy field", name)
}

// havingTree rewrites a having input ({count: {gte: 2}, sum: {price:
// {gt: 10}}, AND: [...]}) into a where over p's aliases ({"m0": {gte: 2},
// "m1": {gt: 10}}), adding the measures it names.
func havingTree(p *query.Aggregation, v any, path string) (any, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, nil
	}
	out := make(map[string]any, len(m))
	for k, val := range m {
		switch k {
		case "AND", "OR":
			if val == nil {
				continue
			}
			items := asList(val)
			list := make([]any, len(items))
			for i, it := range items {
				t, err := havingTree(p, it, fmt.Sprintf("%s.%s[%d]", path, k, i))
				if err != nil {
					return nil, err
				}
				list[i] = t
			}
			out[k] = list
		case "NOT":
			t, err := havingTree(p, val, path+".NOT")
			if err != nil {
				return nil, err
			}
			out[k] = t
		case "count":
			out[addMeasure(p, query.Count, "*")] = val
		default:
			fields, ok := val.(map[string]any)
			if !ok {
				if val == nil {
					continue
				}
				return nil, apperr.Field(path+"."+k, "must be an object of fields")
			}
			for f, cond := range fields {
				out[addMeasure(p, query.AggFunc(k), f)] = cond
			}
		}
	}
	return out, nil
}

// namedMeasures rewrites the aliases (m0, m1...) a validation error of p
// names ("having.m1: ...") into the aggregates the request wrote
// ("having.sum.price: ..."), so the error names the request's path.
func namedMeasures(p *query.Aggregation, err error) error {
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Validation {
		return err
	}
	names := map[string]string{}
	for _, m := range p.Measures {
		n := string(m.Func) + "." + m.Field
		if m.Func == query.Count && m.Field == "*" {
			n = "count"
		}
		names[m.Alias] = n
	}
	rename := func(s string) string {
		parts := strings.Split(s, ".")
		for i, part := range parts {
			if n, ok := names[part]; ok {
				parts[i] = n
			}
		}
		return strings.Join(parts, ".")
	}
	out := *ae
	out.Details = make([]apperr.FieldError, len(ae.Details))
	for i, d := range ae.Details {
		out.Details[i] = apperr.FieldError{Field: rename(d.Field), Message: d.Message}
	}
	if f, rest, ok := strings.Cut(ae.Message, ": "); ok {
		out.Message = rename(f) + ": " + rest
	}
	return &out
}

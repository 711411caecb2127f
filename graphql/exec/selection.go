package exec

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

func (x *execCtx) nextKey() string {
	x.keys++
	return "_n" + strconv.Itoa(x.keys)
}

func addField(sel *query.Selection, name string) {
	if name == schema.ColID { // always read
		return
	}
	for _, f := range sel.Fields {
		if f == name {
			return
		}
	}
	sel.Fields = append(sel.Fields, name)
}

// record builds the shape of a record selection over entity e, adding
// the columns and nested relationship selections it needs to sel.
func (x *execCtx) record(e *schema.Entity, set operation.SelectionSet, sel *query.Selection) (*jsonshape.Shape, error) {
	if sel.Fields == nil {
		sel.Fields = []string{}
	}
	s := &jsonshape.Shape{}
	for _, cf := range x.collect(set, e.Name) {
		name := cf.field.Name
		if name == "__typename" {
			s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Kind: jsonshape.Typename, Typename: e.Name})
			continue
		}
		if field, ok := x.m.File(e.Name, name); ok {
			s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Src: x.fileMeta(sel, field), Kind: jsonshape.Object, Sub: x.fileShape(cf.sel)})
			continue
		}
		rf, isRel := x.m.Rel(e.Name, name)
		if !isRel {
			addField(sel, name)
			s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Src: name, Kind: jsonshape.Scalar})
			continue
		}
		if err := x.canTraverse(rf.Rel, rf.Target); err != nil {
			return nil, err
		}
		args := cf.field.ArgumentMap(x.vars)
		if rf.Agg {
			sh, err := x.relAggregate(rf, cf, args, sel)
			if err != nil {
				return nil, err
			}
			s.Fields = append(s.Fields, *sh)
			continue
		}
		n := query.Nested{Key: x.nextKey(), Relationship: rf.Rel.Name, Direction: rf.Dir, Select: query.Selection{Fields: []string{}}}
		var err error
		n.Limit, _ = operation.IntArg(args["limit"])
		n.Offset, _ = operation.IntArg(args["offset"])
		if n.OrderBy, err = orderBy(args["orderBy"]); err != nil {
			return nil, err
		}
		if !rf.Conn {
			if n.Where, err = x.where(rf.Target, args["where"]); err != nil {
				return nil, err
			}
			sub, err := x.record(rf.Target, cf.sel, &n.Select)
			if err != nil {
				return nil, err
			}
			s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Src: n.Key, Kind: jsonshape.List, Sub: sub})
			sel.Nested = append(sel.Nested, n)
			continue
		}
		n.Edges = true
		if n.Where, err = x.where(rf.Target, args["nodeWhere"]); err != nil {
			return nil, err
		}
		if n.EdgeWhere, err = x.filter(nil, args["edgeWhere"]); err != nil {
			return nil, err
		}
		connT, edgeT := model.RelConnTypes(e.Name, strings.TrimSuffix(name, "Connection"))
		propsT := model.PropertiesType(rf.Rel)
		conn := &jsonshape.Shape{}
		for _, c := range x.collect(cf.sel, connT) {
			if c.field.Name == "__typename" {
				conn.Fields = append(conn.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Typename, Typename: connT})
				continue
			}
			edge := &jsonshape.Shape{}
			for _, ef := range x.collect(c.sel, edgeT) {
				switch ef.field.Name {
				case "__typename":
					edge.Fields = append(edge.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Typename, Typename: edgeT})
				case "id", "createdAt":
					edge.Fields = append(edge.Fields, jsonshape.OutField{Key: ef.key, Src: ef.field.Name, Kind: jsonshape.EdgeMeta})
				case "properties":
					props := &jsonshape.Shape{}
					for _, pf := range x.collect(ef.sel, propsT) {
						if pf.field.Name == "__typename" {
							props.Fields = append(props.Fields, jsonshape.OutField{Key: pf.key, Kind: jsonshape.Typename, Typename: propsT})
						} else {
							props.Fields = append(props.Fields, jsonshape.OutField{Key: pf.key, Src: pf.field.Name, Kind: jsonshape.Scalar})
						}
					}
					edge.Fields = append(edge.Fields, jsonshape.OutField{Key: ef.key, Src: "properties", Kind: jsonshape.Object, Sub: props})
				case "node":
					node, err := x.record(rf.Target, ef.sel, &n.Select)
					if err != nil {
						return nil, err
					}
					edge.Fields = append(edge.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Self, Sub: node})
				}
			}
			conn.Fields = append(conn.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Edges, Sub: edge})
		}
		s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Src: n.Key, Kind: jsonshape.EdgeConn, Sub: conn})
		sel.Nested = append(sel.Nested, n)
	}
	return s, nil
}

// fileMeta adds the metadata of FILE field field to sel (once per field)
// and returns the member it is compiled under. The lookup is scoped to the
// caller's tenant inside the statement.
func (x *execCtx) fileMeta(sel *query.Selection, field string) string {
	sel.TenantID = x.sc.TenantID
	for _, f := range sel.Files {
		if f.Field == field {
			return f.Key
		}
	}
	key := x.nextKey()
	sel.Files = append(sel.Files, query.FileMeta{Field: field, Key: key})
	return key
}

// fileShape is the shape of a File selection; the members come from
// query.FileMeta's JSON object under their GraphQL names.
func (x *execCtx) fileShape(set operation.SelectionSet) *jsonshape.Shape {
	s := &jsonshape.Shape{}
	for _, cf := range x.collect(set, "File") {
		if cf.field.Name == "__typename" {
			s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Kind: jsonshape.Typename, Typename: "File"})
			continue
		}
		s.Fields = append(s.Fields, jsonshape.OutField{Key: cf.key, Src: cf.field.Name, Kind: jsonshape.Scalar})
	}
	return s
}

// readsMore reports whether a record selection needs more than the record
// itself (relationship fields and their aggregates, or file metadata): it
// must be read with a compiled statement rather than taken from a write's
// RETURNING.
func readsMore(sel *query.Selection) bool {
	return len(sel.Nested) > 0 || len(sel.Files) > 0 || len(sel.Aggregates) > 0
}

// canTraverse checks the scopes a relationship traversal needs: read on
// the relationship and on the entity at its far end.
func (x *execCtx) canTraverse(rel *schema.Relationship, target *schema.Entity) error {
	if err := x.p.Require("relationship", rel.Name, "read"); err != nil {
		return err
	}
	return x.p.Require("entity", target.Name, "read")
}

// where converts a <Entity>Where input into a filter on e.
func (x *execCtx) where(e *schema.Entity, v any) (query.Filter, error) { return x.filter(e, v) }

var ops = map[string]query.Op{
	"equals": query.Eq, "not": query.Neq, "in": query.In, "notIn": query.NotIn,
	"lt": query.Lt, "lte": query.Lte, "gt": query.Gt, "gte": query.Gte,
	"contains": query.Contains, "startsWith": query.StartsWith, "endsWith": query.EndsWith, "isNull": query.IsNull,
}

// filter converts a where input; e is nil for relationship properties
// (edgeWhere), which have no relationship predicates.
func (x *execCtx) filter(e *schema.Entity, v any) (query.Filter, error) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var and query.And
	for _, k := range keys {
		val := m[k]
		switch k {
		case "AND", "OR":
			var terms []query.Filter
			for _, item := range asList(val) {
				f, err := x.filter(e, item)
				if err != nil {
					return nil, err
				}
				if f == nil {
					f = query.And{}
				}
				terms = append(terms, f)
			}
			if val == nil {
				continue
			}
			if k == "AND" {
				and = append(and, query.And(terms))
			} else {
				and = append(and, query.Or(terms))
			}
			continue
		case "NOT":
			if val == nil {
				continue
			}
			f, err := x.filter(e, val)
			if err != nil {
				return nil, err
			}
			if f == nil {
				f = query.And{}
			}
			and = append(and, query.Not{Term: f})
			continue
		}
		if e != nil {
			if p, ok := x.m.Pred(e.Name, k); ok {
				if val == nil {
					continue
				}
				if err := x.canTraverse(p.Rel, p.Target); err != nil {
					return nil, err
				}
				f, err := x.filter(p.Target, val)
				if err != nil {
					return nil, err
				}
				and = append(and, query.Related{Relationship: p.Rel.Name, Direction: p.Dir, Quantifier: p.Quantifier, Where: f})
				continue
			}
		}
		fm, ok := val.(map[string]any)
		if !ok {
			continue // null field filter: no condition
		}
		opKeys := make([]string, 0, len(fm))
		for op := range fm {
			opKeys = append(opKeys, op)
		}
		sort.Strings(opKeys)
		for _, op := range opKeys {
			qop, ok := ops[op]
			if !ok {
				return nil, apperr.Field("where."+k, "unknown operator %q", op)
			}
			ov := norm(fm[op])
			if qop == query.IsNull && ov == nil {
				continue
			}
			and = append(and, query.Cond{Field: k, Op: qop, Value: ov})
		}
	}
	if len(and) == 1 {
		return and[0], nil
	}
	return and, nil
}

func asList(v any) []any {
	switch l := v.(type) {
	case nil:
		return nil
	case []any:
		return l
	}
	return []any{v}
}

// norm turns GraphQL argument values into the JSON values (UseNumber) the
// query compiler and records.Prepare take.
func norm(v any) any {
	switch x := v.(type) {
	case int64:
		return json.Number(strconv.FormatInt(x, 10))
	case int:
		return json.Number(strconv.Itoa(x))
	case int32:
		return json.Number(strconv.Itoa(int(x)))
	case float64:
		return json.Number(strconv.FormatFloat(x, 'g', -1, 64))
	case float32:
		return json.Number(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case []any:
		out := make([]any, len(x))
		for i := range x {
			out[i] = norm(x[i])
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			out[k] = norm(val)
		}
		return out
	}
	return v
}

// orderBy converts [{field, direction}].
func orderBy(v any) ([]query.Order, error) {
	var out []query.Order
	for _, item := range asList(v) {
		m, ok := item.(map[string]any)
		if !ok {
			continue
		}
		f, _ := m["field"].(string)
		if f == "" {
			return nil, apperr.Field("orderBy.field", "is required")
		}
		d, _ := m["direction"].(string)
		out = append(out, query.Order{Field: f, Desc: strings.EqualFold(d, "DESC")})
	}
	return out, nil
}

// stringList converts a list of strings (null items are left out: the
// argument's type does not allow them).
func stringList(v any) []string {
	var out []string
	for _, item := range asList(v) {
		if s, ok := item.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

package query

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dds-project/dds/apperr"
)

// restOps maps the REST DSL's operators to Ops.
var restOps = map[string]Op{
	"$eq": Eq, "$neq": Neq, "$ne": Neq,
	"$gt": Gt, "$gte": Gte, "$lt": Lt, "$lte": Lte,
	"$in": In, "$notIn": NotIn, "$nin": NotIn,
	"$isNull":   IsNull,
	"$contains": Contains, "$startsWith": StartsWith, "$endsWith": EndsWith,
}

// ParseWhere parses the REST filter DSL (docs/rest.md, Query; values decoded with
// UseNumber):
//
//	{"price": {"$gte": 10, "$lt": 20}, "status": "live",
//	 "$or": [{"tags": {"$contains": "sale"}}, {"name": {"$startsWith": "A"}}],
//	 "$not": {"active": false}}
//
// A bare value means $eq (null means $isNull); several operators on a field
// and several keys in an object are ANDed. Field names are checked against
// the schema when the plan compiles, so an unknown or malicious name is a
// VALIDATION_ERROR there and never reaches SQL. Errors name the path
// (prefix "where").
func ParseWhere(m map[string]any) (Filter, error) { return parseWhere(m, "where") }

// ParseWhereAt is ParseWhere with a custom error path (e.g. "edgeWhere",
// "traverse[0].where").
func ParseWhereAt(m map[string]any, path string) (Filter, error) { return parseWhere(m, path) }

// ParseWhereJSON decodes a JSON-encoded filter (a query parameter) with
// UseNumber and parses it. An empty string is no filter.
func ParseWhereJSON(s, path string) (Filter, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil || d.More() {
		return nil, apperr.Field(path, "must be a JSON object")
	}
	return parseWhere(m, path)
}

func parseWhere(m map[string]any, path string) (Filter, error) {
	if m == nil {
		return nil, nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // deterministic SQL for the same input
	var and And
	for _, k := range keys {
		v := m[k]
		switch k {
		case "$and", "$or":
			list, ok := v.([]any)
			if !ok {
				return nil, apperr.Field(joinPath(path, k), "must be an array of conditions")
			}
			terms := make([]Filter, 0, len(list))
			for i, it := range list {
				sub, ok := it.(map[string]any)
				if !ok {
					return nil, apperr.Field(fmt.Sprintf("%s[%d]", joinPath(path, k), i), "must be an object of conditions")
				}
				f, err := parseWhere(sub, fmt.Sprintf("%s[%d]", joinPath(path, k), i))
				if err != nil {
					return nil, err
				}
				terms = append(terms, f)
			}
			if k == "$and" {
				and = append(and, And(terms))
			} else {
				and = append(and, Or(terms))
			}
		case "$not":
			sub, ok := v.(map[string]any)
			if !ok {
				return nil, apperr.Field(joinPath(path, k), "must be an object of conditions")
			}
			f, err := parseWhere(sub, joinPath(path, k))
			if err != nil {
				return nil, err
			}
			and = append(and, Not{Term: f})
		default:
			if strings.HasPrefix(k, "$") {
				return nil, apperr.Field(joinPath(path, k), "unknown logical operator (use $and, $or, $not, or a field name)")
			}
			conds, err := parseField(k, v, path)
			if err != nil {
				return nil, err
			}
			and = append(and, conds...)
		}
	}
	if len(and) == 1 {
		return and[0], nil
	}
	return and, nil
}

func parseField(field string, v any, path string) ([]Filter, error) {
	obj, ok := v.(map[string]any)
	if !ok || !hasOperator(obj) {
		return []Filter{Cond{Field: field, Op: Eq, Value: v}}, nil
	}
	ops := make([]string, 0, len(obj))
	for k := range obj {
		ops = append(ops, k)
	}
	sort.Strings(ops)
	out := make([]Filter, 0, len(ops))
	for _, k := range ops {
		op, ok := restOps[k]
		if !ok {
			if strings.HasPrefix(k, "$") {
				return nil, apperr.Field(joinPath(path, field), "unknown operator %s (use $eq, $neq, $gt, $gte, $lt, $lte, $in, $notIn, $isNull, $contains, $startsWith, $endsWith)", k)
			}
			return nil, apperr.Field(joinPath(path, field), "mixes operators with the plain key %q; wrap a JSON value in {\"$eq\": ...}", k)
		}
		out = append(out, Cond{Field: field, Op: op, Value: obj[k]})
	}
	return out, nil
}

func hasOperator(m map[string]any) bool {
	for k := range m {
		if strings.HasPrefix(k, "$") {
			return true
		}
	}
	return false
}

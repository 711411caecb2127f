package query

import (
	"fmt"
	"strings"

	"github.com/dds-project/dds/apperr"
)

// A relationship aggregate written as the response has it. With
// RelAggregate.Output, the record's member is an object of exactly the
// Output members in their order (measures by alias, constants such as a
// __typename, nested objects such as GraphQL's avg {price}), so a caller
// whose record is also written by Postgres (Selection.Output) copies the
// whole item as it stands instead of reshaping {"<alias>": value} in Go.
//
// The object is row_to_json of a row whose columns are the members (one
// more row per nested object), over the one row of the measures: it is
// written as compactly as the record around it (json_agg of rows), where
// json_build_object would put spaces around every colon, and its values
// as json_build_object would write them (the same conversion of each
// datum). Its keys are column names, so at most maxColumnName bytes each.

// maxColumnName is the longest column name Postgres keeps (it cuts longer
// ones).
const maxColumnName = 63

// relObject renders out over the measures' row a (cols: "\x00"+alias → its
// column) as a json value: row_to_json of the members' row.
func relObject(b *builder, out []GroupMember, cols map[string]string, a, path string) (string, error) {
	if len(out) > maxObjectMembers {
		return "", apperr.Field(path, "at most %d members in one object", maxObjectMembers)
	}
	if len(out) == 0 {
		return "'{}'::json", nil
	}
	sel := make([]string, 0, len(out))
	seen := make(map[string]bool, len(out))
	for i, m := range out {
		mpath := fmt.Sprintf("%s[%d]", path, i)
		if m.Key == "" || seen[m.Key] || len(m.Key) > maxColumnName {
			return "", apperr.Field(mpath, "key %q is empty, longer than %d bytes or already used", m.Key, maxColumnName)
		}
		seen[m.Key] = true
		var v string
		switch {
		case m.Sub != nil:
			var err error
			if v, err = relObject(b, m.Sub, cols, a, mpath); err != nil {
				return "", err
			}
		case m.Measure != "":
			col, ok := cols["\x00"+m.Measure]
			if !ok {
				return "", apperr.Field(mpath, "names no aggregate %q", m.Measure)
			}
			v = a + "." + col
		case m.KeyField != "":
			return "", apperr.Field(mpath, "a relationship aggregate has no group key")
		default:
			v = sqlString(m.Const) + "::text"
		}
		sel = append(sel, v+" AS "+quoteAlias(m.Key))
	}
	r := b.alias("o")
	return fmt.Sprintf("(SELECT row_to_json(%s) FROM (SELECT %s) %s)", r, strings.Join(sel, ", "), r), nil
}

package query

import (
	"fmt"
	"strings"

	"github.com/dds-project/dds/apperr"
)

// A group written as the response has it. An aggregation with Output
// compiles to the JSON array of its groups, each group an object of
// exactly the Output members in their order, under their keys, so that a
// caller answering with a different shape than REST's (GraphQL's groups:
// its aliases, nested sum {price} objects, __typename) copies Postgres'
// JSON instead of decoding every group into maps and encoding it again
// (which cost the GraphQL groups of 1,000 rows several times REST's server
// CPU per request).

// GroupMember is one member of a group's JSON in Aggregation.Output:
// exactly one of Measure (a measure's alias), KeyField (a groupBy field's
// value; null for a field not grouped by), Const (a constant string) or
// Sub (an object of members; non-nil, possibly empty).
type GroupMember struct {
	Key      string
	Measure  string
	KeyField string
	Const    string
	Sub      []GroupMember
}

// maxObjectMembers is the most members one json_build_object takes
// (Postgres passes a function at most 100 arguments).
const maxObjectMembers = 50

// groupObject renders out as a json_build_object over the grouped rows g:
// measures name their column through cols["\x00"+alias], group keys
// through cols[field].
func groupObject(out []GroupMember, cols map[string]string, path string) (string, error) {
	if len(out) > maxObjectMembers {
		return "", apperr.Field(path, "at most %d members in one object", maxObjectMembers)
	}
	if len(out) == 0 {
		return "'{}'::json", nil
	}
	parts := make([]string, 0, 2*len(out))
	seen := make(map[string]bool, len(out))
	for i, m := range out {
		mpath := fmt.Sprintf("%s[%d]", path, i)
		if m.Key == "" || seen[m.Key] {
			return "", apperr.Field(mpath, "key %q is empty or already used", m.Key)
		}
		seen[m.Key] = true
		var v string
		switch {
		case m.Sub != nil:
			var err error
			if v, err = groupObject(m.Sub, cols, mpath); err != nil {
				return "", err
			}
		case m.Measure != "":
			col, ok := cols["\x00"+m.Measure]
			if !ok {
				return "", apperr.Field(mpath, "names no aggregate %q", m.Measure)
			}
			v = col
		case m.KeyField != "":
			col, ok := cols[m.KeyField]
			if !ok { // a key field the groups are not grouped by
				col = "NULL::json"
			}
			v = col
		default:
			v = sqlString(m.Const) + "::text"
		}
		parts = append(parts, sqlString(m.Key), v)
	}
	return "json_build_object(" + strings.Join(parts, ", ") + ")", nil
}

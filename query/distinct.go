package query

import (
	"fmt"
	"slices"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// distinctOn checks a List's DistinctOn fields against its order and
// returns the DISTINCT ON clause and the order the list then uses. Postgres
// keeps the first row of each group of equal DistinctOn values in the
// order, so the fields must lead it (in any order among themselves); a list
// without orderBy is ordered by the DistinctOn fields, ascending. id is
// refused: it is unique, so every record is distinct.
func distinctOn(e *schema.Entity, fields []string, order []Order) (clause string, out []Order, err error) {
	exprs := make([]string, len(fields))
	for i, name := range fields {
		path := fmt.Sprintf("distinctOn[%d]", i)
		r, ok := entityRef(e, name, "t")
		switch {
		case !ok:
			return "", nil, apperr.Field(path, "unknown field %q on %s", name, e.Name)
		case r.id:
			return "", nil, apperr.Field(path, "id is unique: every record is already distinct")
		case !r.f.Ordered() && r.f.Type != schema.Boolean:
			return "", nil, apperr.Field(path, "cannot be distinct on %s field %q", describeType(r.f), name)
		case slices.Contains(fields[:i], name):
			return "", nil, apperr.Field(path, "field %q is named twice", name)
		}
		exprs[i] = r.expr
	}
	clause = "DISTINCT ON (" + strings.Join(exprs, ", ") + ") "
	if len(order) == 0 {
		out = make([]Order, len(fields))
		for i, f := range fields {
			out[i] = Order{Field: f}
		}
		return clause, out, nil
	}
	lead := make([]string, 0, len(fields))
	for i := 0; i < len(order) && i < len(fields); i++ {
		lead = append(lead, order[i].Field)
	}
	for i, f := range fields {
		if !slices.Contains(lead, f) {
			return "", nil, apperr.Field(fmt.Sprintf("distinctOn[%d]", i),
				"field %q must lead orderBy: the first %d orderBy keys must be the distinctOn fields", f, len(fields))
		}
	}
	return clause, order, nil
}

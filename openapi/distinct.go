package openapi

import (
	"slices"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/schema"
)

// distinctOnSchema is the query body's distinctOn: sortable fields other
// than id (which is unique), which must lead orderBy.
func distinctOnSchema(e *schema.Entity) *openapi3.Schema {
	fields := slices.DeleteFunc(sortable(e), func(v any) bool { return v == schema.ColID })
	s := array(val(&openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: fields}))
	s.Description = "keep the first record (in the order) of each group of records with equal values of these fields; they must lead orderBy, which defaults to them"
	return s
}

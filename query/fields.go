package query

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// ref is a filterable value: an entity column (user or system field) or a
// relationship property inside the edge's jsonb.
type ref struct {
	name string        // the user-visible name
	expr string        // SQL expression
	f    *schema.Field // type information (synthetic for system fields)
	id   bool          // the record id (uuid)
}

// system field types, shared by every entity.
var (
	idField        = schema.Field{Name: schema.ColID, Type: schema.File} // uuid column
	timestampField = schema.Field{Type: schema.Timestamp}
)

// entityRef resolves name on entity e read from table alias tbl. Only names
// of the validated schema resolve, so no user string reaches SQL.
func entityRef(e *schema.Entity, name, tbl string) (ref, bool) {
	switch name {
	case schema.ColID:
		return ref{name: name, expr: tbl + `."id"`, f: &idField, id: true}, true
	case schema.ColCreatedAt, schema.ColUpdatedAt:
		f := timestampField
		f.Name = name
		return ref{name: name, expr: tbl + "." + schema.Ident(name), f: &f}, true
	case schema.ColDeletedAt:
		if e.SoftDelete {
			f := timestampField
			f.Name = name
			return ref{name: name, expr: tbl + "." + schema.Ident(name), f: &f}, true
		}
	}
	f, ok := e.Field(name)
	if !ok {
		return ref{}, false
	}
	return ref{name: name, expr: tbl + "." + schema.Ident(f.Name), f: f}, true
}

// propertyRef resolves a declared property of relationship r inside the
// jsonb column "properties" of edge alias tbl, cast to the property's column
// type. Properties are validated with schema.CoerceValue on write, so the
// casts cannot fail on stored data.
func propertyRef(r *schema.Relationship, name, tbl string) (ref, bool) {
	f, ok := r.Property(name)
	if !ok {
		return ref{}, false
	}
	lit := "'" + f.Name + "'" // a validated identifier: letters, digits, _
	props := tbl + `."properties"`
	var expr string
	switch {
	case f.Type == schema.JSON:
		expr = "(" + props + "->" + lit + ")"
	case f.List:
		expr = fmt.Sprintf("(CASE WHEN jsonb_typeof(%s->%s) = 'array' THEN ARRAY(SELECT jsonb_array_elements_text(%s->%s))::%s END)",
			props, lit, props, lit, schema.ColumnType(f))
	default:
		expr = fmt.Sprintf("(%s->>%s)::%s", props, lit, schema.ColumnType(f))
	}
	return ref{name: name, expr: expr, f: f}, true
}

// filterField is f without write-only constraints: a filter value longer
// than maxLength is not an error, it just matches nothing.
func filterField(f *schema.Field) *schema.Field {
	if f.MaxLength == 0 {
		return f
	}
	c := *f
	c.MaxLength = 0
	return &c
}

// coerceScalar checks one filter value against the ref's element type and
// returns the value to bind (cast with elementType).
func coerceScalar(r ref, v any) (any, error) {
	if r.id {
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a record id string")
		}
		u, err := uuid.Parse(s)
		if err != nil {
			return nil, errors.New("must be a record id (UUID)")
		}
		return u.String(), nil
	}
	return schema.CoerceElement(filterField(r.f), v)
}

// elementType is the Postgres type of one value of r.
func elementType(r ref) string { return schema.ElementType(r.f) }

// coerceArray checks a JSON array of scalars and returns a Postgres array
// literal (schema.ArrayLiteral) to bind with the cast elementType(r)+"[]".
func coerceArray(r ref, v any, max int) (any, error) {
	items, ok := v.([]any)
	if !ok {
		return nil, errors.New("must be an array")
	}
	if len(items) > max {
		return nil, fmt.Errorf("must have at most %d items", max)
	}
	out := make([]string, len(items))
	for i, it := range items {
		if it == nil {
			return nil, fmt.Errorf("item %d: must not be null", i)
		}
		c, err := coerceScalar(r, it)
		if err != nil {
			return nil, fmt.Errorf("item %d: %w", i, err)
		}
		out[i] = schema.ElementText(c)
	}
	return schema.ArrayLiteral(out), nil
}

// textArg checks a string operand of $contains/$startsWith/$endsWith.
func textArg(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", errors.New("must be a string")
	}
	if !utf8.ValidString(s) || strings.ContainsRune(s, 0) {
		return "", errors.New("must be valid UTF-8 without NUL characters")
	}
	return s, nil
}

// likeEscape makes s a literal inside a LIKE pattern with ESCAPE '\':
// %, _ and \ match themselves.
func likeEscape(s string) string { return likeEscaper.Replace(s) }

var likeEscaper = strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)

// quoteAlias quotes an output column name (a JSON key such as a GraphQL
// alias or a relationship name). It is an output label, not an object
// reference, so any name is safe once its quotes are doubled.
func quoteAlias(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// sqlString renders a constant string literal.
func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func fieldErr(path, name, format string, args ...any) error {
	return apperr.Field(joinPath(path, name), format, args...)
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	if name == "" {
		return path
	}
	return path + "." + name
}

// jsonText marshals a JSON-decoded value for a jsonb bind.
func jsonText(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", errors.New("must be JSON")
	}
	return string(b), nil
}

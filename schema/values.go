package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"github.com/pgvector/pgvector-go"
)

// ColumnType is the Postgres type of a field's column.
func ColumnType(f *Field) string {
	var t string
	switch f.Type {
	case String, Text, Enum:
		t = "text"
	case Integer:
		t = "bigint"
	case Number:
		t = "double precision"
	case Boolean:
		t = "boolean"
	case Timestamp:
		t = "timestamptz"
	case Date:
		t = "date"
	case JSON:
		t = "jsonb"
	case File:
		t = "uuid"
	case Vector:
		return fmt.Sprintf("vector(%d)", f.VectorDimensions)
	default:
		panic("schema.ColumnType: unknown type " + string(f.Type))
	}
	if f.List {
		t += "[]"
	}
	return t
}

// ElementType is the column type of one element (ColumnType without []).
func ElementType(f *Field) string {
	return strings.TrimSuffix(ColumnType(f), "[]")
}

// CoerceValue checks a JSON-decoded value (decoded with UseNumber, so numbers
// arrive as json.Number) against the field and returns the value to bind.
// The SQL that binds it must cast the parameter to ColumnType(f).
// nil is returned as nil; whether null is allowed is the caller's rule.
func CoerceValue(f *Field, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	if f.List {
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("must be an array of %s", typeWord(f))
		}
		out := make([]string, len(items))
		for i, it := range items {
			if it == nil {
				return nil, fmt.Errorf("item %d: must not be null", i)
			}
			if f.Type == String || f.Type == Text { // the text as it is, without boxing it
				t, err := coerceText(f, it)
				if err != nil {
					return nil, fmt.Errorf("item %d: %w", i, err)
				}
				out[i] = t
				continue
			}
			c, err := CoerceElement(f, it)
			if err != nil {
				return nil, fmt.Errorf("item %d: %w", i, err)
			}
			out[i] = ElementText(c)
		}
		return ArrayLiteral(out), nil
	}
	return CoerceElement(f, v)
}

// ArrayLiteral renders elements (in their text form, none NULL) as a
// Postgres array literal, {"a","b"}, which Postgres parses for an array of
// any element type. A list value is bound in this form: a Go string goes to
// Postgres as text, as it is, where a driver.Valuer array (pq.Array) would
// make pgx try a binary encoding, fail, re-parse the text and encode it
// again on every request.
func ArrayLiteral(elems []string) string {
	n := 2
	for _, e := range elems {
		n += len(e) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, e := range elems {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		for j := 0; j < len(e); j++ {
			if e[j] == '"' || e[j] == '\\' {
				b = append(b, '\\')
			}
			b = append(b, e[j])
		}
		b = append(b, '"')
	}
	return string(append(b, '}'))
}

// CoerceElement checks one scalar value of the field's type (ignoring List).
func CoerceElement(f *Field, v any) (any, error) {
	switch f.Type {
	case String, Text:
		s, err := coerceText(f, v)
		if err != nil {
			return nil, err
		}
		return s, nil
	case Enum:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a string")
		}
		for _, allowed := range f.Values {
			if s == allowed {
				return s, nil
			}
		}
		return nil, fmt.Errorf("must be one of %s", strings.Join(f.Values, ", "))
	case Integer:
		n, ok := asNumber(v)
		if !ok {
			return nil, errors.New("must be an integer")
		}
		i, err := n.Int64()
		if err != nil {
			return nil, errors.New("must be an integer between -2^63 and 2^63-1")
		}
		return i, nil
	case Number:
		n, ok := asNumber(v)
		if !ok {
			return nil, errors.New("must be a number")
		}
		x, err := n.Float64()
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, errors.New("must be a finite number")
		}
		return x, nil
	case Boolean:
		b, ok := v.(bool)
		if !ok {
			return nil, errors.New("must be a boolean")
		}
		return b, nil
	case Timestamp:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be an ISO 8601 timestamp string")
		}
		t, err := ParseTimestamp(s)
		if err != nil {
			return nil, err
		}
		return t, nil
	case Date:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a date string (YYYY-MM-DD)")
		}
		t, err := time.Parse(time.DateOnly, s)
		if err != nil {
			return nil, errors.New("must be a date string (YYYY-MM-DD)")
		}
		return t.Format(time.DateOnly), nil
	case JSON:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, errors.New("must be JSON")
		}
		if strings.Contains(string(b), `\u0000`) {
			return nil, errors.New("must not contain NUL characters")
		}
		return string(b), nil
	case File:
		s, ok := v.(string)
		if !ok {
			return nil, errors.New("must be a file id string")
		}
		id, err := uuid.Parse(s)
		if err != nil {
			return nil, errors.New("must be a file id")
		}
		return id.String(), nil
	case Vector:
		items, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("must be an array of %d numbers", f.VectorDimensions)
		}
		vec, err := ParseVector(items, f.VectorDimensions)
		if err != nil {
			return nil, err
		}
		return pgvector.NewVector(vec), nil
	}
	return nil, fmt.Errorf("unsupported type %s", f.Type)
}

// coerceText checks a STRING or TEXT value.
func coerceText(f *Field, v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", errors.New("must be a string")
	}
	if err := checkText(s); err != nil {
		return "", err
	}
	if f.MaxLength > 0 && utf8.RuneCountInString(s) > f.MaxLength {
		return "", fmt.Errorf("must be at most %d characters", f.MaxLength)
	}
	if limit, why := ByteLimit(f); len(s) > limit {
		return "", fmt.Errorf("must be at most %d bytes of UTF-8 (%s)", limit, why)
	}
	return s, nil
}

// asNumber accepts json.Number (request bodies) and float64 (definitions
// read back from storage).
func asNumber(v any) (json.Number, bool) {
	switch n := v.(type) {
	case json.Number:
		return n, true
	case float64:
		return json.Number(strconv.FormatFloat(n, 'f', -1, 64)), true
	}
	return "", false
}

// ParseVector converts JSON numbers to float32s, checking the length.
func ParseVector(items []any, dims int) ([]float32, error) {
	if len(items) != dims {
		return nil, fmt.Errorf("must have exactly %d dimensions, got %d", dims, len(items))
	}
	out := make([]float32, len(items))
	for i, it := range items {
		var x float64
		switch n := it.(type) {
		case json.Number:
			var err error
			if x, err = n.Float64(); err != nil {
				return nil, fmt.Errorf("item %d: must be a number", i)
			}
		case float64:
			x = n
		default:
			return nil, fmt.Errorf("item %d: must be a number", i)
		}
		if math.IsNaN(x) || math.IsInf(x, 0) || math.Abs(x) > math.MaxFloat32 {
			return nil, fmt.Errorf("item %d: must be a finite number", i)
		}
		out[i] = float32(x)
	}
	return out, nil
}

// ParseTimestamp accepts RFC 3339 (with or without fractional seconds) and a
// bare date, which means midnight UTC.
func ParseTimestamp(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Time{}, errors.New("must be an ISO 8601 timestamp (e.g. 2024-01-31T12:00:00Z)")
}

// Limits of what Postgres can index, in bytes of UTF-8 (Postgres' own limits
// are in bytes, so a character count cannot guarantee them).
const (
	// MaxIndexedBytes caps a STRING or TEXT value that is unique or indexed
	// (btree) or an item of a list (GIN). An index entry must fit in a third
	// of an 8 KB page (2,704 bytes with its header) or Postgres refuses the
	// row; 2,000 leaves room for the header and keeps the cap a round number.
	MaxIndexedBytes = 2000
	// MaxSearchableBytes caps a searchable value at the size limit of a
	// tsvector (1 MiB - 1). Text that size usually makes a much smaller
	// tsvector, since a repeated word is stored once; text crafted from
	// distinct short words can still overflow it, and Postgres' refusal
	// (SQLSTATE 54000) is then mapped to a 400 naming the searchable fields.
	MaxSearchableBytes = 1<<20 - 1
	// MaxTextBytes caps any other STRING or TEXT value (the request body cap
	// is usually lower).
	MaxTextBytes = 64 << 20
)

// ByteLimit is the largest value, in bytes, a STRING or TEXT field (or one
// item of a list) may hold so that every index on it can hold it, and why.
func ByteLimit(f *Field) (int, string) {
	switch {
	case f.Unique:
		return MaxIndexedBytes, "unique values are indexed"
	case f.List:
		return MaxIndexedBytes, "list items are indexed"
	case f.Indexed:
		return MaxIndexedBytes, "indexed values"
	case f.Searchable:
		return MaxSearchableBytes, "the full-text index's limit"
	}
	return MaxTextBytes, "the largest text DDS stores"
}

func checkText(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("must be valid UTF-8")
	}
	if strings.ContainsRune(s, 0) {
		return errors.New("must not contain NUL characters")
	}
	return nil
}

// ElementText renders a coerced scalar as Postgres array-element text.
func ElementText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case time.Time:
		return x.Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(x)
	}
}

func typeWord(f *Field) string {
	switch f.Type {
	case Integer:
		return "integers"
	case Number:
		return "numbers"
	case Boolean:
		return "booleans"
	case Timestamp:
		return "timestamps"
	case Date:
		return "dates"
	}
	return "strings"
}

// SelectExpr is the SQL expression that renders column col of table alias
// tbl as JSON-friendly: vectors become real[] so they serialise as arrays.
func SelectExpr(f *Field, tbl string) string {
	col := tbl + "." + Ident(f.Name)
	if f.Type == Vector {
		return col + "::real[]"
	}
	return col
}

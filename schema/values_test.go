package schema

import (
	"encoding/json"

	"testing"

	"github.com/lib/pq"
)

// TestArrayLiteral checks that list values are bound in the text form
// Postgres parses for an array: the same text lib/pq's arrays render.
func TestArrayLiteral(t *testing.T) {
	for _, elems := range [][]string{
		{},
		{"a"},
		{"a", "b c"},
		{`quote " inside`, `back\slash`, `\"`, "", "NULL", "{x,y}", "comma,here", "üñí"},
	} {
		want, err := pq.StringArray(elems).Value()
		if err != nil {
			t.Fatal(err)
		}
		if got := ArrayLiteral(elems); got != want {
			t.Errorf("ArrayLiteral(%q) = %s, want %s", elems, got, want)
		}
	}
}

// TestCoerceListIsArrayText: a list field's value binds as its array
// literal (a Go string pgx sends as text).
func TestCoerceListIsArrayText(t *testing.T) {
	f := &Field{Name: "n", Type: Integer, List: true}
	v, err := CoerceValue(f, []any{json.Number("1"), json.Number("-2")})
	if err != nil || v != `{"1","-2"}` {
		t.Fatalf("CoerceValue = %#v, %v", v, err)
	}
}

package records

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"
	"github.com/pgvector/pgvector-go"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// TestTextValue checks the text form batches bind for each coerced type:
// what Postgres parses back into the column type.
func TestTextValue(t *testing.T) {
	ts := time.Date(2024, 1, 31, 12, 0, 0, 500, time.FixedZone("x", 3600))
	cases := []struct {
		in   any
		want string
		ok   bool
	}{
		{nil, "", false},
		{"a,\"b\"", "a,\"b\"", true},
		{int64(-42), "-42", true},
		{1.5e300, "1.5e+300", true},
		{true, "true", true},
		{ts, "2024-01-31T12:00:00.0000005+01:00", true},
		{pq.Array([]string{"a", "b c"}), `{"a","b c"}`, true},
		{schema.ArrayLiteral([]string{"a", "b c"}), `{"a","b c"}`, true},
		{pgvector.NewVector([]float32{1, 2.5}), "[1,2.5]", true},
	}
	for _, c := range cases {
		got, ok, err := textValue(c.in)
		if err != nil || got != c.want || ok != c.ok {
			t.Errorf("textValue(%#v) = %q, %v, %v; want %q, %v", c.in, got, ok, err, c.want, c.ok)
		}
	}
}

func TestPrepareProperties(t *testing.T) {
	rel := &schema.Relationship{Name: "R", From: "A", To: "B", Properties: []schema.Field{
		{Name: "position", Type: schema.Integer, Default: json.Number("1")},
		{Name: "since", Type: schema.Timestamp},
		{Name: "label", Type: schema.String, Required: true},
	}}
	props := func(s string) map[string]any {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	got, _, err := prepareProperties(rel, props(`{"label": "x", "since": "2024-01-01T02:00:00+02:00"}`), true)
	if err != nil || got != `{"label":"x","position":1,"since":"2024-01-01T00:00:00Z"}` {
		t.Fatalf("create: %s %v", got, err)
	}
	for _, bad := range []string{`{"label": "x", "weight": 1}`, `{"label": 5}`, `{}`, `{"label": null}`} {
		_, _, err := prepareProperties(rel, props(bad), true)
		if !apperr.Is(err, apperr.Validation) {
			t.Errorf("%s: want VALIDATION_ERROR, got %v", bad, err)
		}
	}
	got, remove, err := prepareProperties(rel, props(`{"since": null, "position": 3}`), false)
	if err != nil || got != `{"position":3}` || len(remove) != 1 || remove[0] != "since" {
		t.Fatalf("patch: %s %v %v", got, remove, err)
	}
}

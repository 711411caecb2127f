package operation

import (
	"encoding/json"
	"reflect"
	"testing"
)

// TestVariablesGivenAreTheDefaultsApplied: when every variable is given
// (or has no default), the checked variables are the given map itself,
// equal to what withDefaults builds.
func TestVariablesGivenAreTheDefaultsApplied(t *testing.T) {
	one := &Value{Lit: int64(1)}
	defs := []varDef{{name: "id", nonNull: true, check: checkString}, {name: "n", def: one, check: checkFloat}, {name: "s", check: checkString}}
	for _, given := range []map[string]any{
		{"id": "a", "n": json.Number("2")},
		{"id": "a", "n": json.Number("2"), "s": nil},
		{"id": "a"},
		{"id": "a", "s": "x"},
	} {
		if !scalarsValid(defs, given) {
			t.Fatalf("%v: not valid", given)
		}
		want := withDefaults(defs, given)
		if allGiven(defs, given) != reflect.DeepEqual(given, want) {
			t.Errorf("%v: allGiven %v, withDefaults %v", given, allGiven(defs, given), want)
		}
	}
}

// TestArgumentIsArgumentMapsValue: one argument read alone is what the map
// of all of them holds.
func TestArgumentIsArgumentMapsValue(t *testing.T) {
	f := &Field{Name: "product", Arguments: []Argument{{Name: "id", Value: &Value{Kind: ValueVariable, Name: "id"}}, {Name: "x", Value: &Value{Lit: "lit"}}}}
	vars := map[string]any{"id": "abc"}
	for _, name := range []string{"id", "x", "absent"} {
		if got, want := f.Argument(name, vars), f.ArgumentMap(vars)[name]; got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

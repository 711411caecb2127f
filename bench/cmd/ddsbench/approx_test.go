package main

import (
	"encoding/json"
	"testing"
)

// The aggregate sections accept averages that differ in their last bits
// (the order Postgres adds floats in) and nothing else.
func TestApproxEqualAllowsOnlySummationOrder(t *testing.T) {
	groups := func(s string) []map[string]any {
		var g struct{ Groups []map[string]any }
		if err := json.Unmarshal([]byte(s), &g); err != nil {
			t.Fatal(err)
		}
		return g.Groups
	}
	base := groups(`{"groups":[{"key":{"stock":0},"avgPrice":396.1980211081798,"n":379}]}`)
	for _, c := range []struct {
		other string
		same  bool
	}{
		{`{"groups":[{"key":{"stock":0},"avgPrice":396.19802110817955,"n":379}]}`, true},
		{`{"groups":[{"key":{"stock":0},"avgPrice":396.1981,"n":379}]}`, false},
		{`{"groups":[{"key":{"stock":0},"avgPrice":396.1980211081798,"n":380}]}`, false},
		{`{"groups":[{"key":{"stock":1},"avgPrice":396.1980211081798,"n":379}]}`, false},
		{`{"groups":[]}`, false},
	} {
		if got := approxEqual(base, groups(c.other)); got != c.same {
			t.Errorf("approxEqual with %s = %v, want %v", c.other, got, c.same)
		}
	}
}

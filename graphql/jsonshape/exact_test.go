package jsonshape

import (
	"bytes"
	"testing"
)

func TestWriteExactItemsDropsOnlyJSONAggSeparators(t *testing.T) {
	for raw, want := range map[string]string{
		`{"items" : [{"a":1}, ` + "\n " + `{"a":"x, \n y"}]}`: `[{"a":1},{"a":"x, \n y"}]`,
		`{"items" : []}`: `[]`,
		`{"items" : [{"l":[{"b":1}, ` + "\n " + `{"b":2}]}, ` + "\n " + `{}]}`: `[{"l":[{"b":1},{"b":2}]},{}]`,
	} {
		var b bytes.Buffer
		i, err := MemberAt([]byte(raw), "items")
		if err != nil || !WriteExactItems(&b, []byte(raw), i) || b.String() != want {
			t.Errorf("%s: wrote %s (%v), want %s", raw, b.String(), err, want)
		}
	}
	for _, raw := range []string{
		`{"items" : [{"a":1},` + "\n" + `{"a":2}]}`, // a newline in another form
		`{"items" : [{"a":1}], "count" : 1}`,        // more than the items
		`{"items" : null}`,
		"{\"items\" : [{\"a\":1}, \n {\"a\":2}]}\n",
	} {
		b := bytes.NewBufferString("keep")
		i, _ := MemberAt([]byte(raw), "items")
		if WriteExactItems(b, []byte(raw), i) || b.String() != "keep" {
			t.Errorf("%q: written as it stands: %s", raw, b.String())
		}
	}
}

func TestWriteExactObjectDropsOnlyJSONAggSeparators(t *testing.T) {
	for raw, want := range map[string]string{
		`{"a":1,"s":"x, \n y"}`:                                     `{"a":1,"s":"x, \n y"}`,
		`{"l":[{"b":1}, ` + "\n " + `{"b":2}],"n":{"count":2}}`:     `{"l":[{"b":1},{"b":2}],"n":{"count":2}}`,
		`{"l":[{"m":[{"c":1}, ` + "\n " + `{}]}, ` + "\n " + `{}]}`: `{"l":[{"m":[{"c":1},{}]},{}]}`,
		`{}`: `{}`,
	} {
		var b bytes.Buffer
		if !WriteExactObject(&b, []byte(raw)) || b.String() != want {
			t.Errorf("%s: wrote %s, want %s", raw, b.String(), want)
		}
	}
	for _, raw := range []string{
		`{"l":[{"a":1},` + "\n" + `{"a":2}]}`, // a newline in another form
		`[{"a":1}]`,                           // not an object
		`null`,
		"{\"a\":1}\n",
		``,
	} {
		b := bytes.NewBufferString("keep")
		if WriteExactObject(b, []byte(raw)) || b.String() != "keep" {
			t.Errorf("%q: written as it stands: %s", raw, b.String())
		}
	}
}

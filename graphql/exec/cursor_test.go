package exec

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/query"
)

// TestCursorsAreWhatEncodingJSONWrites: a cursor is the bytes
// encoding/json writes for it (so a cursor handed out before reads the
// same), and reading it gives what encoding/json reads.
func TestCursorsAreWhatEncodingJSONWrites(t *testing.T) {
	ck := newCursorKeys([]query.Order{{Field: "name", Desc: true}, {Field: "price"}, {Field: "id"}})
	for _, item := range []string{
		`{"id":"0190a1b2-0000-7000-8000-000000000001","name":"Apple","price":1.5}`,
		`{"name":"<Tarte> & \"Tatin\" \\ é 🍎 ` + "\u2028" + ` \n","price":-1.25e-7,"id":"x"}`,
		`{"name":null,"price":9007199254740993,"id":"y","other":[1, 2]}`,
		`{"id":"z"}`, // missing keys are null
		`{"name":true,"price":false,"id":""}`,
		`{"name":{"a": [1, 2]},"price":[ 1 ],"id":"w"}`, // not an order key's value, but still as encoding/json writes it
	} {
		ms, err := jsonshape.ObjectMembers([]byte(item), nil)
		if err != nil {
			t.Fatal(err)
		}
		want, err := encodeCursorSlow(ck.names, ck.keys, ms)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ck.encode([]byte(item))
		if err != nil || got != want {
			raw, _ := base64.RawURLEncoding.DecodeString(got)
			wraw, _ := base64.RawURLEncoding.DecodeString(want)
			t.Fatalf("%s: cursor %s (%v), encoding/json writes %s", item, raw, err, wraw)
		}
		vals, err := ck.decode(got, "after")
		if err != nil {
			t.Fatal(err)
		}
		if slow := decodeSlow(t, got); !reflect.DeepEqual(vals, slow) {
			t.Errorf("%s: read %#v, encoding/json reads %#v", item, vals, slow)
		}
	}
}

// decodeSlow is what encoding/json reads from cursor s.
func decodeSlow(t *testing.T, s string) []any {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	var c cursor
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	out := make([]any, len(c.V))
	for i, v := range c.V {
		var x any
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			t.Fatal(err)
		}
		out[i] = x
	}
	return out
}

// Cursors a client wrote itself: read as encoding/json reads them, or
// refused when not of this order.
func TestCursorsOfAnyFormReadAsEncodingJSONReadsThem(t *testing.T) {
	ck := newCursorKeys([]query.Order{{Field: "price"}, {Field: "id"}})
	enc := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for _, raw := range []string{
		`{"k":["price","id"],"v":[1 , "a"]}`,
		`{"k":["price","id"],"v":[1e3,"a\u00e9"]}`,
		`{"k":["price","id"],"v":[-0.5,"a\"b"]}`,
		`{"k":["price","id"],"v":["\ud83c\udf4e","\/"]}`,
		"{\"k\":[\"price\",\"id\"],\"v\":[\"\xff\xfe\",\"a\"]}", // invalid UTF-8: replaced, as encoding/json does
		` {"k":["price","id"],"v":[null,true]} `,
		`{"v":[2,"b"],"k":["price","id"]}`,
		`{"k":["price","id"],"v":[{"a":1},"b"]}`,
	} {
		got, err := ck.decode(enc(raw), "after")
		if err != nil {
			t.Errorf("%s: %v", raw, err)
			continue
		}
		if want := decodeSlow(t, enc(raw)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: read %#v, encoding/json reads %#v", raw, got, want)
		}
	}
	for _, raw := range []string{
		`{"k":["price","id"],"v":[1]}`,
		`{"k":["price","id"],"v":[1,"a",2]}`,
		`{"k":["price:desc","id"],"v":[1,"a"]}`,
		`{"k":["price","id"],"v":[1,"a"]`,
		`{"k":["price","id"],"v":[01,"a"]}`,
		`{"k":["price","id"],"v":[1,"a"]}x`,
		`not json`,
	} {
		if _, err := ck.decode(enc(raw), "after"); err == nil {
			t.Errorf("%s: read, want refused", raw)
		}
	}
	if _, err := ck.decode("!!", "after"); err == nil {
		t.Error("not base64: read, want refused")
	}
}

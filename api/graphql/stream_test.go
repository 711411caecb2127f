package graphql

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestWriteObjStreamsOrReshapesToTheSameBytes(t *testing.T) {
	product := &shape{fields: []outField{
		{key: "id", src: "id", kind: oScalar},
		{key: "name", src: "name", kind: oScalar},
	}}
	nested := &shape{fields: []outField{
		{key: "id", src: "id", kind: oScalar},
		{key: "name", src: "name", kind: oScalar},
		{key: "categories", src: "_n1", kind: oList, sub: &shape{fields: []outField{
			{key: "title", src: "name", kind: oScalar},
			{key: "products", src: "_n2", kind: oList, sub: product},
		}}},
	}}
	cases := []struct {
		name   string
		s      *shape
		raw    string
		want   string
		stream bool // written in one pass
	}{
		{"in order", product, `{"id":"a","name":"x"}`, `{"id":"a","name":"x"}`, true},
		{"unselected member skipped", &shape{fields: []outField{{key: "name", src: "name", kind: oScalar}}},
			`{"id":"a","name":"x","price":1}`, `{"name":"x"}`, true},
		{"alias renames", &shape{fields: []outField{{key: "n", src: "name", kind: oScalar}}},
			`{"id":"a","name":"x"}`, `{"n":"x"}`, true},
		{"typename first, between and last", &shape{fields: []outField{
			{key: "__typename", kind: oTypename, typename: "P"},
			{key: "id", src: "id", kind: oScalar},
			{key: "t", kind: oTypename, typename: "P"},
			{key: "name", src: "name", kind: oScalar},
			{key: "u", kind: oTypename, typename: "P"},
		}}, `{"id":"a","name":"x"}`, `{"__typename":"P","id":"a","t":"P","name":"x","u":"P"}`, true},
		{"out of order", &shape{fields: []outField{
			{key: "name", src: "name", kind: oScalar},
			{key: "id", src: "id", kind: oScalar},
		}}, `{"id":"a","name":"x"}`, `{"name":"x","id":"a"}`, false},
		{"one member under two keys", &shape{fields: []outField{
			{key: "a", src: "name", kind: oScalar},
			{key: "b", src: "name", kind: oScalar},
		}}, `{"id":"a","name":"x"}`, `{"a":"x","b":"x"}`, false},
		{"missing member is null", &shape{fields: []outField{
			{key: "id", src: "id", kind: oScalar},
			{key: "gone", src: "gone", kind: oScalar},
		}}, `{"id":"a"}`, `{"id":"a","gone":null}`, false},
		{"escaped key", product, `{"id":"a","n\u0061me":"x"}`, `{"id":"a","name":"x"}`, false},
		{"values copied as written", product, `{"id":"a\"}{,","name":{"k":[1,"]"]}}`, `{"id":"a\"}{,","name":{"k":[1,"]"]}}`, true},
		{"null object", product, `null`, `null`, true},
		{"run broken by a skipped member", &shape{fields: []outField{
			{key: "id", src: "id", kind: oScalar},
			{key: "price", src: "price", kind: oScalar},
		}}, `{"id":"a","name":"x","price":1}`, `{"id":"a","price":1}`, true},
		{"run broken by an alias", &shape{fields: []outField{
			{key: "id", src: "id", kind: oScalar},
			{key: "n", src: "name", kind: oScalar},
			{key: "price", src: "price", kind: oScalar},
			{key: "stock", src: "stock", kind: oScalar},
		}}, `{"id":"a","name":"x","price":1,"stock":null}`, `{"id":"a","n":"x","price":1,"stock":null}`, true},
		{"spaces around members", product, `{ "id" : "a" ,  "name":  "x" }`, `{"id":"a","name":"x"}`, true},
		{"escapes and unicode copied as written", product, `{"id":"a\\","name":"é\"\u00e9\n\\\""}`, `{"id":"a\\","name":"é\"\u00e9\n\\\""}`, true},
		{"JSON values keep their spaces", product, `{"id":"a","name":{"k": [1, 2]}}`, `{"id":"a","name":{"k": [1, 2]}}`, true},
		{"json_agg whitespace", nested,
			`{"id" : "p", "name" : "x", "_n1" : [{"id":"c","name":"C","_n2":[{"id":"q","name":"y"}, ` + "\n " + `{"id":"r","name":"z"}]}, ` + "\n " + `{"id":"d","name":"D","_n2":null}]}`,
			`{"id":"p","name":"x","categories":[{"title":"C","products":[{"id":"q","name":"y"},{"id":"r","name":"z"}]},{"title":"D","products":[]}]}`, true},
		{"nested list out of order", &shape{fields: []outField{
			{key: "c", src: "_n1", kind: oList, sub: product},
			{key: "id", src: "id", kind: oScalar},
		}}, `{"id":"p","_n1":[{"id":"c","name":"C"}]}`, `{"c":[{"id":"c","name":"C"}],"id":"p"}`, false},
		{"file object", &shape{fields: []outField{
			{key: "id", src: "id", kind: oScalar},
			{key: "f", src: "_f1", kind: oObject, sub: &shape{fields: []outField{{key: "fileName", src: "fileName", kind: oScalar}}}},
			{key: "g", src: "_f2", kind: oObject, sub: &shape{fields: []outField{{key: "fileName", src: "fileName", kind: oScalar}}}},
		}}, `{"id":"a","_f1":{"id":"f","fileName":"a.txt"},"_f2":null}`, `{"id":"a","f":{"fileName":"a.txt"},"g":null}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			b.WriteString("prefix")
			if err := writeObj(&b, c.s, []byte(c.raw)); err != nil {
				t.Fatal(err)
			}
			if got := b.String(); got != "prefix"+c.want {
				t.Errorf("writeObj = %s, want prefix%s", got, c.want)
			}
			var r bytes.Buffer
			if err := reshapeObj(&r, c.s, []byte(c.raw)); err != nil {
				t.Fatal(err)
			}
			if r.String() != c.want {
				t.Errorf("reshapeObj = %s, want %s", r.String(), c.want)
			}
			var sb bytes.Buffer
			_, ok, err := streamObj(&sb, c.s, []byte(c.raw), 0)
			if err != nil || ok != c.stream {
				t.Errorf("streamed = %v (%v), want %v", ok, err, c.stream)
			}
		})
	}
}

func TestWriteListStreamsItems(t *testing.T) {
	s := &shape{fields: []outField{{key: "n", src: "name", kind: oScalar}}}
	for raw, want := range map[string]string{
		`[{"id":"a","name":"x"}, ` + "\n " + `{"id":"b","name":"y"}]`: `[{"n":"x"},{"n":"y"}]`,
		`[]`:   `[]`,
		`null`: `[]`,
		``:     `[]`,
	} {
		var b bytes.Buffer
		if err := writeList(&b, s, []byte(raw)); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if b.String() != want {
			t.Errorf("%q: got %s, want %s", raw, b.String(), want)
		}
	}
	for _, raw := range []string{`[{"name":"x"}`, `[{"name":"x"} {"name":"y"}]`, `{"name":1}`, `[{"name":"x}]`} {
		var b bytes.Buffer
		if err := writeList(&b, s, []byte(raw)); err == nil {
			t.Errorf("%q: malformed JSON accepted: %s", raw, b.String())
		}
	}
}

func TestSkipStringFindsTheUnescapedQuote(t *testing.T) {
	for raw, end := range map[string]int{
		`"abc",`:        5,
		`"",`:           2,
		`"a\"b",`:       6,
		`"a\\",`:        5,
		`"a\\\"b",`:     8,
		`"\\\\",`:       6,
		`"é\u0022x",`:   11,
		`"x\\\\\"y\"",`: 12,
	} {
		got, err := skipString([]byte(raw), 0)
		if err != nil || got != end {
			t.Errorf("skipString(%s) = %d, %v; want %d", raw, got, err, end)
		}
	}
	for _, raw := range []string{`"abc`, `"a\"`, `"a\\\"`} {
		if _, err := skipString([]byte(raw), 0); err == nil {
			t.Errorf("skipString(%s): unterminated string accepted", raw)
		}
	}
}

func TestMemberAtSkipsTheMembersBefore(t *testing.T) {
	for raw, want := range map[string]int{
		`{"items" : [1]}`:                     11,
		`{"count" : 2, "items" : [1]}`:        24,
		`{"count" : {"items":[]}, "items":1}`: 33,
		`{"count" : 2}`:                       -1,
		`{}`:                                  -1,
	} {
		got, err := memberAt([]byte(raw), "items")
		if err != nil || got != want {
			t.Errorf("memberAt(%s) = %d, %v; want %d", raw, got, err, want)
		}
	}
	for _, raw := range []string{``, `[]`, `{"count" 2}`, `{"count":2 "items":[]}`, `{"count":"x`} {
		if _, err := memberAt([]byte(raw), "items"); err == nil {
			t.Errorf("memberAt(%s): malformed JSON accepted", raw)
		}
	}
}

// skipString agrees with a byte-by-byte scan on strings of every length
// around its eight-byte steps, with quotes and backslashes anywhere.
func TestSkipStringAgreesWithAByteScan(t *testing.T) {
	byteScan := func(b []byte) (int, bool) {
		for i := 1; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1, true
			}
		}
		return 0, false
	}
	alphabet := []byte{'a', '"', '\\', 0xc3, 0xa9, 'u', ' '}
	r := rand.New(rand.NewPCG(1, 2))
	for n := 0; n < 20000; n++ {
		b := []byte{'"'}
		for range r.IntN(40) {
			b = append(b, alphabet[r.IntN(len(alphabet))])
		}
		want, ok := byteScan(b)
		got, err := skipString(b, 0)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("skipString(%q) = %d, %v; a byte scan gives %d, %v", b, got, err, want, ok)
		}
	}
}

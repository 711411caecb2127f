package jsonshape

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

func TestWriteObjStreamsOrReshapesToTheSameBytes(t *testing.T) {
	product := &Shape{Fields: []OutField{
		{Key: "id", Src: "id", Kind: Scalar},
		{Key: "name", Src: "name", Kind: Scalar},
	}}
	nested := &Shape{Fields: []OutField{
		{Key: "id", Src: "id", Kind: Scalar},
		{Key: "name", Src: "name", Kind: Scalar},
		{Key: "categories", Src: "_n1", Kind: List, Sub: &Shape{Fields: []OutField{
			{Key: "title", Src: "name", Kind: Scalar},
			{Key: "products", Src: "_n2", Kind: List, Sub: product},
		}}},
	}}
	cases := []struct {
		name   string
		s      *Shape
		raw    string
		want   string
		stream bool // written in one pass
	}{
		{"in order", product, `{"id":"a","name":"x"}`, `{"id":"a","name":"x"}`, true},
		{"unselected member skipped", &Shape{Fields: []OutField{{Key: "name", Src: "name", Kind: Scalar}}},
			`{"id":"a","name":"x","price":1}`, `{"name":"x"}`, true},
		{"alias renames", &Shape{Fields: []OutField{{Key: "n", Src: "name", Kind: Scalar}}},
			`{"id":"a","name":"x"}`, `{"n":"x"}`, true},
		{"typename first, between and last", &Shape{Fields: []OutField{
			{Key: "__typename", Kind: Typename, Typename: "P"},
			{Key: "id", Src: "id", Kind: Scalar},
			{Key: "t", Kind: Typename, Typename: "P"},
			{Key: "name", Src: "name", Kind: Scalar},
			{Key: "u", Kind: Typename, Typename: "P"},
		}}, `{"id":"a","name":"x"}`, `{"__typename":"P","id":"a","t":"P","name":"x","u":"P"}`, true},
		{"out of order", &Shape{Fields: []OutField{
			{Key: "name", Src: "name", Kind: Scalar},
			{Key: "id", Src: "id", Kind: Scalar},
		}}, `{"id":"a","name":"x"}`, `{"name":"x","id":"a"}`, false},
		{"one member under two keys", &Shape{Fields: []OutField{
			{Key: "a", Src: "name", Kind: Scalar},
			{Key: "b", Src: "name", Kind: Scalar},
		}}, `{"id":"a","name":"x"}`, `{"a":"x","b":"x"}`, false},
		{"missing member is null", &Shape{Fields: []OutField{
			{Key: "id", Src: "id", Kind: Scalar},
			{Key: "gone", Src: "gone", Kind: Scalar},
		}}, `{"id":"a"}`, `{"id":"a","gone":null}`, false},
		{"escaped key", product, `{"id":"a","n\u0061me":"x"}`, `{"id":"a","name":"x"}`, false},
		{"values copied as written", product, `{"id":"a\"}{,","name":{"k":[1,"]"]}}`, `{"id":"a\"}{,","name":{"k":[1,"]"]}}`, true},
		{"null object", product, `null`, `null`, true},
		{"run broken by a skipped member", &Shape{Fields: []OutField{
			{Key: "id", Src: "id", Kind: Scalar},
			{Key: "price", Src: "price", Kind: Scalar},
		}}, `{"id":"a","name":"x","price":1}`, `{"id":"a","price":1}`, true},
		{"run broken by an alias", &Shape{Fields: []OutField{
			{Key: "id", Src: "id", Kind: Scalar},
			{Key: "n", Src: "name", Kind: Scalar},
			{Key: "price", Src: "price", Kind: Scalar},
			{Key: "stock", Src: "stock", Kind: Scalar},
		}}, `{"id":"a","name":"x","price":1,"stock":null}`, `{"id":"a","n":"x","price":1,"stock":null}`, true},
		{"spaces around members", product, `{ "id" : "a" ,  "name":  "x" }`, `{"id":"a","name":"x"}`, true},
		{"escapes and unicode copied as written", product, `{"id":"a\\","name":"é\"\u00e9\n\\\""}`, `{"id":"a\\","name":"é\"\u00e9\n\\\""}`, true},
		{"JSON values keep their spaces", product, `{"id":"a","name":{"k": [1, 2]}}`, `{"id":"a","name":{"k": [1, 2]}}`, true},
		{"json_agg whitespace", nested,
			`{"id" : "p", "name" : "x", "_n1" : [{"id":"c","name":"C","_n2":[{"id":"q","name":"y"}, ` + "\n " + `{"id":"r","name":"z"}]}, ` + "\n " + `{"id":"d","name":"D","_n2":null}]}`,
			`{"id":"p","name":"x","categories":[{"title":"C","products":[{"id":"q","name":"y"},{"id":"r","name":"z"}]},{"title":"D","products":[]}]}`, true},
		{"nested list out of order", &Shape{Fields: []OutField{
			{Key: "c", Src: "_n1", Kind: List, Sub: product},
			{Key: "id", Src: "id", Kind: Scalar},
		}}, `{"id":"p","_n1":[{"id":"c","name":"C"}]}`, `{"c":[{"id":"c","name":"C"}],"id":"p"}`, false},
		{"file object", &Shape{Fields: []OutField{
			{Key: "id", Src: "id", Kind: Scalar},
			{Key: "f", Src: "_f1", Kind: Object, Sub: &Shape{Fields: []OutField{{Key: "fileName", Src: "fileName", Kind: Scalar}}}},
			{Key: "g", Src: "_f2", Kind: Object, Sub: &Shape{Fields: []OutField{{Key: "fileName", Src: "fileName", Kind: Scalar}}}},
		}}, `{"id":"a","_f1":{"id":"f","fileName":"a.txt"},"_f2":null}`, `{"id":"a","f":{"fileName":"a.txt"},"g":null}`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			b.WriteString("prefix")
			if err := WriteObj(&b, c.s, []byte(c.raw)); err != nil {
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
	s := &Shape{Fields: []OutField{{Key: "n", Src: "name", Kind: Scalar}}}
	for raw, want := range map[string]string{
		`[{"id":"a","name":"x"}, ` + "\n " + `{"id":"b","name":"y"}]`: `[{"n":"x"},{"n":"y"}]`,
		`[]`:   `[]`,
		`null`: `[]`,
		``:     `[]`,
	} {
		var b bytes.Buffer
		if err := WriteList(&b, s, []byte(raw)); err != nil {
			t.Fatalf("%q: %v", raw, err)
		}
		if b.String() != want {
			t.Errorf("%q: got %s, want %s", raw, b.String(), want)
		}
	}
	for _, raw := range []string{`[{"name":"x"}`, `[{"name":"x"} {"name":"y"}]`, `{"name":1}`, `[{"name":"x}]`} {
		var b bytes.Buffer
		if err := WriteList(&b, s, []byte(raw)); err == nil {
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
		got, err := SkipString([]byte(raw), 0)
		if err != nil || got != end {
			t.Errorf("skipString(%s) = %d, %v; want %d", raw, got, err, end)
		}
	}
	for _, raw := range []string{`"abc`, `"a\"`, `"a\\\"`} {
		if _, err := SkipString([]byte(raw), 0); err == nil {
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
		got, err := MemberAt([]byte(raw), "items")
		if err != nil || got != want {
			t.Errorf("memberAt(%s) = %d, %v; want %d", raw, got, err, want)
		}
	}
	for _, raw := range []string{``, `[]`, `{"count" 2}`, `{"count":2 "items":[]}`, `{"count":"x`} {
		if _, err := MemberAt([]byte(raw), "items"); err == nil {
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
		got, err := SkipString(b, 0)
		if ok != (err == nil) || ok && got != want {
			t.Fatalf("skipString(%q) = %d, %v; a byte scan gives %d, %v", b, got, err, want, ok)
		}
	}
}

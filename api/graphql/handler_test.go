package graphql

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/wundergraph/go-arena"
)

// TestPlainString: the fast path for query texts takes exactly the JSON
// strings that decode to their own bytes, and decoding agrees with it.
func TestPlainString(t *testing.T) {
	for _, raw := range []string{`"{ products { id } }"`, `"{ a }\n"`, `"caf\u00e9"`, `"é"`, `"a\"b"`, `""`, `null`, `12`, "\"\xff\"", "\"a\tb\""} {
		got, ok := plainString([]byte(raw))
		var want string
		err := json.Unmarshal([]byte(raw), &want)
		if ok && (err != nil || got != want) {
			t.Errorf("%s: fast path gave %q, decoding %q (%v)", raw, got, want, err)
		}
		if !ok && raw == `"{ products { id } }"` {
			t.Errorf("%s: not taken", raw)
		}
	}
}

// TestDecodeBody: the one-pass reader of POST bodies gives what the
// general decoder gives, and declines (for the general decoder to word the
// error) whatever that one refuses or reads otherwise. What it decodes owns
// its memory: the handler reuses the body's buffer and the parser's arena
// for the next request, which here overwrites both before the comparison.
func TestDecodeBody(t *testing.T) {
	a := arena.NewMonotonicArena(arena.WithMinBufferSize(256))
	for _, c := range []struct {
		body string
		ok   bool
	}{
		{`{"query":"{ a }"}`, true},
		{`{"query":"{ a }","operationName":null,"variables":null,"extensions":null}`, true},
		{`{"query":"query($n: Int) { a(n: $n) }","operationName":"Q","variables":{"n":1.50,"s":"é\n","l":[1,null,{"x":true}],"o":{}},"extensions":{"k":[]}}`, true},
		{` {"query":"{ a }"} `, true},
		{`{"query":"{ a }","query":"{ b }"}`, false},
		{`{"query":"{ a }","other":1}`, false},
		{`{"query":1}`, false},
		{`{"operationName":"x"}`, false},
		{`{"query":"{ a }","variables":[]}`, false},
		{`{"query":"{ a }","variables":{"n":1.2.3}}`, false},
		{`{"query":"{ a }","variables":{"n":NaN}}`, false},
		{`{"query":"{ a }","variables":{"a":1,"a":2}}`, false},
		{`{"query":"{ a }"} {}`, false},
		{"{\"query\":\"\xff\"}", false},
		{`{"query":"{ a }","operationName":1}`, false},
		{`[]`, false},
		{`{"query":"query {\n  a(s: \"x\\u00e9\")\n}","operationName":"Q\u0031"}`, true},
		{` { "variables" : { "n" : 1 , "s" : "a\"b" } , "query" : "{ a }" } `, true},
		{`{"qu\u0065ry":"{ a }"}`, false},
		{`{"query":"{ a }","variables":{"s":"\ud800"}}`, false}, // a lone surrogate: the parser and the general decoder disagree
		{`{"query":"{ a(s: \"\uD83D\uDE00\") }"}`, false},
		{`{"query":null}`, false},
		{`{}`, false},
		{"{\"query\":\"a\\n\xff\"}", false},
	} {
		body := []byte(c.body)
		got, ok := decodeBody(a, body)
		a.Reset()
		for i := range body {
			body[i] = 'z'
		}
		if _, next := decodeBody(a, []byte(`{"query":"zzzzzzzzzzzzzzzz","operationName":"zzzz","variables":{"zzzzzzzz":"zzzzzzzzzzzzzzzz","y":[1.5,{"z":"zzzzzzzz"}]},"extensions":{"zz":"zz"}}`)); !next {
			t.Fatal("the next body was not decoded")
		}
		a.Reset()
		if ok != c.ok {
			t.Errorf("%s: ok = %v, want %v", c.body, ok, c.ok)
			continue
		}
		if !ok {
			continue
		}
		var want struct {
			Query         string         `json:"query"`
			OperationName *string        `json:"operationName"`
			Variables     map[string]any `json:"variables"`
			Extensions    map[string]any `json:"extensions"`
		}
		d := json.NewDecoder(strings.NewReader(c.body))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatalf("%s: %v", c.body, err)
		}
		name := ""
		if want.OperationName != nil {
			name = *want.OperationName
		}
		if got.Query != want.Query || got.OperationName != name || !reflect.DeepEqual(got.Variables, want.Variables) || !reflect.DeepEqual(got.Extensions, want.Extensions) {
			t.Errorf("%s: got %+v, want %+v", c.body, got, want)
		}
		if want.Variables != nil {
			var again map[string]any
			d := json.NewDecoder(bytes.NewReader(got.VariablesJSON))
			d.UseNumber()
			if err := d.Decode(&again); err != nil || !reflect.DeepEqual(again, want.Variables) {
				t.Errorf("%s: variables JSON %s", c.body, got.VariablesJSON)
			}
		}
	}
}

package graphql

import (
	"encoding/json"
	"testing"
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

package jsonshape

import (
	"bytes"
	"encoding/json"
)

// WriteKey writes "k": (a GraphQL name, which needs no escaping).
func WriteKey(b *bytes.Buffer, k string) {
	b.WriteByte('"')
	b.WriteString(k) // GraphQL names need no escaping
	b.WriteString(`":`)
}

// WriteString writes s as a JSON string.
func WriteString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

package jsonshape

import (
	"bytes"
	"encoding/json"
)

func WriteKey(b *bytes.Buffer, k string) {
	b.WriteByte('"')
	b.WriteString(k) // GraphQL names need no escaping
	b.WriteString(`":`)
}

func WriteString(b *bytes.Buffer, s string) {
	q, _ := json.Marshal(s)
	b.Write(q)
}

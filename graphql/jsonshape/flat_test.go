package jsonshape

import (
	"bytes"
	"testing"
)

// TestWriteKeptIsWriteObj: a kept shape writes each row as WriteObj does,
// before and after a row made it give up streaming, and reshapeFlat writes
// what reshapeObj writes (or fails where it fails): repeated and escaped
// keys, nested values, whitespace, malformed and truncated objects.
func TestWriteKeptIsWriteObj(t *testing.T) {
	inOrder := `{"id":"a","createdAt":"t","name":"x","price":1}`
	rows := []string{inOrder, `{"id":"b","createdAt":"u","name":"y \"q\"","price":null}`, `null`, `{"id":"c","name":"z"}`, inOrder,
		`{}`, ` { "id" : "d" , "name" : [1, {"x": "}"}] } `, `{"id":"e","name":"first","name":"second"}`, `{"id":"f","n\u0061me":"esc"}`,
		`{"id":"g",}`, `{"id":"h"`, `{"id":"i"} tail`, `[1]`, `{"id":1.5e3,"price":true,"name":false}`}
	for _, fields := range [][]OutField{
		{{Key: "id", Src: "id", Kind: Scalar}, {Key: "name", Src: "name", Kind: Scalar}},                                                     // streams
		{{Key: "id", Src: "id", Kind: Scalar}, {Key: "name", Src: "name", Kind: Scalar}, {Key: "createdAt", Src: "createdAt", Kind: Scalar}}, // reorders
		{{Key: "t", Kind: Typename, Typename: "P"}, {Key: "p", Src: "price", Kind: Scalar}, {Key: "n", Src: "name", Kind: Scalar}},
	} {
		kept := &Shape{Fields: fields}
		for _, raw := range append(rows, rows...) { // the second time round, the shape may have given up streaming
			var flat, obj bytes.Buffer
			errFlat, errObj := reshapeFlat(&flat, &Shape{Fields: fields}, []byte(raw)), reshapeObj(&obj, &Shape{Fields: fields}, []byte(raw))
			if (errFlat == nil) != (errObj == nil) || errObj == nil && !bytes.Equal(flat.Bytes(), obj.Bytes()) {
				t.Errorf("%s: reshapeFlat %s (%v), reshapeObj %s (%v)", raw, flat.Bytes(), errFlat, obj.Bytes(), errObj)
			}
			var got, want bytes.Buffer
			got.WriteString("[")
			want.WriteString("[")
			errGot := WriteKept(&got, kept, []byte(raw))
			errWant := WriteObj(&want, &Shape{Fields: fields}, []byte(raw))
			if (errGot == nil) != (errWant == nil) || errWant == nil && !bytes.Equal(got.Bytes(), want.Bytes()) { // on an error the caller cuts what was written
				t.Errorf("%s: kept %s (%v), writeObj %s (%v)", raw, got.Bytes(), errGot, want.Bytes(), errWant)
			}
		}
	}
}

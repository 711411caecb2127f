// Package jsonshape writes GraphQL responses from the JSON Postgres builds:
// a Shape says which members of a record's JSON to copy under which
// response keys, in selection order, and the writers (a stream in one
// pass, the reshape member by member, the flat reshape of kept shapes,
// the items of a list Postgres built as the response has them) all write
// the same bytes for it, whichever the runtime picks. A small scanner
// splits JSON without decoding it.
package jsonshape

import (
	"bytes"
	"sync/atomic"
)

// Shape says how to turn one JSON object built by Postgres into the
// GraphQL response object of a selection: which members to copy under
// which response keys, in selection order.
type Shape struct {
	Fields []OutField
	// reorders: rows met so far order their members otherwise than this
	// (kept, shared) shape, so WriteKept reshapes them at once.
	reorders atomic.Bool
}

// OutKind says what a field of a shape writes.
type OutKind uint8

// OutField is one response field of a shape: its key, and what it
// writes (a member Src, a constant Typename, or a nested Sub shape).
type OutField struct {
	Key      string
	Src      string
	Kind     OutKind
	Typename string
	Sub      *Shape
}

// reshapeObj writes raw (a JSON object) reshaped by s, member by member:
// the path for what WriteObj cannot stream.
func reshapeObj(b *bytes.Buffer, s *Shape, raw []byte) error {
	if IsNull(raw) {
		b.WriteString("null")
		return nil
	}
	var pool [24]Member
	ms, err := ObjectMembers(raw, pool[:0])
	if err != nil {
		return err
	}
	b.WriteByte('{')
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteByte(',')
		}
		WriteKey(b, f.Key)
		switch f.Kind {
		case Scalar:
			if v := Lookup(ms, f.Src); !IsNull(v) {
				b.Write(v)
			} else {
				b.WriteString("null")
			}
		case Typename:
			WriteString(b, f.Typename)
		case List:
			if err := WriteList(b, f.Sub, Lookup(ms, f.Src)); err != nil {
				return err
			}
		case Object:
			if err := WriteObj(b, f.Sub, Lookup(ms, f.Src)); err != nil {
				return err
			}
		case Self:
			if err := WriteObj(b, f.Sub, raw); err != nil {
				return err
			}
		case EdgeMeta:
			rel := Lookup(ms, "_relationship")
			var p2 [6]Member
			rm, err := ObjectMembers(rel, p2[:0])
			if err != nil {
				return err
			}
			if v := Lookup(rm, f.Src); !IsNull(v) {
				b.Write(v)
			} else {
				b.WriteString("null")
			}
		case EdgeConn:
			items := Lookup(ms, f.Src)
			b.WriteByte('{')
			for j, cf := range f.Sub.Fields {
				if j > 0 {
					b.WriteByte(',')
				}
				WriteKey(b, cf.Key)
				if cf.Kind == Typename {
					WriteString(b, cf.Typename)
					continue
				}
				if err := WriteList(b, cf.Sub, items); err != nil {
					return err
				}
			}
			b.WriteByte('}')
		}
	}
	b.WriteByte('}')
	return nil
}

// reshapeList writes a JSON array of objects, each reshaped by s.
func reshapeList(b *bytes.Buffer, s *Shape, raw []byte) error {
	var pool [64][]byte
	items, err := ArrayItems(raw, pool[:0])
	if err != nil {
		return err
	}
	b.WriteByte('[')
	for i, it := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		if err := WriteObj(b, s, it); err != nil {
			return err
		}
	}
	b.WriteByte(']')
	return nil
}

const (
	Scalar   OutKind = iota // copy member src
	Typename                // the constant typename
	List                    // member src is an array of objects, each reshaped by sub
	Object                  // member src is an object (or null) reshaped by sub
	EdgeConn                // member src is an array of edge items; output {edges: [...]} per sub
	Edges                   // inside oEdgeConn: the edge items, each reshaped by sub
	Self                    // the current object itself reshaped by sub (edge → node)
	EdgeMeta                // member src of the item's "_relationship" object
)

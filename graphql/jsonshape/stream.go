package jsonshape

import "bytes"

// Streaming a result: Postgres writes each record's members in the order the
// compiler selects them (the id, the timestamps, fields in schema order,
// files, then nested selections), which is the order of most selections.
// Where the members a shape copies come in the shape's order, the response
// is written in one pass over Postgres' JSON, copying each value's bytes as
// they are met and renaming keys on the way; nested lists are streamed inside
// that same pass instead of being split into items and members at each
// level. Anything else (a member wanted out of order, one member under two
// response keys, an edge connection, an escaped key, a missing member) makes
// the stream give up, and the result is reshaped member by member instead;
// both write the same bytes.

// WriteObj writes raw (a JSON object, or null) reshaped by s.
func WriteObj(b *bytes.Buffer, s *Shape, raw []byte) error {
	if IsNull(raw) {
		b.WriteString("null")
		return nil
	}
	if streamed, err := tryStream(b, s, raw); streamed || err != nil {
		return err
	}
	return reshapeObj(b, s, raw)
}

// tryStream writes the object raw streamed by s and reports true, or
// writes nothing and reports false when the stream gave up.
func tryStream(b *bytes.Buffer, s *Shape, raw []byte) (bool, error) {
	mark := b.Len()
	end, ok, err := streamObj(b, s, raw, SkipWS(raw, 0))
	if err != nil {
		return false, err
	}
	if ok && SkipWS(raw, end) == len(raw) {
		return true, nil
	}
	b.Truncate(mark)
	return false, nil
}

// WriteList writes a JSON array of objects (null is an empty array), each
// reshaped by s.
func WriteList(b *bytes.Buffer, s *Shape, raw []byte) error {
	end, err := WriteListAt(b, s, raw, 0)
	if err == nil && SkipWS(raw, end) != len(raw) {
		return ErrBadJSON
	}
	return err
}

// WriteListAt writes the JSON array of objects at raw[i] (null, or nothing,
// is an empty array), each reshaped by s, and returns the index past it.
func WriteListAt(b *bytes.Buffer, s *Shape, raw []byte, i int) (int, error) {
	mark := b.Len()
	i = SkipWS(raw, i)
	end, ok, err := streamList(b, s, raw, i)
	if err != nil || ok {
		return end, err
	}
	b.Truncate(mark)
	if end, err = SkipValue(raw, i); err != nil {
		return 0, err
	}
	return end, reshapeList(b, s, raw[i:end])
}

// streamList streams the array (or null, or nothing) at raw[i], each item
// by s. It returns the index past it, or false when it gave up.
func streamList(b *bytes.Buffer, s *Shape, raw []byte, i int) (int, bool, error) {
	if i >= len(raw) {
		b.WriteString("[]")
		return i, true, nil
	}
	if isNullAt(raw, i) {
		b.WriteString("[]")
		return i + 4, true, nil
	}
	if raw[i] != '[' {
		return 0, false, ErrBadJSON
	}
	b.WriteByte('[')
	i = SkipWS(raw, i+1)
	if i < len(raw) && raw[i] == ']' {
		b.WriteByte(']')
		return i + 1, true, nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			b.WriteByte(',')
		}
		var ok bool
		var err error
		if i, ok, err = streamObj(b, s, raw, SkipWS(raw, i)); !ok || err != nil {
			return 0, false, err
		}
		i = SkipWS(raw, i)
		if i >= len(raw) {
			return 0, false, ErrBadJSON
		}
		switch raw[i] {
		case ',':
			i++
		case ']':
			b.WriteByte(']')
			return i + 1, true, nil
		default:
			return 0, false, ErrBadJSON
		}
	}
}

// streamObj streams the object (or null) at raw[i] by s. It returns the
// index past it, or false when it gave up. Members copied under their own
// name, written by Postgres as "key":value, are copied with the key as
// they stand, and consecutive ones as one run of bytes (commas included):
// a leaf record {"id":…,"name":…,"price":…} selected as it is costs one
// copy.
func streamObj(b *bytes.Buffer, s *Shape, raw []byte, i int) (int, bool, error) {
	if i >= len(raw) {
		return 0, false, ErrBadJSON
	}
	if isNullAt(raw, i) {
		b.WriteString("null")
		return i + 4, true, nil
	}
	if raw[i] != '{' {
		return 0, false, ErrBadJSON
	}
	b.WriteByte('{')
	k, n := 0, 0   // next field of s; fields written or in the pending run
	rs, re := 0, 0 // raw[rs:re] is the pending run (none when rs == re)
	i = SkipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			if i >= len(raw) || raw[i] != '"' {
				return 0, false, ErrBadJSON
			}
			ks := i
			kend, err := SkipString(raw, i)
			if err != nil {
				return 0, false, err
			}
			key := raw[i+1 : kend-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				return 0, false, nil
			}
			i = SkipWS(raw, kend)
			if i >= len(raw) || raw[i] != ':' {
				return 0, false, ErrBadJSON
			}
			i = SkipWS(raw, i+1)
			if k < len(s.Fields) && s.Fields[k].Kind == Typename {
				b.Write(raw[rs:re])
				rs, re = 0, 0
				k, n = writeTypenames(b, s, k, n)
			}
			if k < len(s.Fields) && string(key) == s.Fields[k].Src {
				f := &s.Fields[k]
				var ok bool
				switch {
				case f.Kind == Scalar && f.Key == f.Src && i == kend+1: // "key":value, copied as it stands
					var end int
					if end, err = SkipValue(raw, i); err != nil {
						return 0, false, err
					}
					if re > rs && re+1 == ks && raw[re] == ',' { // right after the run: extend it
						re = end
					} else {
						b.Write(raw[rs:re])
						if n > 0 {
							b.WriteByte(',')
						}
						rs, re = ks, end
					}
					i, ok = end, true
				default:
					b.Write(raw[rs:re])
					rs, re = 0, 0
					if n > 0 {
						b.WriteByte(',')
					}
					WriteKey(b, f.Key)
					switch f.Kind {
					case Scalar:
						var end int
						if end, err = SkipValue(raw, i); err != nil {
							return 0, false, err
						}
						b.Write(raw[i:end])
						i, ok = end, true
					case List:
						i, ok, err = streamList(b, f.Sub, raw, i)
					case Object:
						i, ok, err = streamObj(b, f.Sub, raw, i)
					}
				}
				if !ok || err != nil {
					return 0, false, err
				}
				n++
				k++
			} else {
				if s.copies(string(key)) {
					return 0, false, nil // wanted elsewhere in the order, or twice
				}
				if i, err = SkipValue(raw, i); err != nil {
					return 0, false, err
				}
			}
			i = SkipWS(raw, i)
			if i >= len(raw) {
				return 0, false, ErrBadJSON
			}
			if raw[i] == '}' {
				i++
				break
			}
			if raw[i] != ',' {
				return 0, false, ErrBadJSON
			}
			i = SkipWS(raw, i+1)
		}
	}
	b.Write(raw[rs:re])
	if k, _ = writeTypenames(b, s, k, n); k < len(s.Fields) {
		return 0, false, nil // a member the shape copies is missing
	}
	b.WriteByte('}')
	return i, true, nil
}

// writeTypenames writes the __typename fields of s from field k on and
// returns the next field and the count of fields written.
func writeTypenames(b *bytes.Buffer, s *Shape, k, n int) (int, int) {
	for k < len(s.Fields) && s.Fields[k].Kind == Typename {
		if n > 0 {
			b.WriteByte(',')
		}
		WriteKey(b, s.Fields[k].Key)
		WriteString(b, s.Fields[k].Typename)
		k++
		n++
	}
	return k, n
}

// copies reports whether some field of s reads member key.
func (s *Shape) copies(key string) bool {
	for i := range s.Fields {
		if s.Fields[i].Kind != Typename && s.Fields[i].Src == key {
			return true
		}
	}
	return false
}

func isNullAt(b []byte, i int) bool {
	return i+4 <= len(b) && string(b[i:i+4]) == "null"
}

package graphql

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

// writeObj writes raw (a JSON object, or null) reshaped by s.
func writeObj(b *bytes.Buffer, s *shape, raw []byte) error {
	if isNull(raw) {
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
func tryStream(b *bytes.Buffer, s *shape, raw []byte) (bool, error) {
	mark := b.Len()
	end, ok, err := streamObj(b, s, raw, skipWS(raw, 0))
	if err != nil {
		return false, err
	}
	if ok && skipWS(raw, end) == len(raw) {
		return true, nil
	}
	b.Truncate(mark)
	return false, nil
}

// writeList writes a JSON array of objects (null is an empty array), each
// reshaped by s.
func writeList(b *bytes.Buffer, s *shape, raw []byte) error {
	end, err := writeListAt(b, s, raw, 0)
	if err == nil && skipWS(raw, end) != len(raw) {
		return errBadJSON
	}
	return err
}

// writeListAt writes the JSON array of objects at raw[i] (null, or nothing,
// is an empty array), each reshaped by s, and returns the index past it.
func writeListAt(b *bytes.Buffer, s *shape, raw []byte, i int) (int, error) {
	mark := b.Len()
	i = skipWS(raw, i)
	end, ok, err := streamList(b, s, raw, i)
	if err != nil || ok {
		return end, err
	}
	b.Truncate(mark)
	if end, err = skipValue(raw, i); err != nil {
		return 0, err
	}
	return end, reshapeList(b, s, raw[i:end])
}

// streamList streams the array (or null, or nothing) at raw[i], each item
// by s. It returns the index past it, or false when it gave up.
func streamList(b *bytes.Buffer, s *shape, raw []byte, i int) (int, bool, error) {
	if i >= len(raw) {
		b.WriteString("[]")
		return i, true, nil
	}
	if isNullAt(raw, i) {
		b.WriteString("[]")
		return i + 4, true, nil
	}
	if raw[i] != '[' {
		return 0, false, errBadJSON
	}
	b.WriteByte('[')
	i = skipWS(raw, i+1)
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
		if i, ok, err = streamObj(b, s, raw, skipWS(raw, i)); !ok || err != nil {
			return 0, false, err
		}
		i = skipWS(raw, i)
		if i >= len(raw) {
			return 0, false, errBadJSON
		}
		switch raw[i] {
		case ',':
			i++
		case ']':
			b.WriteByte(']')
			return i + 1, true, nil
		default:
			return 0, false, errBadJSON
		}
	}
}

// streamObj streams the object (or null) at raw[i] by s. It returns the
// index past it, or false when it gave up. Members copied under their own
// name, written by Postgres as "key":value, are copied with the key as
// they stand, and consecutive ones as one run of bytes (commas included):
// a leaf record {"id":…,"name":…,"price":…} selected as it is costs one
// copy.
func streamObj(b *bytes.Buffer, s *shape, raw []byte, i int) (int, bool, error) {
	if i >= len(raw) {
		return 0, false, errBadJSON
	}
	if isNullAt(raw, i) {
		b.WriteString("null")
		return i + 4, true, nil
	}
	if raw[i] != '{' {
		return 0, false, errBadJSON
	}
	b.WriteByte('{')
	k, n := 0, 0   // next field of s; fields written or in the pending run
	rs, re := 0, 0 // raw[rs:re] is the pending run (none when rs == re)
	i = skipWS(raw, i+1)
	if i < len(raw) && raw[i] == '}' {
		i++
	} else {
		for {
			if i >= len(raw) || raw[i] != '"' {
				return 0, false, errBadJSON
			}
			ks := i
			kend, err := skipString(raw, i)
			if err != nil {
				return 0, false, err
			}
			key := raw[i+1 : kend-1]
			if bytes.IndexByte(key, '\\') >= 0 {
				return 0, false, nil
			}
			i = skipWS(raw, kend)
			if i >= len(raw) || raw[i] != ':' {
				return 0, false, errBadJSON
			}
			i = skipWS(raw, i+1)
			if k < len(s.fields) && s.fields[k].kind == oTypename {
				b.Write(raw[rs:re])
				rs, re = 0, 0
				k, n = writeTypenames(b, s, k, n)
			}
			if k < len(s.fields) && string(key) == s.fields[k].src {
				f := &s.fields[k]
				var ok bool
				switch {
				case f.kind == oScalar && f.key == f.src && i == kend+1: // "key":value, copied as it stands
					var end int
					if end, err = skipValue(raw, i); err != nil {
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
					writeKey(b, f.key)
					switch f.kind {
					case oScalar:
						var end int
						if end, err = skipValue(raw, i); err != nil {
							return 0, false, err
						}
						b.Write(raw[i:end])
						i, ok = end, true
					case oList:
						i, ok, err = streamList(b, f.sub, raw, i)
					case oObject:
						i, ok, err = streamObj(b, f.sub, raw, i)
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
				if i, err = skipValue(raw, i); err != nil {
					return 0, false, err
				}
			}
			i = skipWS(raw, i)
			if i >= len(raw) {
				return 0, false, errBadJSON
			}
			if raw[i] == '}' {
				i++
				break
			}
			if raw[i] != ',' {
				return 0, false, errBadJSON
			}
			i = skipWS(raw, i+1)
		}
	}
	b.Write(raw[rs:re])
	if k, _ = writeTypenames(b, s, k, n); k < len(s.fields) {
		return 0, false, nil // a member the shape copies is missing
	}
	b.WriteByte('}')
	return i, true, nil
}

// writeTypenames writes the __typename fields of s from field k on and
// returns the next field and the count of fields written.
func writeTypenames(b *bytes.Buffer, s *shape, k, n int) (int, int) {
	for k < len(s.fields) && s.fields[k].kind == oTypename {
		if n > 0 {
			b.WriteByte(',')
		}
		writeKey(b, s.fields[k].key)
		writeString(b, s.fields[k].typename)
		k++
		n++
	}
	return k, n
}

// copies reports whether some field of s reads member key.
func (s *shape) copies(key string) bool {
	for i := range s.fields {
		if s.fields[i].kind != oTypename && s.fields[i].src == key {
			return true
		}
	}
	return false
}

func isNullAt(b []byte, i int) bool {
	return i+4 <= len(b) && string(b[i:i+4]) == "null"
}

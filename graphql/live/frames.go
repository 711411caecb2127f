package live

import (
	"strconv"
	"strings"

	"github.com/dds-project/dds/graphql/exec"
	"github.com/dds-project/dds/graphql/jsonshape"
)

// frameKey names what a subscriber's frame for an event is made of when
// that is only the event and the selection (its response key and shape):
// subscribers with equal keys are sent identical bytes for the same
// event, so a batch encodes the frame once for all of them (frameMemo).
// "" when the frame depends on the subscriber: a selection read per event
// through the subscriber's scope (relationships, file metadata). Whether
// the event reaches a subscriber (its where, its read rule) is decided
// per subscriber before the memo is consulted; the key only says what the
// frame then holds.
func frameKey(sub *exec.Subscription) string {
	if sub.Sel != nil {
		return ""
	}
	var b strings.Builder
	keyString(&b, sub.Key)
	if sub.Change != nil {
		b.WriteByte('C')
		keyString(&b, sub.Change.Typename)
		for _, f := range sub.Change.Fields {
			b.WriteString(strconv.Itoa(int(f.Kind)))
			keyString(&b, f.Key)
			keyShape(&b, f.Shape)
		}
		return b.String()
	}
	b.WriteByte('S')
	keyShape(&b, sub.Shape)
	return b.String()
}

// keyString writes s length-prefixed, so that no two sequences of
// strings write the same key.
func keyString(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}

func keyShape(b *strings.Builder, s *jsonshape.Shape) {
	if s == nil {
		b.WriteByte('-')
		return
	}
	b.WriteByte('{')
	for _, f := range s.Fields {
		b.WriteString(strconv.Itoa(int(f.Kind)))
		keyString(b, f.Key)
		keyString(b, f.Src)
		keyString(b, f.Typename)
		keyShape(b, f.Sub)
	}
	b.WriteByte('}')
}

// frameMemo holds the frames encoded for one event, by frameKey: under
// fan-out many subscribers with the same selection receive the same
// event, and the frame is encoded once, not once per subscriber.
type frameMemo struct {
	seq    int64
	frames map[string][]byte
}

// get is the frame encoded for key and event seq, if any.
func (m *frameMemo) get(seq int64, key string) ([]byte, bool) {
	if m == nil || key == "" || m.seq != seq {
		return nil, false
	}
	b, ok := m.frames[key]
	return b, ok
}

// put keeps frame for key and event seq (forgetting other events').
func (m *frameMemo) put(seq int64, key string, frame []byte) {
	if m == nil || key == "" {
		return
	}
	if m.seq != seq || m.frames == nil {
		if m.frames == nil {
			m.frames = map[string][]byte{}
		} else {
			clear(m.frames)
		}
		m.seq = seq
	}
	m.frames[key] = frame
}

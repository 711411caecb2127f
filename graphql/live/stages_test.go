package live

import (
	"fmt"
	"testing"
	"time"
)

// TestEventTimeReadsTheIDsInsertTime: the stage metrics measure from the
// time dds.uuid_v7() stamps into an event id (48 bits of milliseconds, 12
// of fraction); an id that is no UUIDv7 gives no time rather than a wrong
// one.
func TestEventTimeReadsTheIDsInsertTime(t *testing.T) {
	at := time.Date(2026, 11, 27, 7, 30, 15, 123_456_000, time.UTC)
	ms := at.UnixMilli()
	frac := (at.UnixMicro() - ms*1000) * 4096 / 1000
	id := fmt.Sprintf("%08x-%04x-7%03x-8abc-0123456789ab", ms>>16, ms&0xffff, frac)
	got := EventTime(id)
	if d := got.Sub(at); d < -time.Microsecond || d > time.Microsecond {
		t.Fatalf("EventTime(%s) = %v, want %v", id, got, at)
	}
	for _, bad := range []string{"", "0190a1b2-c3d4-4e5f-8abc-0123456789ab", "not-a-uuid-at-all-not-a-uuid-at-alll", "zzzzzzzz-c3d4-7e5f-8abc-0123456789ab"} {
		if got := EventTime(bad); !got.IsZero() {
			t.Fatalf("EventTime(%q) = %v, want zero", bad, got)
		}
	}
}

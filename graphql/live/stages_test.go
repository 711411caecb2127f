package live

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/dds-project/dds/outbox"
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

// TestStagesFromTheCommit: a frame is timed from its commit only when this
// process wrote its event (NotifyLocal saw the commit); the commit's time
// is what the fair measure subtracts, and every frame is still timed from
// its insert.
func TestStagesFromTheCommit(t *testing.T) {
	f := NewFeed(nil, nil, nil)
	ins := time.Now().Add(-time.Second)
	local := fmt.Sprintf("%08x-%04x-7000-8abc-0123456789ab", ins.UnixMilli()>>16, ins.UnixMilli()&0xffff)
	f.local.add([]string{local}, ins.Add(300*time.Millisecond))
	o := f.origin(&outbox.Event{ID: local})
	if o.Inserted.IsZero() || !o.Committed.Equal(ins.Add(300*time.Millisecond)) {
		t.Fatalf("origin of a local write %+v: want its insert and its commit", o)
	}
	if other := f.origin(&outbox.Event{ID: "0190a1b2-c3d4-7e5f-8abc-0123456789ab"}); !other.Committed.IsZero() {
		t.Fatalf("origin of another process's write %+v: want no commit time", other)
	}
	at := ins.Add(400 * time.Millisecond)
	f.stages.observeFrom(StageWritten, o, at)
	f.stages.observeFrom(StageWritten, Origin{Inserted: ins}, at)
	count := func(vec *prometheus.HistogramVec) (uint64, float64) {
		var m dto.Metric
		if err := vec.WithLabelValues("written").(prometheus.Histogram).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
	}
	if n, sum := count(f.stages.vec); n != 2 || sum < 0.79 || sum > 0.81 {
		t.Fatalf("from the insert: %d frames, %.3f s; want 2 frames of 0.4 s", n, sum)
	}
	if n, sum := count(f.stages.fromCommit); n != 1 || sum < 0.099 || sum > 0.101 {
		t.Fatalf("from the commit: %d frames, %.3f s; want the local one, 0.1 s", n, sum)
	}
}

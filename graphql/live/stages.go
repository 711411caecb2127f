package live

import (
	"encoding/hex"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Stages of an event's way from its write to its subscribers' sockets, each
// measured from the moment the event was inserted (the time its UUIDv7 id
// carries: dds.uuid_v7() stamps clock_timestamp() to a fraction of a
// millisecond). They tell where a late frame waited:
//
//   - committed: the write committed and this process announced the event
//     (the feed is woken in process at once, see NotifyLocal);
//   - notified: the NOTIFY of another process's write (or of this one's)
//     arrived;
//   - horizon: the poll that read the event had proven a safe horizon
//     covering it (outbox.Horizon: every earlier event-writing transaction
//     had ended);
//   - read: the batch holding it was read from the outbox (in the same
//     round trip as the proof: the two are one moment since migration
//     00051, kept apart for the dashboards that chart them);
//   - dispatched: its tenant's goroutine began handing the batch out;
//   - encoded: a subscriber's filter and read rule passed and its frame was
//     encoded (or taken from the batch's memo), per frame;
//   - enqueued: the frame was queued on its socket, per frame;
//   - written: the socket write carrying the frame returned, per frame.
//
// A stage observed per frame weighs each event by its subscribers, as the
// subscribers see it.
//
// The same stages from horizon on are also measured from the commit
// (dds_graphql_feed_commit_stage_seconds), for the events this process
// wrote (it knows when they committed): no subscriber can have a frame
// before its write commits, so the time from the insert counts the
// write's own statement and WAL flush, which the feed cannot shorten.
// From the commit is the fair measure of the feed: it still counts the
// wait for earlier writers (the horizon), which ordering requires.
var StageNames = [...]string{"committed", "notified", "horizon", "read", "dispatched", "encoded", "enqueued", "written"}

// Stage indexes StageNames.
type Stage int

// The stages, in StageNames' order.
const (
	StageCommitted Stage = iota
	StageNotified
	StageHorizon
	StageRead
	StageDispatched
	StageEncoded
	StageEnqueued
	StageWritten
)

// stageBuckets spans 0.25 ms to about 4.5 s in steps of 25 %: a quantile
// read from them is within a step of the truth.
var stageBuckets = prometheus.ExponentialBuckets(0.00025, 1.25, 45)

// stages holds one histogram per stage, from the insert and from the
// commit. It is the prometheus.Collector of both.
type stages struct {
	vec, fromCommit *prometheus.HistogramVec
	h, c            [len(StageNames)]prometheus.Observer
}

func newStages() *stages {
	s := &stages{vec: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dds_graphql_feed_stage_seconds",
		Help:    "Time from an event's insert to each stage of its way to the subscribers' sockets (committed, notified, horizon, read, dispatched, and per frame encoded, enqueued, written).",
		Buckets: stageBuckets,
	}, []string{"stage"}), fromCommit: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "dds_graphql_feed_commit_stage_seconds",
		Help:    "Time from the commit of an event this server wrote to each later stage of its way to the subscribers' sockets (horizon, read, dispatched, and per frame encoded, enqueued, written).",
		Buckets: stageBuckets,
	}, []string{"stage"})}
	for i, name := range StageNames {
		s.h[i] = s.vec.WithLabelValues(name)
		if Stage(i) >= StageHorizon {
			s.c[i] = s.fromCommit.WithLabelValues(name)
		}
	}
	return s
}

// Describe implements prometheus.Collector.
func (s *stages) Describe(ch chan<- *prometheus.Desc) {
	s.vec.Describe(ch)
	s.fromCommit.Describe(ch)
}

// Collect implements prometheus.Collector.
func (s *stages) Collect(ch chan<- prometheus.Metric) {
	s.vec.Collect(ch)
	s.fromCommit.Collect(ch)
}

// Origin is when a frame's event was inserted (EventTime) and, when this
// process wrote it, committed (zero otherwise).
type Origin struct{ Inserted, Committed time.Time }

// observeFrom records that an event of origin o reached stage st now,
// from its insert and from its commit when known.
func (s *stages) observeFrom(st Stage, o Origin, now time.Time) {
	s.observe(st, o.Inserted, now)
	if !o.Committed.IsZero() && s.c[st] != nil {
		s.c[st].Observe(max(now.Sub(o.Committed), 0).Seconds())
	}
}

// observe records that an event inserted at origin reached stage now; a
// zero origin (an id that is no UUIDv7) is not recorded.
func (s *stages) observe(st Stage, origin time.Time, now time.Time) {
	if origin.IsZero() {
		return
	}
	s.h[st].Observe(max(now.Sub(origin), 0).Seconds())
}

// ObserveStage records that a frame of an event of origin reached stage
// st now (the socket reports StageWritten).
func (s *Feed) ObserveStage(st Stage, origin Origin) {
	s.stages.observeFrom(st, origin, time.Now())
}

// StageCollector is the stage histograms (from the insert and from the
// commit), to register on the metrics registry.
func (s *Feed) StageCollector() prometheus.Collector { return s.stages }

// EventTime is when the event with id was inserted: the 48-bit
// millisecond and 12-bit fraction of a UUIDv7 (RFC 9562 method 3, as
// dds.uuid_v7() fills them). Zero when id is not a UUIDv7.
func EventTime(id string) time.Time {
	// xxxxxxxx-xxxx-7xxx-...: 8 + 4 hex digits of milliseconds, the
	// version digit, 3 digits of fraction.
	if len(id) != 36 || id[14] != '7' {
		return time.Time{}
	}
	var b [8]byte
	if _, err := hex.Decode(b[:4], []byte(id[0:8])); err != nil {
		return time.Time{}
	}
	if _, err := hex.Decode(b[4:6], []byte(id[9:13])); err != nil {
		return time.Time{}
	}
	if _, err := hex.Decode(b[6:8], []byte("0"+id[15:18])); err != nil {
		return time.Time{}
	}
	ms := int64(b[0])<<40 | int64(b[1])<<32 | int64(b[2])<<24 | int64(b[3])<<16 | int64(b[4])<<8 | int64(b[5])
	frac := int64(b[6])<<8 | int64(b[7])
	return time.UnixMicro(ms*1000 + frac*1000/4096)
}

package relay

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dds-project/dds/webhook"
)

// metrics are the relay's own: batch duration and size, plus the shared
// delivery counter. A nil *metrics records nothing.
type metrics struct {
	duration   prometheus.Histogram
	events     prometheus.Counter
	missed     prometheus.Counter
	deliveries *webhook.Metrics
}

func newMetrics(reg prometheus.Registerer, deliveries *webhook.Metrics) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "dds_relay_batch_duration_seconds",
			Help:    "Time to relay one claimed outbox batch (match, commit deliveries, first attempts, record).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dds_relay_events_total", Help: "Outbox events claimed and processed by the relay.",
		}),
		missed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "dds_webhook_paced_slots_missed_total",
			Help: "Queued deliveries of rate-limited webhooks not started within the allowed lateness of their slot (taken again with a new slot).",
		}),
		deliveries: deliveries,
	}
	reg.MustRegister(m.duration, m.events, m.missed)
	return m
}

func (m *metrics) batch(d time.Duration, events int) {
	if m == nil {
		return
	}
	m.duration.Observe(d.Seconds())
	m.events.Add(float64(events))
}

func (m *metrics) attempt(kind string, rec webhook.AttemptRecord) {
	if m == nil {
		return
	}
	m.deliveries.Observe(kind, rec)
}

func (m *metrics) pacedMissed(n int) {
	if m == nil {
		return
	}
	m.missed.Add(float64(n))
}

package api

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the HTTP metrics every request records, labelled by route
// pattern (never the raw path, so tenant ids and record ids do not explode
// the series).
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	rejected *prometheus.CounterVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dds_http_requests_total", Help: "HTTP requests by route pattern and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "dds_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"route"}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "dds_rate_limit_rejections_total", Help: "Requests refused with 429 by rate-limit layer (ip, auth, tenant).",
		}, []string{"layer"}),
	}
	reg.MustRegister(m.requests, m.duration, m.rejected)
	return m
}

func (m *Metrics) observe(route string, status int, d time.Duration, rejectedBy string) {
	if m == nil {
		return
	}
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(route, strconv.Itoa(status)).Inc()
	m.duration.WithLabelValues(route).Observe(d.Seconds())
	if rejectedBy != "" {
		m.rejected.WithLabelValues(rejectedBy).Inc()
	}
}

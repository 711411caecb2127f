package api

import (
	"strconv"
	"sync"
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

	// The series of each route and status, found once: resolving label
	// values hashes them on every call.
	mu     sync.RWMutex
	series map[seriesKey]routeSeries
}

type seriesKey struct {
	route  string
	status int
}

type routeSeries struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		series: map[seriesKey]routeSeries{},
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
	k := seriesKey{route, status}
	m.mu.RLock()
	rs, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		rs = routeSeries{m.requests.WithLabelValues(route, strconv.Itoa(status)), m.duration.WithLabelValues(route)}
		m.mu.Lock()
		m.series[k] = rs
		m.mu.Unlock()
	}
	rs.requests.Inc()
	rs.duration.Observe(d.Seconds())
	if rejectedBy != "" {
		m.rejected.WithLabelValues(rejectedBy).Inc()
	}
}

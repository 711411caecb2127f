package webhook

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics count delivery attempts by outcome. A nil *Metrics records
// nothing.
type Metrics struct {
	attempts *prometheus.CounterVec
}

// NewMetrics registers the delivery metrics on reg: the attempt counter and
// a collector reading the retry backlog at scrape time.
func NewMetrics(reg prometheus.Registerer, s *Store) *Metrics {
	m := &Metrics{attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "dds_webhook_deliveries_total",
		Help: "Webhook delivery attempts by attempt (first: by the relay, retry: by the retry workflow) and outcome (succeeded, retrying, failed, gone, cancelled).",
	}, []string{"attempt", "outcome"})}
	reg.MustRegister(m.attempts, &backlogCollector{store: s,
		retrying: prometheus.NewDesc("dds_webhook_retry_backlog", "Deliveries waiting for a retry (status retrying).", nil, nil),
		handOver: prometheus.NewDesc("dds_webhook_handover_backlog", "Retrying deliveries whose retry workflow has not been started yet (Temporal unreachable or behind).", nil, nil),
	})
	return m
}

// Observe counts one recorded attempt.
func (m *Metrics) Observe(attempt string, rec AttemptRecord) {
	if m == nil {
		return
	}
	outcome := rec.Status
	if rec.Result.Gone() {
		outcome = "gone"
	}
	m.attempts.WithLabelValues(attempt, outcome).Inc()
}

type backlogCollector struct {
	store              *Store
	retrying, handOver *prometheus.Desc
}

func (c *backlogCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.retrying
	ch <- c.handOver
}

func (c *backlogCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var row struct {
		Retrying int64 `db:"retrying"`
		HandOver int64 `db:"handover"`
	}
	if err := c.store.db.GetContext(ctx, &row, `SELECT count(*) AS retrying, count(*) FILTER (WHERE workflow_started_at IS NULL) AS handover
		FROM dds.webhook_deliveries WHERE status = 'retrying'`); err != nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.retrying, prometheus.GaugeValue, float64(row.Retrying))
	ch <- prometheus.MustNewConstMetric(c.handOver, prometheus.GaugeValue, float64(row.HandOver))
}

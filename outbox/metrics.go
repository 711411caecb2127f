package outbox

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Collector reports the outbox backlog at scrape time: unrelayed events
// and the age of the oldest (the outbox lag). One cheap indexed query per
// scrape, bounded by a 2 s timeout.
type Collector struct {
	store     *Store
	unrelayed *prometheus.Desc
	lag       *prometheus.Desc
	up        *prometheus.Desc
}

// NewCollector returns the collector; register it on the process registry.
func NewCollector(s *Store) *Collector {
	return &Collector{store: s,
		unrelayed: prometheus.NewDesc("dds_outbox_unrelayed_events", "Outbox events committed but not yet relayed to webhook delivery.", nil, nil),
		lag:       prometheus.NewDesc("dds_outbox_lag_seconds", "Age of the oldest unrelayed outbox event (0 when none).", nil, nil),
		up:        prometheus.NewDesc("dds_outbox_scrape_ok", "1 when the outbox backlog could be read at this scrape.", nil, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.unrelayed
	ch <- c.lag
	ch <- c.up
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	b, err := c.store.Backlog(ctx)
	if err != nil {
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.unrelayed, prometheus.GaugeValue, float64(b.Unrelayed))
	ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, b.OldestAge.Seconds())
}

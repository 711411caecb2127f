// Package obs holds the observability pieces that several packages set or
// both processes set up: the job-progress gauges and the OpenTelemetry
// tracer provider.
package obs

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// JobProgress are the gauges of long-running jobs (bulk imports, exports,
// re-indexing): how far each running job is. A job reports with Set as it
// goes and calls Done when it ends, which removes its series, so the number
// of series stays the number of running jobs.
type JobProgress struct {
	done  *prometheus.GaugeVec
	total *prometheus.GaugeVec
}

// NewJobProgress registers dds_job_items_done and dds_job_items_total on reg.
func NewJobProgress(reg prometheus.Registerer) *JobProgress {
	j := &JobProgress{
		done: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dds_job_items_done", Help: "Items a running job has processed, by job kind and id.",
		}, []string{"kind", "job"}),
		total: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "dds_job_items_total", Help: "Items a running job will process (0 when not known yet), by job kind and id.",
		}, []string{"kind", "job"}),
	}
	reg.MustRegister(j.done, j.total)
	return j
}

// Set reports that job of kind has processed done of total items. A nil
// JobProgress records nothing.
func (j *JobProgress) Set(kind, job string, done, total int64) {
	if j == nil {
		return
	}
	j.done.WithLabelValues(kind, job).Set(float64(done))
	j.total.WithLabelValues(kind, job).Set(float64(total))
}

// Done removes a finished (or failed) job's series.
func (j *JobProgress) Done(kind, job string) {
	if j == nil {
		return
	}
	j.done.DeleteLabelValues(kind, job)
	j.total.DeleteLabelValues(kind, job)
}

// NewRegistry is a process's Prometheus registry with the Go runtime,
// process and database-pool collectors (go_sql_* with db_name="dds": open,
// in use and idle connections, waits for a free connection).
func NewRegistry(db *sql.DB) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		collectors.NewDBStatsCollector(db, "dds"))
	return reg
}

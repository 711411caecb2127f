package obs

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestJobProgress(t *testing.T) {
	reg := prometheus.NewRegistry()
	j := NewJobProgress(reg)
	j.Set("import", "j1", 40, 100)
	want := `
# HELP dds_job_items_done Items a running job has processed, by job kind and id.
# TYPE dds_job_items_done gauge
dds_job_items_done{job="j1",kind="import"} 40
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "dds_job_items_done"); err != nil {
		t.Fatal(err)
	}
	j.Done("import", "j1")
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("after Done: %d series (%v), want none", n, err)
	}
	var none *JobProgress
	none.Set("import", "j2", 1, 2) // a nil JobProgress is a no-op
}

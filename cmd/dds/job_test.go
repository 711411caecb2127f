package main

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/jobs"
)

func TestProgressLine(t *testing.T) {
	total := int64(1000)
	zero := int64(0)
	cases := []struct {
		status    string
		processed int64
		total     *int64
		want      []string
	}{
		{"queued", 0, nil, []string{"[------------------------------]", " 0 ", "queued"}},
		{"running", 500, &total, []string{"[###############---------------]", " 50%", "500/1000", "running"}},
		{"running", 2000, &total, []string{"[##############################]", "100%"}},
		{"running", 0, &zero, []string{"0/0"}},
		{"succeeded", 10, &total, []string{"100%", "succeeded"}},
	}
	for _, c := range cases {
		j := &jobs.Job{Type: "import", Entity: "Product", Status: c.status}
		j.Progress.Processed, j.Progress.Total = c.processed, c.total
		got := progressLine(j)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s %d/%v: %q lacks %q", c.status, c.processed, c.total, got, w)
			}
		}
	}
}

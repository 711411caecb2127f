package load

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Table prints results side by side, each with its throughput as a ratio of
// a baseline's (measured in the same run).
type Table struct {
	rows []tableRow
}

type tableRow struct {
	res       Result
	baselines []Result
	section   string
}

// Section starts a titled group of rows.
func (t *Table) Section(title string) { t.rows = append(t.rows, tableRow{section: title}) }

// Add appends a row; the row's req/s is shown as a share of each
// baseline's (none, one or several).
func (t *Table) Add(r Result, baselines ...Result) {
	t.rows = append(t.rows, tableRow{res: r, baselines: baselines})
}

// Ratio is r's req/s over baseline's (0 when the baseline did nothing).
func Ratio(r, baseline Result) float64 {
	if baseline.RPS <= 0 {
		return 0
	}
	return r.RPS / baseline.RPS
}

// Print writes the table: name | req/s | p50 | p90 | p99 | max | errors | vs baselines.
func (t *Table) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\t req/s\t p50\t p90\t p99\t max\t errors\t vs baseline\t")
	for _, row := range t.rows {
		if row.section != "" {
			fmt.Fprintf(tw, "%s\t\t\t\t\t\t\t\t\n", "— "+row.section)
			continue
		}
		r := row.res
		var ratios []string
		for _, b := range row.baselines {
			ratios = append(ratios, fmt.Sprintf("%.1f%% of %s", 100*Ratio(r, b), b.Name))
		}
		ratio := strings.Join(ratios, ", ")
		fmt.Fprintf(tw, "%s\t %.0f\t %s\t %s\t %s\t %s\t %d\t %s\t\n", r.Name, r.RPS,
			FormatDuration(r.P50), FormatDuration(r.P90), FormatDuration(r.P99), FormatDuration(r.Max), r.Errors, ratio)
	}
	tw.Flush()
	for _, row := range t.rows {
		if row.res.FirstError != "" {
			fmt.Fprintf(w, "  %s: first error: %s\n", row.res.Name, strings.TrimSpace(row.res.FirstError))
		}
	}
}

// FormatDuration prints a latency with three significant digits in ms
// (µs below 1 ms).
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "-"
	case d < time.Millisecond:
		return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
	case d < 10*time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	case d < 100*time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0fms", float64(d)/float64(time.Millisecond))
}

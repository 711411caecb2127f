package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/relay"
)

// traces collects the relay's batch timelines (relay.Config.Trace) while
// on; the backlog run prints them as a profile by phase.
type traces struct {
	mu  sync.Mutex
	on  bool
	all []relay.BatchTrace
}

func (t *traces) add(b relay.BatchTrace) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.on && b.Events > 0 {
		t.all = append(t.all, b)
	}
}

func (t *traces) start() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on, t.all = true, nil
}

func (t *traces) stop() []relay.BatchTrace {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.on = false
	out := t.all
	t.all = nil
	sort.Slice(out, func(i, j int) bool { return out[i].ClaimStart.Before(out[j].ClaimStart) })
	return out
}

// printPhases prints where the batches of one run spent their time: per
// phase the sum over batches and the median batch, how much of the run
// the relay's serial claim loop took, and how many batches were in
// flight on average. With perBatch, one line per batch of timestamps (ms
// since the run's first claim).
func printPhases(label string, bs []relay.BatchTrace, perBatch bool) {
	if len(bs) == 0 {
		return
	}
	t0 := bs[0].ClaimStart
	var end time.Time
	var claim, match, wait, posts, tail, total, rec []time.Duration
	events, deliveries, stmts, rows := 0, 0, 0, 0
	for _, b := range bs {
		events += b.Events
		deliveries += b.Deliveries
		if b.Done.After(end) {
			end = b.Done
		}
		claim = append(claim, b.Claimed.Sub(b.ClaimStart))
		total = append(total, b.Done.Sub(b.ClaimStart))
		if !b.Matched.IsZero() {
			match = append(match, b.Matched.Sub(b.Claimed))
		}
		if !b.FirstSend.IsZero() {
			wait = append(wait, b.FirstSend.Sub(b.Matched))
			posts = append(posts, b.LastResult.Sub(b.FirstSend))
			tail = append(tail, b.Done.Sub(b.LastResult))
		}
		for _, r := range b.Records {
			rec = append(rec, r.End.Sub(r.Start))
			stmts++
			rows += r.Rows
		}
	}
	wall := end.Sub(t0)
	sum := func(ds []time.Duration) time.Duration {
		var s time.Duration
		for _, d := range ds {
			s += d
		}
		return s
	}
	med := func(ds []time.Duration) time.Duration {
		if len(ds) == 0 {
			return 0
		}
		ds = slices.Clone(ds)
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d.Microseconds())/1000) }
	fmt.Printf("%s by phase: %d batches, %d events, %d deliveries in %s ms (first claim to last batch done); %.1f batches in flight on average\n",
		label, len(bs), events, deliveries, ms(wall), float64(sum(total))/float64(wall))
	fmt.Printf("  %-44s %10s %10s\n", "phase", "sum ms", "median ms")
	line := func(name string, ds []time.Duration) {
		fmt.Printf("  %-44s %10s %10s\n", name, ms(sum(ds)), ms(med(ds)))
	}
	line(fmt.Sprintf("claim (serial in the relay loop: %.0f%% of the run)", 100*float64(sum(claim))/float64(wall)), claim)
	line("load webhooks and match", match)
	line("matched -> first POST (waiting for workers)", wait)
	line("first POST -> last result", posts)
	line(fmt.Sprintf("recording statements (%d, %d rows)", stmts, rows), rec)
	line("last result -> batch done (last recording)", tail)
	line("batch: claim start -> done", total)
	if !perBatch {
		return
	}
	fmt.Printf("  per batch, ms since the first claim: claim start, claimed, matched, first POST, last result, recordings (start-end rows), done\n")
	off := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return ms(t.Sub(t0))
	}
	for i, b := range bs {
		fmt.Printf("  %3d %3dev %7s %7s %7s %7s %7s ", i, b.Events, off(b.ClaimStart), off(b.Claimed), off(b.Matched), off(b.FirstSend), off(b.LastResult))
		for _, r := range b.Records {
			fmt.Printf(" [%s-%s %d]", off(r.Start), off(r.End), r.Rows)
		}
		fmt.Printf(" %7s\n", off(b.Done))
	}
}

// backendCPU is the CPU seconds spent so far by the Postgres backends
// connected to d's database (this benchmark's own: the relay's and the
// writers' connections), read from /proc, so other databases' work on a
// shared cluster does not count. Backends that ended are not counted: the
// pools keep theirs open during a run. 0 when Postgres is not local.
func backendCPU(ctx context.Context, d *sqlx.DB) map[int]float64 {
	var pids []int
	if err := d.SelectContext(ctx, &pids, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`); err != nil {
		return nil
	}
	out := make(map[int]float64, len(pids))
	for _, pid := range pids {
		if s, err := load.ProcessCPU(pid); err == nil {
			out[pid] = s
		}
	}
	return out
}

// cpuSince is the CPU the backends of after spent since before.
func cpuSince(before, after map[int]float64) float64 {
	var s float64
	for pid, a := range after {
		s += a - before[pid]
	}
	return s
}

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/bench/load"
)

// wrkTarget is one contender driven by wrk: a server process and the
// requests replayed against it.
type wrkTarget struct {
	name    string
	pid     int    // the server process whose CPU is read
	url     string // base URL
	reqs    string // request file (see bench/wrk/requests.lua)
	headers []string
	conns   int // wrk connections; 0 means the runner's concurrency
}

// wrkResult is one timed wrk run, with what the server and Postgres spent.
type wrkResult struct {
	Requests, Errors int64
	Seconds          float64
	P50, P99         time.Duration
	CPUSeconds       float64 // server process user+system time
	DBms             float64 // Postgres execution + planning time
	PGCPUSeconds     float64 // the Postgres cluster's user+system time (load.PostgresCPU)
	BackendSeconds   float64 // of which the benchmark database's client backends (the requests' own)
	BackendUser      float64 // of which in user mode (the rest is the kernel's: sockets, wake-ups)
	Sessions         int64   // sessions the cluster started
	DBCalls          int64   // statements Postgres ran
}

func (r wrkResult) RPS() float64 {
	if r.Seconds == 0 {
		return 0
	}
	return float64(r.Requests-r.Errors) / r.Seconds
}

// wrkRunner runs wrk (its own process) and reads the server's CPU from
// /proc and Postgres's time from pg_stat_statements around each run.
type wrkRunner struct {
	script      string
	concurrency int
	threads     int
	stats       *sqlx.DB // a connection to the benchmark database
	pg          load.PostgresCPU
	statements  bool // print each run's statements (-statements)
}

// newWrkRunner checks wrk is installed and pg_stat_statements is loaded,
// and makes Postgres count planning time too (the DDS pool connects after).
func newWrkRunner(ctx context.Context, root string, stats *sqlx.DB, concurrency int) (*wrkRunner, error) {
	if _, err := exec.LookPath("wrk"); err != nil {
		return nil, errors.New("wrk is not installed: run `make bench` (it installs it) or apt-get install wrk")
	}
	if _, err := stats.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return nil, fmt.Errorf("pg_stat_statements: %w", err)
	}
	var db string
	if err := stats.GetContext(ctx, &db, `SELECT current_database()`); err != nil {
		return nil, err
	}
	if _, err := stats.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %q SET pg_stat_statements.track_planning = on`, db)); err != nil {
		return nil, fmt.Errorf("pg_stat_statements.track_planning: %w", err)
	}
	if _, err := stats.ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return nil, fmt.Errorf("pg_stat_statements (is it in shared_preload_libraries? deploy/stack.sh puts it there): %w", err)
	}
	pg, err := load.FindPostgres(ctx, stats)
	if err != nil {
		return nil, err
	}
	return &wrkRunner{script: filepath.Join(root, "bench", "wrk", "requests.lua"), concurrency: concurrency, threads: 2, stats: stats, pg: pg}, nil
}

// run drives t for d.
func (w *wrkRunner) run(ctx context.Context, t wrkTarget, d time.Duration) (wrkResult, error) {
	var r wrkResult
	if _, err := w.stats.ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return r, err
	}
	cpu0, err := load.ProcessCPU(t.pid)
	if err != nil {
		return r, err
	}
	pg0, err := w.pg.Seconds()
	if err != nil {
		return r, err
	}
	bk0, sess0, err := w.backends(ctx)
	if err != nil {
		return r, err
	}
	conns := w.concurrency
	if t.conns > 0 {
		conns = t.conns
	}
	args := []string{"-t", strconv.Itoa(min(w.threads, conns)), "-c", strconv.Itoa(conns), "-d", fmt.Sprintf("%ds", max(1, int(d.Round(time.Second).Seconds()))),
		"--timeout", "10s", "-s", w.script, t.url, "--", t.reqs}
	args = append(args, t.headers...)
	cmd := exec.CommandContext(ctx, "wrk", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("wrk %s: %w: %s%s", t.name, err, out, stderr.Bytes())
	}
	cpu1, err := load.ProcessCPU(t.pid)
	if err != nil {
		return r, err
	}
	pg1, err := w.pg.Seconds()
	if err != nil {
		return r, err
	}
	r.CPUSeconds, r.PGCPUSeconds = cpu1-cpu0, pg1-pg0
	bk1, sess1, err := w.backends(ctx)
	if err != nil {
		return r, err
	}
	r.Sessions = sess1 - sess0
	for pid, t := range bk1 {
		r.BackendSeconds += t.user + t.system - bk0[pid].user - bk0[pid].system
		r.BackendUser += t.user - bk0[pid].user
	}
	if err := parseWrk(out, &r); err != nil {
		return r, fmt.Errorf("wrk %s: %w", t.name, err)
	}
	err = w.stats.QueryRowxContext(ctx, `SELECT coalesce(sum(total_exec_time + total_plan_time), 0)::float8, coalesce(sum(calls), 0)::int8
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND query NOT LIKE '%pg_stat_statements%'`).Scan(&r.DBms, &r.DBCalls)
	if err == nil && w.statements {
		if ok := r.Requests - r.Errors; ok > 0 {
			per := func(s float64) string { return round(time.Duration(s / float64(ok) * 1e9)) }
			fmt.Printf("  run of %s (ended %s): %.0f req/s, Postgres CPU/request %s, its backends' %s (user %s), %d sessions started\n", t.name, time.Now().UTC().Format("15:04:05.0"), r.RPS(),
				per(r.PGCPUSeconds), per(r.BackendSeconds), per(r.BackendUser), r.Sessions)
		}
		err = w.printStatements(ctx, os.Stdout, t.name, r.Requests)
	}
	return r, err
}

// backends reads the CPU seconds of the benchmark database's client
// backends (a backend that starts during a run counts from zero; one that
// ends during it is missed). The cluster's CPU less theirs is background
// work (checkpoints, autovacuum, the WAL sender), other databases, and the
// exit of processes that lived through earlier runs (PostGraphile's pool
// closing idle connections charged a later contender with theirs, until
// graphile.config.mjs kept them).
//
// sessions is the number of sessions the cluster has started so far.
func (w *wrkRunner) backends(ctx context.Context) (_ map[int]cpuTimes, sessions int64, _ error) {
	var pids []int
	if err := w.stats.SelectContext(ctx, &pids, `SELECT pid FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`); err != nil {
		return nil, 0, fmt.Errorf("the benchmark database's backends: %w", err)
	}
	if err := w.stats.GetContext(ctx, &sessions, `SELECT sum(sessions)::int8 FROM pg_stat_database`); err != nil {
		return nil, 0, fmt.Errorf("sessions started: %w", err)
	}
	out := make(map[int]cpuTimes, len(pids))
	if !w.pg.Local() {
		return out, sessions, nil // another machine's pids
	}
	for _, pid := range pids {
		// A backend gone since the listing has no /proc entry: it is the
		// one "missed" above, not an error.
		if u, s, err := load.ProcessTimes(pid); err == nil {
			out[pid] = cpuTimes{u, s}
		}
	}
	return out, sessions, nil
}

type cpuTimes struct{ user, system float64 }

// printStatements writes the statements of the last run, most time first,
// per request of the run: calls, mean execution and planning time, shared
// buffers hit and dirtied, WAL bytes.
func (w *wrkRunner) printStatements(ctx context.Context, wr io.Writer, name string, requests int64) error {
	var stmts []struct {
		Calls   int64   `db:"calls"`
		Exec    float64 `db:"exec"`
		Plan    float64 `db:"plan"`
		Plans   int64   `db:"plans"`
		Blks    float64 `db:"blks"`
		Dirtied float64 `db:"dirtied"`
		WAL     float64 `db:"wal"`
		Query   string  `db:"query"`
	}
	err := w.stats.SelectContext(ctx, &stmts, `SELECT calls, total_exec_time / calls AS exec, total_plan_time / greatest(calls, 1) AS plan, plans,
		(shared_blks_hit + shared_blks_read)::float8 / calls AS blks, shared_blks_dirtied::float8 / calls AS dirtied, wal_bytes::float8 / calls AS wal,
		left(regexp_replace(query, '\s+', ' ', 'g'), 110) AS query
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND query NOT LIKE '%pg_stat_statements%' AND calls > 0 ORDER BY total_exec_time + total_plan_time DESC LIMIT 8`)
	if err != nil {
		return err
	}
	fmt.Fprintf(wr, "  statements of %s (%d requests): calls/req, exec ms, plan ms, plans, blks, dirtied, WAL bytes — per call\n", name, requests)
	for _, st := range stmts {
		fmt.Fprintf(wr, "    %6.3f %7.4f %7.4f %7d %6.1f %5.2f %7.0f  %s\n", float64(st.Calls)/float64(max(requests, 1)),
			st.Exec, st.Plan, st.Plans, st.Blks, st.Dirtied, st.WAL, st.Query)
	}
	return nil
}

// parseWrk reads the line requests.lua's done() prints.
func parseWrk(out []byte, r *wrkResult) error {
	s := bufio.NewScanner(bytes.NewReader(out))
	for s.Scan() {
		rest, ok := strings.CutPrefix(s.Text(), "DDSBENCH ")
		if !ok {
			continue
		}
		v := map[string]int64{}
		for _, kv := range strings.Fields(rest) {
			k, x, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(x, 10, 64)
			if err != nil {
				return fmt.Errorf("bad wrk summary %q", rest)
			}
			v[k] = n
		}
		r.Requests = v["requests"]
		r.Errors = v["status_errors"] + v["socket_errors"]
		r.Seconds = float64(v["duration_us"]) / 1e6
		r.P50 = time.Duration(v["p50_us"]) * time.Microsecond
		r.P99 = time.Duration(v["p99_us"]) * time.Microsecond
		return nil
	}
	return fmt.Errorf("no summary line in wrk's output: %s", out)
}

// wrkSummary is a contender's rounds: medians of rate and latency, sums of
// time spent.
type wrkSummary struct {
	name     string
	rps      float64
	p50, p99 time.Duration
	reqs     int64
	errors   int64
	cpu      float64 // cores of the server
	cpuPerRq time.Duration
	dbPerRq  time.Duration
	pgCPURq  time.Duration // the Postgres cluster's CPU per request (0 when not local)
	bkCPURq  time.Duration // of which the benchmark database's client backends
	callsRq  float64
}

func summarize(name string, rs []wrkResult) wrkSummary {
	s := wrkSummary{name: name}
	var rps []float64
	var p50, p99 []time.Duration
	var secs, cpu, dbms, pgcpu, bkcpu float64
	var calls int64
	for _, r := range rs {
		rps = append(rps, r.RPS())
		p50 = append(p50, r.P50)
		p99 = append(p99, r.P99)
		s.reqs += r.Requests
		s.errors += r.Errors
		secs += r.Seconds
		cpu += r.CPUSeconds
		dbms += r.DBms
		pgcpu += r.PGCPUSeconds
		bkcpu += r.BackendSeconds
		calls += r.DBCalls
	}
	s.rps, s.p50, s.p99 = median(rps), median(p50), median(p99)
	if secs > 0 {
		s.cpu = cpu / secs
	}
	if ok := s.reqs - s.errors; ok > 0 {
		s.cpuPerRq = time.Duration(cpu / float64(ok) * 1e9)
		s.dbPerRq = time.Duration(dbms / float64(ok) * 1e6)
		s.pgCPURq = time.Duration(pgcpu / float64(ok) * 1e9)
		s.bkCPURq = time.Duration(bkcpu / float64(ok) * 1e9)
		s.callsRq = float64(calls) / float64(ok)
	}
	return s
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	return ys[len(ys)/2]
}

// measureWrk runs each target for d per round, rounds times, rotating the
// order so background load falls on all alike; each target is warmed up
// (unmeasured) before its first round.
func (w *wrkRunner) measure(ctx context.Context, ts []wrkTarget, rounds int, d, warmup time.Duration) ([]wrkSummary, error) {
	runs := make([][]wrkResult, len(ts))
	for _, t := range ts {
		if warmup > 0 {
			if _, err := w.run(ctx, t, warmup); err != nil {
				return nil, err
			}
		}
	}
	for round := range rounds {
		for k := range ts {
			i := (k + round) % len(ts)
			r, err := w.run(ctx, ts[i], d)
			if err != nil {
				return nil, err
			}
			runs[i] = append(runs[i], r)
		}
	}
	out := make([]wrkSummary, len(ts))
	for i, t := range ts {
		out[i] = summarize(t.name, runs[i])
	}
	return out, nil
}

func printWrkTable(wr io.Writer, section string, ss []wrkSummary) {
	fmt.Fprintf(wr, "\n%s\n", section)
	fmt.Fprintf(wr, "  %-34s %10s %9s %9s %7s %10s %11s %10s %10s %10s %9s\n", "contender", "req/s", "p50", "p99", "errors", "srv cores", "srv CPU/req", "DB ms/req", "PG CPU/req", "backends", "stmts/req")
	for _, s := range ss {
		fmt.Fprintf(wr, "  %-34s %10.0f %9s %9s %7d %10.2f %11s %10.3f %10s %10s %9.2f\n", s.name, s.rps, round(s.p50), round(s.p99), s.errors,
			s.cpu, round(s.cpuPerRq), float64(s.dbPerRq)/1e6, round(s.pgCPURq), round(s.bkCPURq), s.callsRq)
	}
}

func round(d time.Duration) string {
	switch {
	case d >= 10*time.Millisecond:
		return d.Round(100 * time.Microsecond).String()
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond).String()
	default:
		return d.Round(time.Microsecond).String()
	}
}

// writeRequests writes a request file for requests.lua.
func writeRequests(dir, name string, lines []string) (string, error) {
	p := filepath.Join(dir, name+".req")
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return p, os.WriteFile(p, []byte(b.String()), 0o600)
}

// reqLine is one request of a request file.
func reqLine(method, path string, body []byte) string {
	return method + "\t" + path + "\t" + string(body)
}

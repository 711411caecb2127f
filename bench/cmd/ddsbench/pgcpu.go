package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/jmoiron/sqlx"
)

// pgCluster reads the CPU time of the Postgres cluster the benchmark runs
// on, when it runs on this machine: the postmaster and every process it
// started (the backends serving the contenders, and the WAL writer,
// checkpointer and autovacuum whose work those requests cause). Unlike
// pg_stat_statements' execution time, which is wall time and grows when
// the server under test takes CPU from Postgres on a shared machine, this
// is what Postgres itself spent.
type pgCluster struct {
	postmaster int // 0: not on this machine, nothing read
}

// findPostmaster finds the postmaster through the parent of stats' own
// backend; a Postgres on another machine (its backend's pid not in this
// /proc, or not a postgres process) gives a pgCluster that reads nothing.
func findPostmaster(ctx context.Context, stats *sqlx.DB) (pgCluster, error) {
	var backend int
	if err := stats.GetContext(ctx, &backend, `SELECT pg_backend_pid()`); err != nil {
		return pgCluster{}, err
	}
	st, err := readProcStat(backend)
	if err != nil || !strings.HasPrefix(st.comm, "postgres") {
		return pgCluster{}, nil //nolint:nilerr // a remote Postgres: its CPU is not ours to read
	}
	return pgCluster{postmaster: st.ppid}, nil
}

// local reports whether cpu reads anything.
func (c pgCluster) local() bool { return c.postmaster != 0 }

// cpu is the cluster's user+system CPU seconds so far: the postmaster's
// own and that of the children it has reaped (backends that exited), plus
// every living child's.
func (c pgCluster) cpu() (float64, error) {
	if !c.local() {
		return 0, nil
	}
	pm, err := readProcStat(c.postmaster)
	if err != nil {
		return 0, err
	}
	total := pm.utime + pm.stime + pm.cutime + pm.cstime
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return 0, err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == c.postmaster {
			continue
		}
		st, err := readProcStat(pid)
		if err != nil || st.ppid != c.postmaster {
			continue // gone since the listing, or not Postgres'
		}
		total += st.utime + st.stime
	}
	return total / 100, nil
}

// procStat is what the benchmarks read of /proc/PID/stat, times in clock
// ticks (1/100 s, Linux's USER_HZ).
type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime float64
}

func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// "pid (comm) state ppid ...": utime, stime, cutime and cstime are
	// fields 14 to 17 of the whole line.
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return procStat{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	f := strings.Fields(string(b[end+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("unexpected /proc/%d/stat", pid)
	}
	var errs [5]error
	st := procStat{comm: string(b[open+1 : end])}
	st.ppid, errs[0] = strconv.Atoi(f[1])
	st.utime, errs[1] = strconv.ParseFloat(f[11], 64)
	st.stime, errs[2] = strconv.ParseFloat(f[12], 64)
	st.cutime, errs[3] = strconv.ParseFloat(f[13], 64)
	st.cstime, errs[4] = strconv.ParseFloat(f[14], 64)
	if err := errors.Join(errs[:]...); err != nil {
		return procStat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return st, nil
}

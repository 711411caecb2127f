package load

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

// ProcessCPU is a process's user+system CPU seconds so far (/proc/PID/stat).
func ProcessCPU(pid int) (float64, error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, err
	}
	return (st.utime + st.stime) / 100, nil
}

// Local reports whether the cluster runs on this machine (its processes'
// CPU can be read).
func (c PostgresCPU) Local() bool { return c.postmaster != 0 }

// ProcessTimes is a process's user and system CPU seconds so far, apart.
func ProcessTimes(pid int) (user, system float64, err error) {
	st, err := readStat(pid)
	if err != nil {
		return 0, 0, err
	}
	return st.utime / 100, st.stime / 100, nil
}

// PostgresCPU reads the CPU time of the Postgres cluster d is connected
// to, when it runs on this machine: the postmaster and every process it
// started (backends, WAL sender and receiver, startup process replaying
// WAL, checkpointer). It is what Postgres spent, unlike
// pg_stat_statements' wall time, which grows when the server under test
// takes CPU from Postgres on a shared machine.
type PostgresCPU struct{ postmaster int }

// FindPostgres finds the postmaster of d's cluster through the parent of
// one of its backends; on another machine it returns a PostgresCPU that
// reads 0.
func FindPostgres(ctx context.Context, d *sqlx.DB) (PostgresCPU, error) {
	var backend int
	if err := d.GetContext(ctx, &backend, `SELECT pg_backend_pid()`); err != nil {
		return PostgresCPU{}, err
	}
	st, err := readStat(backend)
	if err != nil || !strings.HasPrefix(st.comm, "postgres") {
		return PostgresCPU{}, nil //nolint:nilerr // a remote Postgres: its CPU is not ours to read
	}
	return PostgresCPU{postmaster: st.ppid}, nil
}

// Seconds is the cluster's CPU seconds so far (reaped children included).
func (c PostgresCPU) Seconds() (float64, error) {
	if c.postmaster == 0 {
		return 0, nil
	}
	pm, err := readStat(c.postmaster)
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
		st, err := readStat(pid)
		if err != nil || st.ppid != c.postmaster {
			continue // gone since the listing, or not this cluster's
		}
		total += st.utime + st.stime
	}
	return total / 100, nil
}

type procStat struct {
	comm                         string
	ppid                         int
	utime, stime, cutime, cstime float64 // clock ticks (1/100 s)
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
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

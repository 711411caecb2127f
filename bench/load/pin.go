package load

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// CPUs is a set of CPU numbers for Pin.
func CPUs(ids ...int) unix.CPUSet {
	var s unix.CPUSet
	for _, id := range ids {
		s.Set(id)
	}
	return s
}

// OneAndOthers splits the CPUs this process may run on (its affinity,
// not 0 to NumCPU-1: a cpuset may allow others) into the lowest one and
// the rest; ok is false when it may run on fewer than two.
func OneAndOthers() (one, others unix.CPUSet, ok bool, err error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return one, others, false, fmt.Errorf("this process's affinity: %w", err)
	}
	first := true
	for c := 0; c < len(allowed)*64; c++ {
		if !allowed.IsSet(c) {
			continue
		}
		if first {
			one.Set(c)
			first = false
		} else {
			others.Set(c)
		}
	}
	return one, others, others.Count() > 0, nil
}

// Pin restricts every thread of process pid to the CPUs of set (threads
// and processes it starts later inherit the mask of the thread that
// starts them) and returns a function that gives the process back the
// mask its first thread had. A benchmark uses it to give Postgres and the
// process under test CPUs of their own on one machine, as a deployment
// that runs the database on its own host does.
func Pin(pid int, set unix.CPUSet) (restore func() error, err error) {
	var prev unix.CPUSet
	if err := unix.SchedGetaffinity(pid, &prev); err != nil {
		return nil, fmt.Errorf("affinity of %d: %w", pid, err)
	}
	if err := setAll(pid, set); err != nil {
		return nil, err
	}
	return func() error { return setAll(pid, prev) }, nil
}

// setAll sets the mask of every thread of pid (a thread that ended since
// the listing is skipped).
func setAll(pid int, set unix.CPUSet) error {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*", pid))
	if err != nil {
		return err
	}
	if len(tasks) == 0 {
		return fmt.Errorf("process %d: no threads in /proc", pid)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(filepath.Base(t))
		if err != nil {
			continue
		}
		if err := unix.SchedSetaffinity(tid, &set); err != nil && !errors.Is(err, unix.ESRCH) {
			return fmt.Errorf("affinity of %d/%d: %w", pid, tid, err)
		}
	}
	return nil
}

// Pin restricts the cluster's postmaster and every process it started
// (backends, background workers) to set; backends started later inherit
// it from the postmaster. restore gives every process of the cluster then
// running the postmaster's earlier mask.
func (c PostgresCPU) Pin(set unix.CPUSet) (restore func() error, err error) {
	if c.postmaster == 0 {
		return nil, fmt.Errorf("postgres runs on another machine")
	}
	var prev unix.CPUSet
	if err := unix.SchedGetaffinity(c.postmaster, &prev); err != nil {
		return nil, fmt.Errorf("affinity of the postmaster: %w", err)
	}
	if err := c.pinAll(set); err != nil {
		_ = c.pinAll(prev)
		return nil, err
	}
	return func() error { return c.pinAll(prev) }, nil
}

// pinAll sets set on the postmaster and every process it started (one
// that ended since the listing is skipped).
func (c PostgresCPU) pinAll(set unix.CPUSet) error {
	if err := setAll(c.postmaster, set); err != nil {
		return err
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == c.postmaster {
			continue
		}
		if st, err := readStat(pid); err == nil && st.ppid == c.postmaster {
			if err := setAll(pid, set); err != nil {
				if _, gone := readStat(pid); gone != nil {
					continue
				}
				return err
			}
		}
	}
	return nil
}

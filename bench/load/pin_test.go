package load

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// threadMasks reads the CPU mask of every thread of this process.
func threadMasks(t *testing.T) map[int]unix.CPUSet {
	t.Helper()
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/[0-9]*", os.Getpid()))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]unix.CPUSet{}
	for _, p := range tasks {
		tid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		var s unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &s); err == nil {
			out[tid] = s
		}
	}
	return out
}

func TestPinRestrictsEveryThreadAndGivesTheMaskBack(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(os.Getpid(), &before); err != nil {
		t.Fatal(err)
	}
	restore, err := Pin(os.Getpid(), CPUs(0))
	if err != nil {
		t.Fatal(err)
	}
	for tid, s := range threadMasks(t) {
		if s != CPUs(0) {
			t.Errorf("thread %d runs on %d CPUs after Pin to CPU 0", tid, s.Count())
		}
	}
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	for tid, s := range threadMasks(t) {
		if s != before {
			t.Errorf("thread %d has %d CPUs after restore, want %d", tid, s.Count(), before.Count())
		}
	}
}

func TestOneAndOthersSplitsTheCPUsThisProcessMayUse(t *testing.T) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	one, others, ok, err := OneAndOthers()
	if err != nil {
		t.Fatal(err)
	}
	if one.Count() != 1 || ok != (allowed.Count() > 1) || one.Count()+others.Count() != allowed.Count() {
		t.Fatalf("%d CPUs allowed split into %d and %d (ok %v)", allowed.Count(), one.Count(), others.Count(), ok)
	}
	for c := 0; c < len(allowed)*64; c++ {
		if (one.IsSet(c) || others.IsSet(c)) != allowed.IsSet(c) || one.IsSet(c) && others.IsSet(c) {
			t.Fatalf("CPU %d: allowed %v, in one %v, in others %v", c, allowed.IsSet(c), one.IsSet(c), others.IsSet(c))
		}
	}
}

// Pinning the cluster moves its postmaster and running backends, and
// restore gives them the postmaster's earlier mask back.
func TestPostgresPinMovesTheClusterAndGivesItBack(t *testing.T) {
	ctx := context.Background()
	d, pg := localPostgres(t)
	conn, err := d.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var backend int
	if err := conn.GetContext(ctx, &backend, `SELECT pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	mask := func(pid int) unix.CPUSet {
		t.Helper()
		var s unix.CPUSet
		if err := unix.SchedGetaffinity(pid, &s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := mask(pg.postmaster)
	one, _, _, err := OneAndOthers()
	if err != nil {
		t.Fatal(err)
	}
	restore, err := pg.Pin(one)
	if err != nil {
		t.Fatal(err)
	}
	restored := false
	t.Cleanup(func() {
		if !restored {
			_ = restore()
		}
	})
	if pm, bk := mask(pg.postmaster), mask(backend); pm != one || bk != one {
		t.Errorf("after Pin: postmaster on %d CPUs, backend on %d, want 1", pm.Count(), bk.Count())
	}
	restored = true
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if pm, bk := mask(pg.postmaster), mask(backend); pm != before || bk != before {
		t.Errorf("after restore: postmaster on %d CPUs, backend on %d, want %d", pm.Count(), bk.Count(), before.Count())
	}
}

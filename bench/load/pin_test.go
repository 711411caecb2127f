package load

import (
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

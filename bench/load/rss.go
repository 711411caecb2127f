package load

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReadRSS returns the resident set size (VmRSS) and its lifetime peak
// (VmHWM) of process pid, in bytes, from /proc/<pid>/status (Linux).
func ReadRSS(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	found := 0
	for sc.Scan() {
		line := sc.Text()
		var dst *int64
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			dst = &rss
		case strings.HasPrefix(line, "VmHWM:"):
			dst = &hwm
		default:
			continue
		}
		fields := strings.Fields(line) // "VmRSS:", "12345", "kB"
		if len(fields) < 2 {
			return 0, 0, fmt.Errorf("/proc/%d/status: malformed %q", pid, line)
		}
		kb, err := strconv.ParseInt(fields[1], 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status: %q: %w", pid, line, err)
		}
		*dst = kb * 1024
		found++
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if found < 2 {
		return 0, 0, fmt.Errorf("/proc/%d/status: no VmRSS/VmHWM (a kernel thread or an exited process?)", pid)
	}
	return rss, hwm, nil
}

// RSSSampler records the peak VmRSS of a process while it runs.
type RSSSampler struct {
	pid    int
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	peak    int64
	samples int
	err     error
}

// SampleRSS starts sampling pid's VmRSS every interval (100 ms when 0)
// until Stop. Sampling the same process for separate phases (one sampler
// per phase) gives each phase's own peak.
func SampleRSS(pid int, interval time.Duration) *RSSSampler {
	if interval <= 0 {
		interval = 100 * time.Millisecond
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &RSSSampler{pid: pid, cancel: cancel, done: make(chan struct{})}
	s.sample()
	go func() {
		defer close(s.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.sample()
			}
		}
	}()
	return s
}

func (s *RSSSampler) sample() {
	rss, _, err := ReadRSS(s.pid)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		return
	}
	s.samples++
	s.peak = max(s.peak, rss)
}

// Stop ends sampling (taking one last sample) and returns the peak VmRSS
// in bytes. The error is the first failed read, if no read succeeded.
func (s *RSSSampler) Stop() (peak int64, err error) {
	s.cancel()
	<-s.done
	s.sample()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples == 0 {
		return 0, s.err
	}
	return s.peak, nil
}

// MB formats bytes as mebibytes.
func MB(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }

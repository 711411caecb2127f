package teststack

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// fakeTB records what a helper does to a test; FailNow and SkipNow end
// the goroutine run started, as they end a test's.
type fakeTB struct {
	testing.TB // not called: every method the helpers use is below
	name       string
	failed     bool
	skipped    bool
	msg        string
}

func (f *fakeTB) Helper()           {}
func (f *fakeTB) Name() string      { return f.name }
func (f *fakeTB) Failed() bool      { return f.failed }
func (f *fakeTB) Skipped() bool     { return f.skipped }
func (f *fakeTB) Fatal(args ...any) { f.failed, f.msg = true, fmt.Sprint(args...); runtime.Goexit() }
func (f *fakeTB) Skipf(s string, a ...any) {
	f.skipped, f.msg = true, fmt.Sprintf(s, a...)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(s string, a ...any) {
	f.failed, f.msg = true, fmt.Sprintf(s, a...)
	runtime.Goexit()
}

// run calls fn with a fresh fake test in its own goroutine.
func run(name string, fn func(testing.TB)) *fakeTB {
	f := &fakeTB{name: name}
	done := make(chan struct{})
	go func() { defer close(done); fn(f) }()
	<-done
	return f
}

func TestNeed(t *testing.T) {
	for _, tc := range []struct {
		name               string
		env                map[string]string
		wantFail, wantSkip bool
	}{
		{"set", map[string]string{"DDS_STACK_TEST_VAR": "x"}, false, false},
		{"unset: skipped", map[string]string{"DDS_STACK_TEST_VAR": ""}, false, true},
		{"unset where required: failed", map[string]string{"DDS_STACK_TEST_VAR": "", RequireVar: "1"}, true, false},
		{"unset in CI: failed", map[string]string{"DDS_STACK_TEST_VAR": "", "CI": "true"}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(RequireVar, "")
			t.Setenv("CI", "")
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			f := run("TestX", func(tb testing.TB) { Need(tb, "DDS_STACK_TEST_VAR") })
			if f.failed != tc.wantFail || f.skipped != tc.wantSkip {
				t.Fatalf("failed %v skipped %v (%q), want %v %v", f.failed, f.skipped, f.msg, tc.wantFail, tc.wantSkip)
			}
			if (f.failed || f.skipped) && (!strings.Contains(f.msg, "DDS_STACK_TEST_VAR") || !strings.Contains(f.msg, "`make test`")) {
				t.Fatalf("message %q names neither the variable nor `make test`", f.msg)
			}
		})
	}
}

// TestOnce: whatever the first set-up did, every later caller gets the
// same outcome, never a zero value.
func TestOnce(t *testing.T) {
	t.Setenv(RequireVar, "")
	t.Setenv("CI", "")
	for _, tc := range []struct {
		name               string
		setup              func(testing.TB) (*int, error)
		wantFail, wantSkip bool
	}{
		{"ok", func(testing.TB) (*int, error) { n := 7; return &n, nil }, false, false},
		{"error", func(testing.TB) (*int, error) { return nil, errors.New("no database") }, true, false},
		{"t.Fatal", func(tb testing.TB) (*int, error) { tb.Fatal("no database"); return nil, nil }, true, false},
		{"skipped", func(tb testing.TB) (*int, error) { Need(tb, "DDS_STACK_TEST_UNSET"); return nil, nil }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var o Once[*int]
			calls := 0
			setup := func(tb testing.TB) (*int, error) { calls++; return tc.setup(tb) }
			for i := range 3 {
				var got *int
				f := run(fmt.Sprintf("Test%d", i), func(tb testing.TB) { got = o.Get(tb, setup) })
				if f.failed != tc.wantFail || f.skipped != tc.wantSkip {
					t.Fatalf("call %d: failed %v skipped %v (%q), want %v %v", i, f.failed, f.skipped, f.msg, tc.wantFail, tc.wantSkip)
				}
				if !f.failed && !f.skipped && (got == nil || *got != 7) {
					t.Fatalf("call %d: got %v", i, got)
				}
				if i > 0 && tc.wantFail && !strings.Contains(f.msg, "no database") && !strings.Contains(f.msg, "Test0") {
					t.Fatalf("call %d: %q points neither at the cause nor at the first test", i, f.msg)
				}
			}
			if calls != 1 {
				t.Fatalf("set-up ran %d times", calls)
			}
		})
	}
}

// TestForward: Main holds back only a last line "PASS" (to replace it).
func TestForward(t *testing.T) {
	for _, tc := range []struct {
		in, out string
		held    bool
	}{
		{"PASS\n", "", true},
		{"log line\nPASS\n", "log line\n", true},
		{"--- FAIL: TestX (0.00s)\nFAIL\n", "--- FAIL: TestX (0.00s)\nFAIL\n", false},
		{"PASS\nmore\n", "PASS\nmore\n", false},
		{"no newline", "no newline", false},
	} {
		var b strings.Builder
		held := forward(&b, strings.NewReader(tc.in))
		if b.String() != tc.out || held != tc.held {
			t.Errorf("forward(%q) = %q, held %v; want %q, %v", tc.in, b.String(), held, tc.out, tc.held)
		}
	}
}

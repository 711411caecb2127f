// Package teststack decides what a test does when a service of the test stack
// (Postgres, Temporal, MinIO: what `make test` starts and exports) is
// missing, and holds set-up shared by the tests of one binary. It imports
// nothing of DDS, so any package's tests can use it, internal ones too.
//
// Where the stack is expected (DDS_REQUIRE_STACK=1, which
// deploy/with-stack.sh and so `make test` export, or CI=true) a missing
// service fails the test. Elsewhere (a newcomer's bare `go test ./...`) a
// test that needs one is skipped, the tests that need nothing still run,
// and Main ends the package with one line naming `make test`. That package
// is reported FAIL on purpose: `go test` shows a passing package as a bare
// "ok" and drops its output, so a package that skipped its tests would
// look tested.
package teststack

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// RequireVar is the variable that makes a missing service a failure.
const RequireVar = "DDS_REQUIRE_STACK"

// hint is the end of every line about a missing service.
const hint = "run `make test`, which starts Postgres, Temporal and MinIO"

// Required reports whether the stack is expected here: DDS_REQUIRE_STACK=1
// or CI=true.
func Required() bool {
	return os.Getenv(RequireVar) == "1" || os.Getenv("CI") == "true"
}

var (
	mu      sync.Mutex
	skipped = map[string]bool{}   // top-level tests skipped for want of the stack
	reasons []string              // why ("DATABASE_URL is not set"), in first-seen order
	reason  = map[string]string{} // why, by test
)

// Need skips t (or fails it, when Required) unless every variable in vars
// is set.
func Need(t testing.TB, vars ...string) {
	t.Helper()
	for _, v := range vars {
		if os.Getenv(v) == "" {
			Missing(t, v+" is not set")
		}
	}
}

// Missing skips t (or fails it, when Required) for want of what `make
// test` provides; what says what is missing ("node is not on PATH").
func Missing(t testing.TB, what string) {
	t.Helper()
	if Required() {
		t.Fatalf("%s but the stack is required here (%s=1 or CI=true): %s", what, RequireVar, hint)
	}
	mu.Lock()
	skipped[strings.SplitN(t.Name(), "/", 2)[0]] = true
	reason[t.Name()] = what
	if !slices.Contains(reasons, what) {
		reasons = append(reasons, what)
	}
	mu.Unlock()
	t.Skipf("needs the stack (%s): %s", what, hint)
}

// Main is the TestMain of a package whose tests (some or all) call Need:
// it runs them and, when some were skipped for want of the stack, ends the
// package with one line naming `make test` (instead of PASS) and exits 1
// (see the package comment). Where the stack is required nothing is
// skipped, and the tests' output is left alone. The cleanups run after the
// tests, before the exit (which skips deferred calls).
func Main(m *testing.M, cleanups ...func()) {
	exit := func(code int) {
		for _, c := range cleanups {
			c()
		}
		os.Exit(code)
	}
	if Required() {
		exit(m.Run())
	}
	out := os.Stdout
	pr, pw, err := os.Pipe()
	if err != nil {
		exit(m.Run())
	}
	os.Stdout = pw
	held := make(chan bool, 1)
	go func() { held <- forward(out, pr) }()
	code := m.Run()
	os.Stdout = out
	pw.Close()
	var pass bool
	select {
	case pass = <-held:
	case <-time.After(5 * time.Second): // a process a test started still holds the pipe
		pass = code == 0
	}
	mu.Lock()
	n, why := len(skipped), reasons
	mu.Unlock()
	if n > 0 {
		fmt.Fprintf(out, "not tested: %d %s the stack (%s): %s\n", n, plural(n, "test needs", "tests need"), strings.Join(why, "; "), hint)
		code = 1
	} else if pass {
		fmt.Fprintln(out, "PASS")
	}
	exit(code)
}

// forward copies the tests' output from r to w as it comes, line by line,
// except a last line "PASS", which it holds back and reports.
func forward(w io.Writer, r io.Reader) (heldPass bool) {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if heldPass && line != "" {
			fmt.Fprint(w, "PASS\n")
			heldPass = false
		}
		if line == "PASS\n" {
			heldPass = true
		} else {
			fmt.Fprint(w, line)
		}
		if err != nil {
			return heldPass
		}
	}
}

// Present is for a TestMain that starts services itself from vars: it
// reports whether all are set, and when not prints the one line (every
// test of the package needs them; none runs) for the caller to exit 1.
func Present(vars ...string) bool {
	var unset []string
	for _, v := range vars {
		if os.Getenv(v) == "" {
			unset = append(unset, v)
		}
	}
	if len(unset) == 0 {
		return true
	}
	what := strings.Join(unset, ", ") + " " + isOrAre(len(unset)) + " not set"
	if Required() {
		fmt.Printf("%s but the stack is required here (%s=1 or CI=true): %s\n", what, RequireVar, hint)
	} else {
		fmt.Printf("not tested: every test needs the stack (%s): %s\n", what, hint)
	}
	return false
}

func isOrAre(n int) string { return plural(n, "is", "are") }

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Once is set-up shared by the tests of one binary (a server, a database
// pool), made by the first test that asks. A failed set-up fails every
// test that asks, not only the first: a t.Fatal inside a sync.Once would
// leave the value unset (nil) for the tests after it.
type Once[T any] struct {
	once    sync.Once
	v       T
	err     error
	skipped string // why the set-up was skipped (Missing), if it was
}

// Get returns the value, making it with setup on the first call. setup
// may fail through its error or through t (t.Fatal): either way this and
// every later Get fail with the reason; when setup skips t (Need), every
// later Get skips too. setup must not tie the value's lifetime to t
// (t.Cleanup, t.TempDir): later tests still use it.
func (o *Once[T]) Get(t testing.TB, setup func(t testing.TB) (T, error)) T {
	t.Helper()
	o.once.Do(func() {
		returned := false
		defer func() { // setup ended t's goroutine: t.FailNow or t.SkipNow
			if !returned {
				o.err = fmt.Errorf("failed in %s (see its failure)", t.Name())
				if t.Skipped() && !t.Failed() {
					mu.Lock()
					o.err, o.skipped = nil, reason[t.Name()]
					mu.Unlock()
					if o.skipped == "" { // skipped other than by Missing
						o.skipped = "the set-up was skipped in " + t.Name()
					}
				}
			}
		}()
		o.v, o.err = setup(t)
		returned = true
	})
	if o.skipped != "" {
		Missing(t, o.skipped)
	}
	if o.err != nil {
		t.Fatalf("set-up: %v", o.err)
	}
	return o.v
}

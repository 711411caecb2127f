package relay

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// The hand-over's log names the engine that fails: a Postgres error is
// not reported as Temporal being unreachable.
func TestHandOverFailureNamesTheEngine(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{storeError{errors.New("dial tcp: connection refused")}, "Postgres"},
		{errors.Join(errors.New("workflow start: deadline exceeded"), storeError{errors.New("conn closed")}), "Postgres"},
		{fmt.Errorf("start: %w", errors.New("context deadline exceeded")), "Temporal"},
	}
	for _, c := range cases {
		if got := failureCause(c.err); !strings.Contains(got, c.want) {
			t.Errorf("%v: logged %q, want it to name %s", c.err, got, c.want)
		}
	}
}

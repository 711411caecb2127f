package db

import (
	"context"
	"net/url"
	"os"
	"testing"
)

// TestOpenTurnsJITOff: pooled connections run with jit off (a nested
// selection's estimate would otherwise get every execution JIT-compiled),
// unless the operator's URL sets jit.
func TestOpenTurnsJITOff(t *testing.T) {
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		t.Fatal("DATABASE_URL is not set: run the tests with `make test`")
	}
	withJIT, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := withJIT.Query()
	q.Set("jit", "on")
	withJIT.RawQuery = q.Encode()
	inOptions, _ := url.Parse(base)
	if inOptions.RawQuery != "" {
		inOptions.RawQuery += "&"
	}
	inOptions.RawQuery += "options=-c%20jit%3Don" // %20, not +: libpq's URL form
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{{base, "off"}, {withJIT.String(), "on"}, {inOptions.String(), "on"}} {
		d, err := Open(ctx, tc.url, 2)
		if err != nil {
			t.Fatal(err)
		}
		var jit string
		err = d.GetContext(ctx, &jit, "SHOW jit")
		d.Close()
		if err != nil || jit != tc.want {
			t.Errorf("%s: jit = %q (%v), want %q", tc.url, jit, err, tc.want)
		}
	}
}

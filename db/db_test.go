package db

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"strconv"
	"testing"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

// TestOpenTurnsJITOff: pooled connections run with jit off (a nested
// selection's estimate would otherwise get every execution JIT-compiled),
// unless the operator's URL sets jit.
func TestOpenTurnsJITOff(t *testing.T) {
	teststack.Need(t, "DATABASE_URL")
	base := os.Getenv("DATABASE_URL")
	withJIT, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := withJIT.Query()
	q.Set("jit", "on")
	withJIT.RawQuery = q.Encode()
	ctx := context.Background()
	for _, tc := range []struct{ url, want string }{{base, "off"}, {withJIT.String(), "on"}, {withOptions(base, "-c%20jit%3Don"), "on"},
		{withOptions(base, "--jit%3Don"), "on"},
		// A parameter whose name contains jit leaves jit's default to DDS.
		{withOptions(base, "-c%20jit_above_cost%3D500000"), "off"}} {
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

// TestOpenSetsVectorEfSearch: every pooled connection runs with
// hnsw.ef_search = DefaultVectorEfSearch, or WithVectorEfSearch's value,
// over the database default the migrations set, before and after pgvector
// loads in the session (the startup packet sets a placeholder that pgvector
// takes when it defines the setting).
func TestOpenSetsVectorEfSearch(t *testing.T) {
	teststack.Need(t, "DATABASE_URL")
	base := os.Getenv("DATABASE_URL")
	ctx := context.Background()
	m, err := Open(ctx, base, 1)
	if err != nil {
		t.Fatal(err)
	}
	err = Migrate(ctx, m.DB) // the vector extension and the database default
	m.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		opts []Option
		want string
		url  string
	}{
		{nil, strconv.Itoa(DefaultVectorEfSearch), base},
		{[]Option{WithVectorEfSearch(123)}, "123", base},
		{[]Option{WithVectorEfSearch(123)}, "77", withOptions(base, "-c%20hnsw.ef_search%3D77")}, // the operator's URL wins
	} {
		d, err := Open(ctx, tc.url, 3, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		// Hold three connections at once so the pool opens three.
		conns := make([]*sql.Conn, 3)
		for i := range conns {
			if conns[i], err = d.Conn(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for i, c := range conns {
			var before, after string
			if err := c.QueryRowContext(ctx, "SHOW hnsw.ef_search").Scan(&before); err != nil {
				t.Fatal(err)
			}
			if _, err := c.ExecContext(ctx, "SELECT '[1,2]'::vector <=> '[2,1]'::vector"); err != nil {
				t.Fatal(err)
			}
			if err := c.QueryRowContext(ctx, "SHOW hnsw.ef_search").Scan(&after); err != nil {
				t.Fatal(err)
			}
			if before != tc.want || after != tc.want {
				t.Errorf("connection %d: hnsw.ef_search = %q before pgvector loads and %q after, want %q", i, before, after, tc.want)
			}
			c.Close()
		}
		d.Close()
	}
}

// withOptions is base with its options parameter set to the escaped opts
// (%20, not +: libpq's URL form).
func withOptions(base, opts string) string {
	u, _ := url.Parse(base)
	if u.RawQuery != "" {
		u.RawQuery += "&"
	}
	u.RawQuery += "options=" + opts
	return u.String()
}

package load

import (
	"context"
	"os"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/internal/testenv"
)

// TestPostgresCPUCountsWhatPostgresSpends: the Postgres CPU column reads the
// cluster the tests run on (started on this machine by deploy/stack.sh),
// and a statement that burns CPU in a backend shows up in it.
func TestPostgresCPUCountsWhatPostgresSpends(t *testing.T) {
	ctx := context.Background()
	d, pg := localPostgres(t)
	before, err := pg.Seconds()
	if err != nil {
		t.Fatal(err)
	}
	// Burn Postgres CPU until the counter moves (ticks are 10 ms): bounded.
	for range 50 {
		if _, err := d.ExecContext(ctx, `SELECT count(*) FROM generate_series(1, 2000000)`); err != nil {
			t.Fatal(err)
		}
		after, err := pg.Seconds()
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatal("Postgres' CPU did not grow while a backend counted 100 million rows")
}

// TestReadStatReadsThisProcess: the parent and name come from the
// fields after the command name, as the CPU times do.
func TestReadStatReadsThisProcess(t *testing.T) {
	st, err := readStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if st.ppid != os.Getppid() {
		t.Fatalf("ppid = %d, want %d", st.ppid, os.Getppid())
	}
	if st.comm == "" {
		t.Fatal("no command name")
	}
}

// localPostgres is the test database and its cluster, which runs on this
// machine (started by deploy/stack.sh).
func localPostgres(t *testing.T) (*sqlx.DB, PostgresCPU) {
	t.Helper()
	d := testenv.DB(t)
	pg, err := FindPostgres(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if pg.postmaster == 0 {
		t.Fatal("the test Postgres runs on this machine, but no postmaster was found")
	}
	return d, pg
}

package main

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

// TestTwoMigratesAtOnce: two `dds migrate` processes (two replicas
// deploying together) on a database where one index of a stored schema is
// missing. The first builds it CONCURRENTLY while the second waits for the
// upgrade lock; both succeed. Waiting for that lock inside a statement
// held a snapshot the build waited for, and Postgres cancelled one with
// "deadlock detected". A third session's table lock holds the first
// build back until the second process is after the lock.
func TestTwoMigratesAtOnce(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	url := testenv.OwnDatabase(t, "migrate_race")
	d, err := db.Open(ctx, url, 4)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := db.Migrate(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	var tenant string
	if err := d.GetContext(ctx, &tenant, `INSERT INTO dds.tenants (name) VALUES ($1) RETURNING id`, t.Name()); err != nil {
		t.Fatal(err)
	}
	info, err := schema.NewService(d).Create(ctx, tenant, &schema.Definition{Name: "links",
		Entities:      []schema.Entity{{Name: "Doc", Fields: []schema.Field{{Name: "title", Type: schema.String}}}},
		Relationships: []schema.Relationship{{Name: "CITES", From: "Doc", To: "Doc"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pg := schema.PgSchemaName(info.ID)
	const sourceIndex = `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indisvalid AND i.indrelid = to_regclass(quote_ident($1) || '."CITES"') AND pg_get_indexdef(c.oid) LIKE '%(source_id, created_at, id)'`
	var made string
	if err := d.GetContext(ctx, &made, sourceIndex, pg); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `DROP INDEX `+schema.Ident(pg)+`.`+schema.Ident(made)); err != nil {
		t.Fatal(err)
	}

	release := testenv.HoldLock(ctx, t, d, `LOCK TABLE `+schema.QualifiedIdent(pg, "CITES")+` IN SHARE UPDATE EXCLUSIVE MODE`)
	bin := ddsBinary(t)
	env := append(os.Environ(), "DATABASE_URL="+url, "DDS_ENV=test", "DDS_JWT_SECRET=test-jwt-secret-0123456789abcdef0123456789",
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+t.TempDir())
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 2)
	migrate := func() {
		cmd := exec.CommandContext(ctx, bin, "migrate")
		cmd.Env = env
		go func() { out, err := cmd.CombinedOutput(); done <- result{out, err} }()
	}
	migrate()
	first := testenv.AwaitBackend(ctx, t, d, "the first migrate's build to wait", `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() LIMIT 1`)
	migrate()
	testenv.AwaitBackend(ctx, t, d, "the second migrate to ask for the upgrade lock", `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE '%-- dds schema upgrade lock' AND pid NOT IN ($1, pg_backend_pid()) LIMIT 1`, first)
	release()
	for range 2 {
		if r := <-done; r.err != nil {
			t.Fatalf("dds migrate beside another: %v\n%s", r.err, r.out)
		}
	}
	var again string
	if err := d.GetContext(ctx, &again, sourceIndex, pg); err != nil || again != made {
		t.Fatalf("after two migrates the source index is %q (%v), want %q, valid", again, err, made)
	}
}

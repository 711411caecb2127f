package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

// TestBinary builds dds and runs the commands an operator types: migrate,
// tenant create --json (whose key must then work against a server), and
// an unknown command.
func TestBinary(t *testing.T) {
	app := testenv.Server(t)
	bin := ddsBinary(t)
	env := append(os.Environ(), "DATABASE_URL="+testenv.DatabaseURL(t), "DDS_ENV=test",
		"DDS_JWT_SECRET=test-jwt-secret-0123456789abcdef0123456789",
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+t.TempDir())
	run := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.Output()
		return string(out), err
	}
	// A schema whose relationship lacks an index this version's DDL makes
	// (one made by an earlier DDS) gets it back from dds migrate.
	_, adminKey := app.Tenant(t)
	schemaID := app.Schema(t, adminKey, map[string]any{"name": "links",
		"entities":      []any{map[string]any{"name": "Doc", "fields": []any{map[string]any{"name": "title", "type": "STRING"}}}},
		"relationships": []any{map[string]any{"name": "CITES", "from": "Doc", "to": "Doc"}}})["id"].(string)
	d := testenv.DB(t)
	pg := schema.PgSchemaName(schemaID)
	orderIndex := func() string {
		t.Helper()
		var name string
		err := d.Get(&name, `SELECT coalesce(max(c.relname), '') FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indisvalid AND i.indrelid = to_regclass(quote_ident($1) || '."CITES"') AND pg_get_indexdef(c.oid) LIKE '%(source_id, created_at, id)'`, pg)
		if err != nil {
			t.Fatal(err)
		}
		return name
	}
	made := orderIndex()
	if made == "" {
		t.Fatal("a new relationship has no creation-order index")
	}
	d.MustExec(`DROP INDEX ` + schema.Ident(pg) + `.` + schema.Ident(made))
	if _, err := run("migrate"); err != nil {
		t.Fatalf("dds migrate: %v", err)
	}
	if got := orderIndex(); got != made {
		t.Fatalf("after dds migrate the creation-order index is %q, want %q", got, made)
	}
	out, err := run("tenant", "create", "--name", "from the CLI", "--json")
	if err != nil {
		t.Fatalf("dds tenant create: %v", err)
	}
	var created struct{ TenantID, APIKey string }
	if err := json.Unmarshal([]byte(out), &created); err != nil || created.TenantID == "" || !strings.HasPrefix(created.APIKey, "dds_test_") {
		t.Fatalf("tenant create --json printed %q", out)
	}
	if r := app.Do(t, "GET", "/api/v1/api-keys", created.APIKey, nil); r.Status != http.StatusOK {
		t.Fatalf("the printed admin key does not work: %d %s", r.Status, r.Body)
	}
	if _, err := run("tenant", "create", "--json"); err == nil {
		t.Fatal("tenant create without --name must fail")
	}
	cmd := exec.Command(bin, "frobnicate")
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "unknown command") {
		t.Fatalf("an unknown command must fail with usage: %v %s", err, out)
	}
	// --help prints help and exits 0 without a configuration (none is set here).
	for _, args := range [][]string{{"serve", "--help"}, {"worker", "-h"}, {"migrate", "--help"}, {"tenant", "create", "--help"}, {"dev", "--help"}} {
		cmd = exec.Command(bin, args...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil || !strings.HasPrefix(string(out), "usage: dds "+args[0]) {
			t.Errorf("dds %s: %v %s", strings.Join(args, " "), err, out)
		}
	}
	cmd = exec.Command(bin, "serve")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "DDS_LOG_LEVEL=loud", "FILE_STORAGE_DRIVER=ftp",
		"DDS_DB_MAX_CONNS=0", "DDS_VECTOR_EF_SEARCH=1001"}
	out, err = func() (string, error) { b, err := cmd.CombinedOutput(); return string(b), err }()
	for _, want := range []string{"DATABASE_URL", "DDS_JWT_SECRET", "DDS_LOG_LEVEL", "FILE_STORAGE_DRIVER", "DDS_DB_MAX_CONNS", "DDS_VECTOR_EF_SEARCH"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("bad configuration must be reported all at once, naming %s: %v %s", want, err, out)
		}
	}
	// A database `dds migrate` has not brought to this version: serve and
	// worker refuse it, naming the migrations and the command, and write
	// nothing to it but the migration tool's version table; after dds
	// migrate, no migration is pending.
	fresh := testenv.OwnDatabase(t, "unmigrated")
	freshEnv := append(append([]string{}, env...), "DATABASE_URL="+fresh, "DDS_HTTP_ADDR=127.0.0.1:0", "DDS_WORKER_HTTP_ADDR=127.0.0.1:0")
	for _, c := range []string{"serve", "worker"} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // one that starts anyway is killed
		defer cancel()
		cmd = exec.CommandContext(ctx, bin, c)
		cmd.Env = freshEnv
		b, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(b), "migration(s) not applied (00001_") || !strings.Contains(string(b), "run `dds migrate` first") {
			t.Errorf("dds %s on an unmigrated database must refuse to start, naming the migrations: %v\n%s", c, err, b)
		}
	}
	cmd = exec.Command(bin, "migrate")
	cmd.Env = freshEnv
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dds migrate: %v\n%s", err, b)
	}
	fd, err := db.Open(context.Background(), fresh, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer fd.Close()
	if pending, err := db.Pending(context.Background(), fd.DB); err != nil || len(pending) != 0 {
		t.Fatalf("pending after dds migrate: %v %v", pending, err)
	}
}

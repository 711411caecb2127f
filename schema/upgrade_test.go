package schema_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

// A schema made before the relationships' creation-order indexes existed
// (one missing, one left invalid by an interrupted build) gets both, valid,
// from Upgrade; a second run changes nothing.
func TestUpgradeAddsRelationshipOrderIndexes(t *testing.T) {
	ctx := context.Background()
	d := testenv.DB(t)
	tenant := testenv.TenantRow(t, t.Name())
	pg := createLinks(t, d, tenant)
	type index struct {
		Name  string `db:"relname"`
		Def   string `db:"def"`
		Valid bool   `db:"indisvalid"`
	}
	order := func() map[string]index { // by end: source, target
		t.Helper()
		var ix []index
		if err := d.SelectContext(ctx, &ix, `SELECT c.relname, pg_get_indexdef(c.oid) AS def, i.indisvalid
FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = $1 AND i.indrelid = to_regclass(quote_ident($1) || '."CITES"')`, pg); err != nil {
			t.Fatal(err)
		}
		out := map[string]index{}
		for _, x := range ix {
			for _, end := range []string{"source", "target"} {
				if strings.HasSuffix(x.Def, "("+end+"_id, created_at, id)") {
					out[end] = x
				}
			}
		}
		return out
	}
	made := order()
	if len(made) != 2 || !made["source"].Valid || !made["target"].Valid {
		t.Fatalf("a new relationship has its creation-order indexes: %+v", made)
	}
	d.MustExec(`DROP INDEX ` + schema.Ident(pg) + `.` + schema.Ident(made["source"].Name))
	d.MustExec(`UPDATE pg_index SET indisvalid = false WHERE indexrelid = to_regclass($1)`, schema.Ident(pg)+"."+schema.Ident(made["target"].Name))
	if got := order(); len(got) != 1 || got["target"].Valid {
		t.Fatalf("set-up of an old schema: %+v", got)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for run := 1; run <= 2; run++ {
		if err := schema.Upgrade(ctx, d, log); err != nil {
			t.Fatalf("upgrade run %d: %v", run, err)
		}
		if got := order(); len(got) != 2 || got["source"] != made["source"] || got["target"] != made["target"] {
			t.Fatalf("after upgrade run %d: %+v, want %+v", run, got, made)
		}
	}
}

// A history entity made before the create trigger existed (one trigger on
// insert, update and delete) gets today's two from Upgrade, so a create
// that writes its own version is recorded once; a second run changes
// nothing, and updates and raw inserts are still recorded. Until Upgrade
// has run, RequireMigrated (the check of `dds serve` and `dds worker`)
// refuses the database, naming the table. In a database of its own: a
// server started by another package meanwhile would refuse the shared one.
func TestUpgradeSplitsTheHistoryTrigger(t *testing.T) {
	ctx := context.Background()
	d, tenant := ownMigratedDB(t, "upgrade", 4)
	info, err := schema.NewService(d).Create(ctx, tenant, &schema.Definition{Name: "hist",
		Entities: []schema.Entity{{Name: "Doc", History: true, Fields: []schema.Field{{Name: "title", Type: schema.String}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pg := schema.PgSchemaName(info.ID)
	table := schema.QualifiedIdent(pg, "Doc")
	triggers := func() string {
		t.Helper()
		var defs []string
		if err := d.SelectContext(ctx, &defs, `SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE tgrelid = to_regclass($1) AND NOT tgisinternal ORDER BY tgname`, table); err != nil {
			t.Fatal(err)
		}
		return strings.Join(defs, "\n")
	}
	made := triggers()
	if !strings.Contains(made, "AFTER DELETE OR UPDATE") || !strings.Contains(made, "AFTER INSERT") || !strings.Contains(made, "WHEN") {
		t.Fatalf("a new history entity's triggers:\n%s", made)
	}
	// The schema as an earlier DDS made it.
	d.MustExec(`DROP TRIGGER dds_history ON ` + table)
	d.MustExec(`DROP TRIGGER dds_history_create ON ` + table)
	d.MustExec(`CREATE TRIGGER dds_history AFTER INSERT OR UPDATE OR DELETE ON ` + table + ` FOR EACH ROW EXECUTE FUNCTION ` + schema.Ident(pg) + `.dds_history_write()`)
	err = schema.RequireMigrated(ctx, d)
	if err == nil || !strings.Contains(err.Error(), pg+".Doc") || !strings.Contains(err.Error(), "run `dds migrate` first") {
		t.Fatalf("RequireMigrated before the upgrade: %v, want the table named and dds migrate asked for", err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for run := 1; run <= 2; run++ {
		if err := schema.Upgrade(ctx, d, log); err != nil {
			t.Fatalf("upgrade run %d: %v", run, err)
		}
		if err := schema.RequireMigrated(ctx, d); err != nil {
			t.Fatalf("RequireMigrated after upgrade run %d: %v", run, err)
		}
		if got := triggers(); got != made {
			t.Fatalf("after upgrade run %d:\n%s\nwant\n%s", run, got, made)
		}
	}
	// The create's own row skipped, every other write recorded.
	own, raw := "0193a6f0-0000-7000-8000-000000000001", "0193a6f0-0000-7000-8000-000000000002"
	tx := d.MustBegin()
	tx.MustExec(`SELECT set_config($1, $2, true)`, schema.HistoryOwnSetting, own)
	tx.MustExec(`INSERT INTO `+table+` ("id", "title") VALUES ($1, 'own'), ($2, 'raw')`, own, raw)
	tx.MustExec(`UPDATE `+table+` SET "title" = 'x' WHERE "id" = $1`, own)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var ops []string
	if err := d.Select(&ops, `SELECT op || ':' || record_id FROM `+schema.QualifiedIdent(pg, schema.HistoryTable)+` ORDER BY record_id, id`); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(ops, " "), "update:"+own+" create:"+raw; got != want {
		t.Fatalf("versions after the upgrade: %s, want %s", got, want)
	}
}

// An indexed field's index as an earlier DDS made it (the field alone) is
// replaced by Upgrade with today's (the field then id), built before the
// old one goes; a FILE field's and a unique field's stay as they are, and
// a second run changes nothing.
func TestUpgradeIndexesIndexedFieldsThenID(t *testing.T) {
	ctx := context.Background()
	d := testenv.DB(t)
	tenant := testenv.TenantRow(t, t.Name())
	info, err := schema.NewService(d).Create(ctx, tenant, &schema.Definition{Name: "owned",
		Entities: []schema.Entity{{Name: "Todo", Fields: []schema.Field{
			{Name: "ownerId", Type: schema.String, Indexed: true},
			{Name: "code", Type: schema.String, Unique: true},
			{Name: "doc", Type: schema.File},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pg := schema.PgSchemaName(info.ID)
	defs := func() string { // the table's secondary index definitions, without names
		t.Helper()
		var ds []string
		if err := d.SelectContext(ctx, &ds, `SELECT regexp_replace(pg_get_indexdef(indexrelid), '^.* USING ', '') || CASE WHEN indisvalid THEN '' ELSE ' (invalid)' END
FROM pg_index WHERE indrelid = to_regclass(quote_ident($1) || '."Todo"') AND NOT indisprimary ORDER BY 1`, pg); err != nil {
			t.Fatal(err)
		}
		return strings.Join(ds, "; ")
	}
	want := `btree ("createdAt", id); btree ("ownerId", id); btree (code); btree (doc)`
	if got := defs(); got != want {
		t.Fatalf("a new entity's indexes: %s, want %s", got, want)
	}
	// The index of ownerId as an earlier version made it.
	var paged string
	if err := d.GetContext(ctx, &paged, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = to_regclass(quote_ident($1) || '."Todo"') AND pg_get_indexdef(i.indexrelid) LIKE '%("ownerId", id)'`, pg); err != nil {
		t.Fatal(err)
	}
	d.MustExec(`DROP INDEX ` + schema.Ident(pg) + `.` + schema.Ident(paged))
	d.MustExec(`CREATE INDEX ` + schema.Ident(schema.FieldIndexNames("Todo", "ownerId")[2]) + ` ON ` + schema.QualifiedIdent(pg, "Todo") + ` ("ownerId")`)
	if got := defs(); !strings.Contains(got, `btree ("ownerId");`) {
		t.Fatalf("set-up of an old schema: %s", got)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for run := 1; run <= 2; run++ {
		if err := schema.Upgrade(ctx, d, log); err != nil {
			t.Fatalf("upgrade run %d: %v", run, err)
		}
		if got := defs(); got != want {
			t.Fatalf("after upgrade run %d: %s, want %s", run, got, want)
		}
	}
}

// Two `dds migrate` runs at once: the second waits for the first, which is
// building an index CONCURRENTLY, and both succeed. The build waits for
// every snapshot older than it in the database; a second run that waited
// for the upgrade lock inside a statement held one, so each waited for
// the other and Postgres cancelled one with "deadlock detected". The
// scenario is held in place: a third session's table lock keeps the first
// run's build waiting until the second run is after the upgrade lock.
func TestConcurrentUpgradesWaitForEachOther(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, tenant := ownMigratedDB(t, "upgrade_race", 8)
	pg := createLinks(t, d, tenant)
	var source string
	if err := d.GetContext(ctx, &source, `SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
WHERE i.indrelid = to_regclass(quote_ident($1) || '."CITES"') AND pg_get_indexdef(i.indexrelid) LIKE '%(source_id, created_at, id)'`, pg); err != nil {
		t.Fatal(err)
	}
	d.MustExec(`DROP INDEX ` + schema.Ident(pg) + `.` + schema.Ident(source))

	// A third session's lock on the table, held until both runs are under
	// way: the first run's build waits for it before it takes the snapshot
	// whose elders it then waits for, so the second run's is among them.
	release := testenv.HoldLock(ctx, t, d, `LOCK TABLE `+schema.QualifiedIdent(pg, "CITES")+` IN SHARE UPDATE EXCLUSIVE MODE`)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	done := make(chan error, 2)
	go func() { done <- schema.Upgrade(ctx, d, log) }()
	first := testenv.AwaitBackend(ctx, t, d, "the first run's build to wait", `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'CREATE INDEX CONCURRENTLY%' AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() LIMIT 1`)
	go func() { done <- schema.Upgrade(ctx, d, log) }()
	testenv.AwaitBackend(ctx, t, d, "the second run to ask for the lock", `SELECT pid FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE '%-- dds schema upgrade lock' AND pid NOT IN ($1, pg_backend_pid()) LIMIT 1`, first)
	release()
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("concurrent upgrade: %v", err)
		}
	}
	var valid bool
	if err := d.GetContext(ctx, &valid, `SELECT bool_and(i.indisvalid) AND count(*) = 1 FROM pg_index i
WHERE i.indrelid = to_regclass(quote_ident($1) || '."CITES"') AND pg_get_indexdef(i.indexrelid) LIKE '%(source_id, created_at, id)'`, pg); err != nil {
		t.Fatal(err)
	}
	if !valid {
		t.Fatal("after two concurrent upgrades the source index is not there once, valid")
	}
}

// ownMigratedDB opens a database of the test's own (testenv.OwnDatabase,
// named by suffix) with conns connections, migrated, and adds a tenant.
func ownMigratedDB(t *testing.T, suffix string, conns int) (*sqlx.DB, string) {
	t.Helper()
	ctx := context.Background()
	d, err := db.Open(ctx, testenv.OwnDatabase(t, suffix), conns)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if err := db.Migrate(ctx, d.DB); err != nil {
		t.Fatal(err)
	}
	var tenant string
	if err := d.Get(&tenant, `INSERT INTO dds.tenants (name) VALUES ($1) RETURNING id`, t.Name()); err != nil {
		t.Fatal(err)
	}
	return d, tenant
}

// createLinks creates tenant's schema "links" (Doc, and CITES from Doc to
// Doc) and returns its Postgres schema.
func createLinks(t *testing.T, d *sqlx.DB, tenant string) string {
	t.Helper()
	info, err := schema.NewService(d).Create(context.Background(), tenant, &schema.Definition{Name: "links",
		Entities:      []schema.Entity{{Name: "Doc", Fields: []schema.Field{{Name: "title", Type: schema.String}}}},
		Relationships: []schema.Relationship{{Name: "CITES", From: "Doc", To: "Doc"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return schema.PgSchemaName(info.ID)
}

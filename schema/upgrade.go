package schema

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/db"
)

// upgradeLock is the advisory lock key that serialises Upgrade runs (two
// replicas running `dds migrate` at once).
const upgradeLock = 0x64647375 // "ddsu"

// lockUpgrade takes upgradeLock on conn's session, polling for it with
// pg_try_advisory_lock rather than waiting inside pg_advisory_lock. A
// statement that waits holds a snapshot, and the holder of the lock may be
// building an index CONCURRENTLY, which waits for every older snapshot in
// the database to end: the two would wait for each other, and Postgres
// breaks that with "deadlock detected" (a second `dds migrate`, or a test
// package's, failed this way). Between polls this session holds none.
func lockUpgrade(ctx context.Context, conn *sqlx.Conn) error {
	wait := 20 * time.Millisecond
	for {
		var got bool
		// The comment names the wait in pg_stat_activity (goose's own lock
		// is asked for with the same function).
		if err := conn.GetContext(ctx, &got, `SELECT pg_try_advisory_lock($1) -- dds schema upgrade lock`, upgradeLock); err != nil {
			return err
		}
		if got {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, time.Second)
	}
}

// idxRel is a table or an index in the catalog.
type idxRel struct{ schema, name string }

// Upgrade gives the tables of every stored schema what the DDL of this
// version of DDS creates and an earlier version did not: the
// relationships' creation-order indexes (see orderIndexes), indexed
// fields' indexes by the field then id (upgradePagedIndex), and the split
// history triggers (upgradeHistory). The indexes are
// built CONCURRENTLY, so writes go on while they build; one left invalid by
// an interrupted build is dropped and built again. It is idempotent and
// cheap when nothing is missing (one catalog query); `dds migrate` runs it
// after the control-plane migrations.
func Upgrade(ctx context.Context, d *sqlx.DB, log *slog.Logger) error {
	conn, err := d.Connx(ctx) // one session: the advisory lock, and no transaction around CONCURRENTLY
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := lockUpgrade(ctx, conn); err != nil {
		return fmt.Errorf("schema upgrade lock: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, upgradeLock) //nolint:errcheck // the session ends with conn anyway

	var stored []struct {
		PgSchema   string `db:"pg_schema"`
		Definition []byte `db:"definition"`
	}
	if err := sqlx.SelectContext(ctx, conn, &stored, `SELECT pg_schema, definition FROM dds.schemas ORDER BY created_at`); err != nil {
		return fmt.Errorf("list schemas: %w", err)
	}
	// Every index of the data schemas, valid or not, and every table.
	var rels []struct {
		Schema string `db:"nspname"`
		Name   string `db:"relname"`
		Kind   string `db:"relkind"`
		Valid  *bool  `db:"indisvalid"`
	}
	if err := sqlx.SelectContext(ctx, conn, &rels, `SELECT n.nspname, c.relname, c.relkind::text, i.indisvalid
FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace LEFT JOIN pg_index i ON i.indexrelid = c.oid
WHERE n.nspname IN (SELECT pg_schema FROM dds.schemas) AND c.relkind IN ('r', 'i')`); err != nil {
		return fmt.Errorf("list tables and indexes: %w", err)
	}
	type rel = idxRel
	tables, valid, invalid := map[rel]bool{}, map[rel]bool{}, map[rel]bool{}
	for _, r := range rels {
		k := rel{r.Schema, r.Name}
		switch {
		case r.Kind == "r":
			tables[k] = true
		case r.Valid != nil && *r.Valid:
			valid[k] = true
		default:
			invalid[k] = true
		}
	}
	if err := upgradeHistory(ctx, conn, log); err != nil {
		return err
	}
	for _, s := range stored {
		var def Definition
		if err := json.Unmarshal(s.Definition, &def); err != nil {
			return fmt.Errorf("schema %s: decode definition: %w", s.PgSchema, err)
		}
		for i := range def.Entities {
			e := &def.Entities[i]
			for j := range e.Fields {
				if err := upgradePagedIndex(ctx, conn, log, s.PgSchema, e.Name, &e.Fields[j], valid, invalid); err != nil {
					return err
				}
			}
		}
		for i := range def.Relationships {
			r := &def.Relationships[i]
			if !tables[rel{s.PgSchema, RelTable(r)}] {
				continue
			}
			steps := orderIndexes(s.PgSchema, r, "CONCURRENTLY IF NOT EXISTS ")
			for j, end := range []string{"source", "target"} {
				name := rel{s.PgSchema, orderIndexName(r, end)}
				if valid[name] {
					continue
				}
				if invalid[name] {
					if _, err := conn.ExecContext(ctx, fmt.Sprintf(`DROP INDEX CONCURRENTLY IF EXISTS %s.%s`, Ident(name.schema), Ident(name.name))); err != nil {
						return fmt.Errorf("schema %s: drop invalid index %s: %w", s.PgSchema, name.name, err)
					}
				}
				log.Info("schema upgrade", "schema", s.PgSchema, "step", steps[j].Description)
				if _, err := conn.ExecContext(ctx, steps[j].SQL); err != nil {
					return fmt.Errorf("schema %s: %s: %w", s.PgSchema, steps[j].Description, err)
				}
			}
		}
	}
	return nil
}

// upgradePagedIndex replaces the index an earlier version made for an
// indexed field (the field alone) with today's (the field then id,
// pagedIndexKind), built CONCURRENTLY before the old one is dropped, so
// lists filtered or ruled by the field are served all along. It acts only
// where the old index is in the catalog (so the column exists and is
// indexed); an invalid new index left by an interrupted build is dropped
// and built again.
func upgradePagedIndex(ctx context.Context, conn *sqlx.Conn, log *slog.Logger, pg, table string, f *Field, valid, invalid map[idxRel]bool) error {
	if !f.PagedIndex() {
		return nil
	}
	steps := fieldIndexesHow(pg, table, f, "CONCURRENTLY IF NOT EXISTS ")
	legacy, paged := idxRel{pg, indexName(table, f.Name, "bt")}, idxRel{pg, indexName(table, f.Name, pagedIndexKind)}
	if !valid[legacy] && !invalid[legacy] {
		return nil
	}
	drop := func(r idxRel) error {
		_, err := conn.ExecContext(ctx, fmt.Sprintf(`DROP INDEX CONCURRENTLY IF EXISTS %s.%s`, Ident(r.schema), Ident(r.name)))
		return err
	}
	if !valid[paged] {
		if invalid[paged] {
			if err := drop(paged); err != nil {
				return fmt.Errorf("schema %s: drop invalid index %s: %w", pg, paged.name, err)
			}
		}
		log.Info("schema upgrade", "schema", pg, "step", steps[0].Description)
		if _, err := conn.ExecContext(ctx, steps[0].SQL); err != nil {
			return fmt.Errorf("schema %s: %s: %w", pg, steps[0].Description, err)
		}
	}
	if err := drop(legacy); err != nil {
		return fmt.Errorf("schema %s: drop the earlier index on %s.%s: %w", pg, table, f.Name, err)
	}
	return nil
}

// upgradeHistory replaces the one history trigger of an entity table made
// by an earlier DDS (AFTER INSERT OR UPDATE OR DELETE) with today's two
// (historyTriggers), and the schema's trigger function with today's. It
// must run before this version's servers write: their creates write their
// own version and rely on the create trigger's WHEN clause to skip it, so
// under the old trigger such a create would be recorded twice. Each table
// changes in one transaction, so no write goes unrecorded in between. It
// finds the old triggers in the catalog (a dds_history trigger that fires
// on INSERT), whatever the stored definitions say.
func upgradeHistory(ctx context.Context, conn *sqlx.Conn, log *slog.Logger) error {
	old, err := oldHistoryTriggers(ctx, conn)
	if err != nil {
		return err
	}
	for _, o := range old {
		tx, err := conn.BeginTxx(ctx, nil)
		if err != nil {
			return err
		}
		steps := []Step{historyTable(o.Schema)[1],
			{SQL: fmt.Sprintf("DROP TRIGGER %s ON %s", Ident(historyTrigger), tableSQL(o.Schema, o.Table))}}
		steps = append(steps, historyTriggers(o.Schema, o.Table)...)
		for _, st := range steps {
			if _, err := tx.ExecContext(ctx, st.SQL); err != nil {
				_ = tx.Rollback()
				return fmt.Errorf("schema %s: history triggers of %s: %w", o.Schema, o.Table, err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("schema %s: history triggers of %s: %w", o.Schema, o.Table, err)
		}
		log.Info("schema upgrade", "schema", o.Schema, "step", "split the history trigger of "+o.Table+" (creates that write their own version are not recorded twice)")
	}
	return nil
}

// oldTrigger is an entity table whose history trigger predates the split.
type oldTrigger struct {
	Schema string `db:"nspname"`
	Table  string `db:"relname"`
}

// oldHistoryTriggers finds the tables with the history trigger of an
// earlier DDS: a dds_history trigger that fires on INSERT.
func oldHistoryTriggers(ctx context.Context, q sqlx.QueryerContext) ([]oldTrigger, error) {
	var old []oldTrigger
	if err := sqlx.SelectContext(ctx, q, &old, `SELECT n.nspname, c.relname
FROM pg_trigger tg JOIN pg_class c ON c.oid = tg.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE tg.tgname = $1 AND tg.tgtype & 4 <> 0 AND n.nspname IN (SELECT pg_schema FROM dds.schemas)
ORDER BY 1, 2`, historyTrigger); err != nil { // 4: TRIGGER_TYPE_INSERT
		return nil, fmt.Errorf("list history triggers: %w", err)
	}
	return old, nil
}

// UpgradePending lists what Upgrade must still change before this
// version's processes may write: the entity tables (as "pgschema.table")
// whose history trigger predates the split, under which a create would be
// recorded twice. The missing relationship indexes are left out: they
// cost speed, not correctness, and Upgrade builds them while writes go on.
// `dds serve` and `dds worker` refuse to start while it lists anything.
func UpgradePending(ctx context.Context, q sqlx.QueryerContext) ([]string, error) {
	old, err := oldHistoryTriggers(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(old))
	for i, o := range old {
		out[i] = o.Schema + "." + o.Table
	}
	return out, nil
}

// RequireMigrated is the check `dds serve` and `dds worker` make before
// they serve: the control-plane migrations of this version are applied
// (db.Pending) and no table waits for Upgrade (UpgradePending). Its error
// names what is missing and says to run `dds migrate`; the processes exit
// with it rather than write under the old triggers or without a column
// their statements name.
func RequireMigrated(ctx context.Context, d *sqlx.DB) error {
	pending, err := db.Pending(ctx, d.DB)
	if err != nil {
		return err
	}
	if n := len(pending); n > 0 {
		return fmt.Errorf("the database is behind this version of dds: %d migration(s) not applied (%s … %s); run `dds migrate` first", n, pending[0], pending[n-1])
	}
	old, err := UpgradePending(ctx, d)
	if err != nil {
		return err
	}
	if n := len(old); n > 0 {
		return fmt.Errorf("the database is behind this version of dds: %d table(s) still have the history trigger of an earlier version (%s), under which a create would be recorded twice; run `dds migrate` first", n, strings.Join(old, ", "))
	}
	return nil
}

// Migrate is what `dds migrate` does: the control-plane migrations
// (db.Migrate), then Upgrade of the stored schemas' tables. A database it
// has run on passes RequireMigrated, so the test helpers that prepare a
// database for servers and workers call it too.
func Migrate(ctx context.Context, d *sqlx.DB, log *slog.Logger) error {
	if err := db.Migrate(ctx, d.DB); err != nil {
		return err
	}
	return Upgrade(ctx, d, log)
}

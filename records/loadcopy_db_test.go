package records_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// An import loads what an export dumped: every column type a tenant table
// can hold, with the values whose text is hardest to carry (escapes,
// control bytes, NaN, zones, BC and infinite dates, nulls inside arrays,
// nested arrays), comes back as the same row (row_to_json of the loaded
// table equals the original's). A record of the wrong type, or a line
// that is not a JSON object, fails the load naming the table and record,
// and writes nothing.
func TestLoadTableRestoresWhatDumpTableWrote(t *testing.T) {
	ctx := context.Background()
	d := testenv.DB(t)
	pg := "loadcopy_" + strings.ToLower(strings.ReplaceAll(testenv.TenantRow(t, t.Name())[:8], "-", ""))
	exec := func(q string) {
		t.Helper()
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(fmt.Sprintf(`CREATE SCHEMA %q`, pg))
	t.Cleanup(func() { _, _ = d.ExecContext(context.Background(), fmt.Sprintf(`DROP SCHEMA %q CASCADE`, pg)) })
	createDumpFixture(exec, pg, "T", true)
	createDumpFixture(exec, pg, "U", false)
	s := records.NewStore(d, schema.NewService(d), nil)
	// A row updated after the others: T's physical order is no longer
	// its id order, and the dump follows the physical one.
	exec(fmt.Sprintf(`UPDATE %q."T" SET "zText" = "zText" WHERE id = (SELECT id FROM %q."T" ORDER BY id LIMIT 1)`, pg, pg))

	snapshot := snapshotOf(t, d)
	var dump bytes.Buffer
	if _, err := s.DumpTable(ctx, snapshot, pg, "T", &dump); err != nil {
		t.Fatal(err)
	}
	var first string
	if err := d.GetContext(ctx, &first, fmt.Sprintf(`SELECT id::text FROM %q."T" ORDER BY id LIMIT 1`, pg)); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(strings.SplitN(dump.String(), "\n", 2)[0], first) {
		t.Fatalf("the updated row %s is dumped first, not in physical order:\n%s", first, dump.String())
	}
	// Blank lines are skipped; a member the table does not have is ignored.
	input := strings.Replace(dump.String(), "\n", "\n\n", 1)
	input = strings.Replace(input, `{"Upper"`, `{"unknown":{"a":[1,{"b":"}"}]},"Upper"`, 1)
	n, err := s.LoadTable(ctx, pg, "U", lineReader(input), nil)
	if err != nil || n != 4 {
		t.Fatalf("load: %d rows, %v", n, err)
	}
	rows := func(table string) []string {
		var out []string
		if err := d.SelectContext(ctx, &out, fmt.Sprintf(`SELECT row_to_json(r)::text FROM (SELECT "Upper", b, bs, "createdAt", d, ds, f, file, fs, id, j, js, n, ns, tags, ts, v, "zText", search FROM %q.%q) r ORDER BY r.id`, pg, table)); err != nil {
			t.Fatal(err)
		}
		return out
	}
	// Re-dumped, the loaded table gives the same bytes: the load kept the
	// dump's order, which is what makes a re-export's checksums the same.
	var again bytes.Buffer
	if _, err := s.DumpTable(ctx, snapshotOf(t, d), pg, "U", &again); err != nil {
		t.Fatal(err)
	}
	if again.String() != dump.String() {
		t.Errorf("the loaded table dumps differently:\n%s\nwant\n%s", again.String(), dump.String())
	}
	want, got := rows("T"), rows("U")
	if len(got) != len(want) {
		t.Fatalf("loaded %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i+1, got[i], want[i])
		}
	}

	createDumpFixture(exec, pg, "V", false)
	good := `{"id":"00000000-0000-7000-8000-000000000001","n":1}` + "\n"
	for _, c := range []struct{ lines, want string }{
		{good + `{"id":"00000000-0000-7000-8000-000000000002","n":"x"}`, `V, record 2: invalid input syntax for type bigint: "x"`},
		{good + good, `V, record 2: duplicate key value violates unique constraint`},
		{good + `["not an object"]`, `V, record 2: not a JSON object`},
		{good + `{"id":"00000000-0000-7000-8000-000000000002","zText":"a\u0000b"}`, `V, record 2: member "zText": invalid JSON: \u0000 cannot be stored in text`},
		{good + `{"id":"00000000-0000-7000-8000-000000000002"} trailing`, `V, record 2: invalid JSON at byte`},
		{good + `{"id":"00000000-0000-7000-8000-000000000002","tags":[` + strings.Repeat("[", 600) + `]}`, `V, record 2: member "tags": nested too deeply`},
		{good + `{"id":"00000000-0000-7000-8000-000000000002","j":{"a":}}`, `V, record 2: member "j": invalid JSON at byte 55: '}' where a value was expected`},
		{good + `{"id":"00000000-0000-7000-8000-000000000002","j":"\ud800"}`, `V, record 2: invalid input syntax for type json`},
		{good + "{\"id\":\"00000000-0000-7000-8000-000000000002\",\"zText\":\"\xff\"}", `V, record 2: invalid byte sequence for encoding "UTF8"`},
	} {
		_, err := s.LoadTable(ctx, pg, "V", lineReader(c.lines), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("load of %q: %v, want %q", c.lines, err, c.want)
		}
	}
	var left int
	if err := d.GetContext(ctx, &left, fmt.Sprintf(`SELECT count(*) FROM %q."V"`, pg)); err != nil || left != 0 {
		t.Fatalf("failed loads left %d rows (%v)", left, err)
	}
}

// lineReader returns the lines of s the way an import reads an archive's
// entry (blank lines skipped, nil at the end).
func lineReader(s string) func() ([]byte, error) {
	lines := strings.Split(s, "\n")
	return func() ([]byte, error) {
		for len(lines) > 0 {
			l := lines[0]
			lines = lines[1:]
			if strings.TrimSpace(l) != "" {
				return []byte(l), nil
			}
		}
		return nil, nil
	}
}

// snapshotOf exports a snapshot of d, as an export's transaction does, and
// keeps its transaction open until the test ends.
func snapshotOf(t *testing.T, d *sqlx.DB) string {
	t.Helper()
	tx, err := d.BeginTxx(context.Background(), &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	var snapshot string
	if err := tx.Get(&snapshot, `SELECT pg_export_snapshot()`); err != nil {
		t.Fatal(err)
	}
	return snapshot
}

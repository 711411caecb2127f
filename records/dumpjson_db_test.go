package records_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// An export's NDJSON is what Postgres's row_to_json prints for each row,
// byte for byte, though DumpTable now renders it from COPY's text: an
// archive of this version checksums the same as one of earlier versions
// (and a re-export after an import the same as the first export). Every
// column type a tenant table can hold, with the values whose text differs
// between the two renderings (escapes, control bytes, NaN, zones with
// and without minutes, BC and infinite dates, nulls inside arrays, nested
// arrays) is compared against row_to_json in the same snapshot.
func TestDumpTableMatchesRowToJSON(t *testing.T) {
	ctx := context.Background()
	d := testenv.DB(t)
	pg := "dumpjson_" + strings.ToLower(strings.ReplaceAll(testenv.TenantRow(t, t.Name())[:8], "-", ""))
	exec := func(q string) {
		t.Helper()
		if _, err := d.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(fmt.Sprintf(`CREATE SCHEMA %q`, pg))
	t.Cleanup(func() { _, _ = d.ExecContext(context.Background(), fmt.Sprintf(`DROP SCHEMA %q CASCADE`, pg)) })
	createDumpFixture(exec, pg, "T", true)
	s := records.NewStore(d, schema.NewService(d), nil)
	conn, err := d.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	tx, err := conn.BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	if _, err := tx.ExecContext(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`); err != nil {
		t.Fatal(err)
	}
	var snapshot string
	if err := tx.GetContext(ctx, &snapshot, `SELECT pg_export_snapshot()`); err != nil {
		t.Fatal(err)
	}
	var want []string
	if err := tx.SelectContext(ctx, &want, fmt.Sprintf(`SELECT row_to_json(r)::text FROM (SELECT t."Upper", t."b", t."bs", t."createdAt", t."d", t."ds", t."f", t."file", t."fs", t."id", t."j", t."js", t."n", t."ns", t."tags", t."ts", t."v", t."zText" FROM %q."T" t ORDER BY t.ctid) r`, pg)); err != nil { // DumpTable's order: physical
		t.Fatal(err)
	}
	var got bytes.Buffer
	n, err := s.DumpTable(ctx, snapshot, pg, "T", &got)
	if err != nil || n != 4 {
		t.Fatalf("dump: %d rows, %v", n, err)
	}
	lines := strings.Split(strings.TrimSuffix(got.String(), "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("dump has %d lines, row_to_json %d:\n%s", len(lines), len(want), got.String())
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i+1, lines[i], want[i])
		}
	}
}

// createDumpFixture creates table pg.table with a column of every type a
// tenant table can hold, and (rows) the rows whose renderings differ.
func createDumpFixture(exec func(string), pg, table string, rows bool) {
	exec(fmt.Sprintf(`CREATE TABLE %q.%q (
		"id" uuid PRIMARY KEY, "zText" text, "createdAt" timestamptz, "n" bigint, "f" double precision,
		"b" boolean, "d" date, "j" jsonb, "file" uuid, "v" vector(3), "tags" text[], "ns" bigint[],
		"fs" double precision[], "ts" timestamptz[], "ds" date[], "bs" boolean[], "js" jsonb[],
		"Upper" text, "search" tsvector GENERATED ALWAYS AS (to_tsvector('simple', coalesce("zText", ''))) STORED)`, pg, table))
	if !rows {
		return
	}
	exec(fmt.Sprintf(`INSERT INTO %q.%q VALUES
		('00000000-0000-7000-8000-000000000001', E'plain \"quoted\" back\\slash\nnew\ttab\r\b\f\x01\x1f é 😀 </script> & \u2028', '2026-11-27 01:47:07.123456+00', -9223372036854775808, 1.5e300,
		 true, '2026-02-28', '{"a": [1, "x\"y"], "b": null, "c": "\\u0000"}', '00000000-0000-7000-8000-0000000000ff', '[1,2.5,-3e-7]',
		 ARRAY['a', 'b c', '', 'NULL', NULL, E'q\"\\', '{x,y}'], ARRAY[1, NULL, -2], ARRAY['NaN', 'Infinity', '-Infinity', 0.1, -0]::float8[],
		 ARRAY['2026-01-01 00:00:00+00', 'infinity']::timestamptz[], ARRAY['2026-01-02', '-infinity']::date[], ARRAY[true, false, NULL],
		 ARRAY['{"k": "v"}', '[]']::jsonb[], 'w'),
		('00000000-0000-7000-8000-000000000002', NULL, '0044-03-15 12:00:00+00 BC', 0, 'NaN',
		 false, '0044-03-15 BC', 'null', NULL, NULL, '{}', '{{1,2},{3,4}}', NULL, NULL, NULL, NULL, NULL, NULL),
		('00000000-0000-7000-8000-000000000003', '', 'infinity', 42, '-Infinity',
		 NULL, 'infinity', '"s"', NULL, NULL, '[0:1]={x,y}', NULL, '{-0.0,3}', NULL, NULL, NULL, NULL, E'\\'),
		('00000000-0000-7000-8000-000000000004', 'zones', '2026-06-01 12:00:00.5+05:30', 1, 3.14159,
		 true, '1999-12-31', '12.50', NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)`, pg, table))
}

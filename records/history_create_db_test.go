package records_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// historyEntity has a field of every type a create can set without a
// stored file, soft delete (so deletedAt is a column) and a searchable
// field (so the row has the generated _search column the version leaves
// out).
func historyEntity() schema.Entity {
	return schema.Entity{Name: "Doc", SoftDelete: true, History: true, Fields: []schema.Field{
		{Name: "title", Type: schema.String, Searchable: true},
		{Name: "body", Type: schema.Text},
		{Name: "n", Type: schema.Integer},
		{Name: "price", Type: schema.Number},
		{Name: "ok", Type: schema.Boolean},
		{Name: "at", Type: schema.Timestamp},
		{Name: "day", Type: schema.Date},
		{Name: "meta", Type: schema.JSON},
		{Name: "status", Type: schema.Enum, Values: []string{"draft", "live"}},
		{Name: "tags", Type: schema.String, List: true},
		{Name: "emb", Type: schema.Vector, VectorDimensions: 3},
	}}
}

func historyInput() map[string]any {
	return map[string]any{
		"title": "a 'quoted' title", "body": "text", "n": json.Number("42"), "price": json.Number("0.1"),
		"ok": true, "at": "2026-11-27T04:05:06.123456Z", "day": "2026-11-27", "meta": map[string]any{"k": []any{1, "x"}},
		"status": "live", "tags": []any{"a", "b,c"}, "emb": []any{json.Number("0.1"), json.Number("-2.5"), json.Number("3")},
	}
}

// version is a row of the history table, the record's own id left out of
// its record (two records are compared).
type version struct {
	RecordID string         `db:"record_id"`
	Entity   string         `db:"entity"`
	Op       string         `db:"op"`
	At       string         `db:"at"`
	KeyID    sql.NullString `db:"key_id"`
	UserID   sql.NullString `db:"user_id"`
	Changed  sql.NullString `db:"changed"`
	Record   string         `db:"record"`
}

func versions(t *testing.T, q sqlx.QueryerContext, pg, id string) []version {
	t.Helper()
	var v []version
	if err := sqlx.SelectContext(context.Background(), q, &v, fmt.Sprintf(`SELECT record_id::text, entity, op, at::text, key_id, user_id, changed::text,
  (record - 'id')::text AS record FROM %s WHERE record_id = $1 ORDER BY id`, schema.QualifiedIdent(pg, schema.HistoryTable)), id); err != nil {
		t.Fatal(err)
	}
	return v
}

// A create of an entity with history writes its first version in its own
// statement, and that version is the one the trigger writes for the same
// row: the same columns, record, time and actor, once. Checked in one
// transaction (so now() is the same for both): the trigger's path is a raw
// INSERT with the actor set as DDS sets it, the statement's path is the
// very statement Create runs.
func TestHistoryCreateInItsStatementIsTheTriggersVersion(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "hist", Entities: []schema.Entity{historyEntity()}})
	p := records.SystemPrincipal(tenant)
	p.KeyID, p.UserID = "key-1", "user-1"
	s := records.NewStore(d, schemas, nil)
	sc, err := s.Scope(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	pg := sc.Schema.PgSchema
	e, _ := sc.Schema.Def.Entity("Doc")

	// Through Create: one version, with its actor.
	out, err := s.Create(ctx, sc, "Doc", historyInput())
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ ID string }
	_ = json.Unmarshal(out, &rec)
	if v := versions(t, d, pg, rec.ID); len(v) != 1 || v[0].Op != "create" || v[0].KeyID.String != "key-1" ||
		v[0].UserID.String != "user-1" || v[0].Changed.Valid {
		t.Fatalf("a create's versions: %+v, want one create by key-1 for user-1", v)
	}

	// The same row both ways in one transaction.
	row, errs := records.Prepare(e, historyInput(), records.Create)
	if err := apperr.Fields(errs); err != nil {
		t.Fatal(err)
	}
	actor := `{"keyId":"key-1","userId":"user-1"}`
	tx := d.MustBeginTx(ctx, nil)
	defer tx.Rollback() //nolint:errcheck // rolled back when the test fails early
	byTrigger, byStatement := uuid.NewString(), uuid.NewString()
	cols, vals := []string{`"id"`}, []string{"$1::uuid"}
	for i, f := range row.Fields {
		cols = append(cols, schema.Ident(f.Name))
		vals = append(vals, fmt.Sprintf("$%d::%s", i+2, schema.ColumnType(f)))
	}
	tx.MustExecContext(ctx, `SELECT set_config($1, $2, true)`, schema.HistoryActorSetting, actor)
	tx.MustExecContext(ctx, fmt.Sprintf(`INSERT INTO %s (%s) VALUES (%s)`, schema.QualifiedIdent(pg, "Doc"), strings.Join(cols, ", "), strings.Join(vals, ", ")),
		append([]any{byTrigger}, row.Values...)...)
	var a query.Args
	q := records.CreateSQL(sc, e, row.Fields, &a)
	if !strings.Contains(q, schema.QualifiedIdent(pg, schema.HistoryTable)) {
		t.Fatalf("the create statement of a history entity does not write its version:\n%s", q)
	}
	o := sc.Origin()
	args := append([]any{byStatement, outbox.NewEventID()}, row.Values...)
	args = append(args, o.TenantID, o.SchemaID, o.SchemaName, outbox.EntityCreated, "Doc", actor, "Doc")
	if len(args) != len(a.List()) {
		t.Fatalf("%d values for %d placeholders", len(args), len(a.List()))
	}
	// A new session's setting would be unset; clear the actor so only the
	// statement's own value can name the writer.
	tx.MustExecContext(ctx, `SELECT set_config($1, '', true)`, schema.HistoryActorSetting)
	tx.MustExecContext(ctx, q, args...)
	vt, vs := versions(t, tx, pg, byTrigger), versions(t, tx, pg, byStatement)
	if len(vt) != 1 || len(vs) != 1 {
		t.Fatalf("versions: by the trigger %+v, by the statement %+v; want one each", vt, vs)
	}
	vt[0].RecordID, vs[0].RecordID = "", ""
	if vt[0] != vs[0] {
		t.Fatalf("the statement's version differs from the trigger's:\ntrigger   %+v\nstatement %+v", vt[0], vs[0])
	}
	for _, want := range []string{`"emb": "[0.1,-2.5,3]"`, `"tags": ["a", "b,c"]`, `"deletedAt": null`, `"createdAt": `} {
		if !strings.Contains(vs[0].Record, want) {
			t.Errorf("version record %s lacks %s", vs[0].Record, want)
		}
	}
	if strings.Contains(vs[0].Record, "_search") {
		t.Errorf("version record holds the full-text column: %s", vs[0].Record)
	}
}

// Only the create's own row is skipped by the trigger: in the same
// transaction another insert, an update and a delete are recorded, and so
// is the same id inserted again after its delete; another session's raw
// insert is recorded while the create's transaction is open.
func TestHistoryTriggerSkipsOnlyTheCreatesOwnRow(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "hist", Entities: []schema.Entity{{Name: "Doc", History: true, Fields: []schema.Field{
		{Name: "title", Type: schema.String},
	}}}})
	p := records.SystemPrincipal(tenant)
	p.KeyID = "key-2"
	s := records.NewStore(d, schemas, nil)
	sc, err := s.Scope(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	pg := sc.Schema.PgSchema
	table := schema.QualifiedIdent(pg, "Doc")
	e, _ := sc.Schema.Def.Entity("Doc")
	row, _ := records.Prepare(e, map[string]any{"title": "x"}, records.Create)
	var a query.Args
	q := records.CreateSQL(sc, e, row.Fields, &a)
	o := sc.Origin()

	tx := d.MustBeginTx(ctx, nil)
	defer tx.Rollback() //nolint:errcheck // committed below
	own, other, fromElsewhere := uuid.NewString(), uuid.NewString(), uuid.NewString()
	tx.MustExecContext(ctx, q, own, outbox.NewEventID(), "x", o.TenantID, o.SchemaID, o.SchemaName, outbox.EntityCreated, "Doc", `{"keyId":"key-2"}`, "Doc")
	// Another session, while the create's transaction is open.
	d.MustExecContext(ctx, `INSERT INTO `+table+` ("id", "title") VALUES ($1, 'raw')`, fromElsewhere)
	// The same transaction: another insert, an update and a delete of the
	// created record, and its id inserted again.
	tx.MustExecContext(ctx, `INSERT INTO `+table+` ("id", "title") VALUES ($1, 'raw')`, other)
	tx.MustExecContext(ctx, `UPDATE `+table+` SET "title" = 'y' WHERE "id" = $1`, own)
	tx.MustExecContext(ctx, `DELETE FROM `+table+` WHERE "id" = $1`, own)
	tx.MustExecContext(ctx, `INSERT INTO `+table+` ("id", "title") VALUES ($1, 'again')`, own)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	ops := func(id string) string {
		var o []string
		for _, v := range versions(t, d, pg, id) {
			o = append(o, v.Op)
		}
		return strings.Join(o, ",")
	}
	for id, want := range map[string]string{own: "create,update,delete,create", other: "create", fromElsewhere: "create"} {
		if got := ops(id); got != want {
			t.Errorf("versions of %s: %s, want %s", id, got, want)
		}
	}

	// Through the store: update and delete of a record Create made.
	out, err := s.Create(ctx, sc, "Doc", map[string]any{"title": "one"})
	if err != nil {
		t.Fatal(err)
	}
	var rec struct{ ID string }
	_ = json.Unmarshal(out, &rec)
	if _, err := s.Update(ctx, sc, "Doc", rec.ID, map[string]any{"title": "two"}, records.Patch); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, sc, "Doc", rec.ID); err != nil {
		t.Fatal(err)
	}
	if got := ops(rec.ID); got != "create,update,delete" {
		t.Errorf("versions through the store: %s, want create,update,delete", got)
	}
	for _, v := range versions(t, d, pg, rec.ID) {
		if v.KeyID.String != "key-2" {
			t.Errorf("version %s without its writer: %+v", v.Op, v)
		}
	}
}

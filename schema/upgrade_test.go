package schema_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

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
	info, err := schema.NewService(d).Create(ctx, tenant, &schema.Definition{Name: "links",
		Entities:      []schema.Entity{{Name: "Doc", Fields: []schema.Field{{Name: "title", Type: schema.String}}}},
		Relationships: []schema.Relationship{{Name: "CITES", From: "Doc", To: "Doc"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	pg := schema.PgSchemaName(info.ID)
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

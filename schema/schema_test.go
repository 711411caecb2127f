package schema

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/jmoiron/sqlx"
	_ "github.com/lib/pq"
)

var update = flag.Bool("update", false, "rewrite golden files")

const shopJSON = `{"name": "shop",
 "entities": [{"name": "Product", "fields": [
   {"name": "name", "type": "STRING", "required": true, "searchable": true},
   {"name": "price", "type": "NUMBER"},
   {"name": "stock", "type": "INTEGER", "default": 0},
   {"name": "active", "type": "BOOLEAN"},
   {"name": "tags", "type": "STRING", "list": true},
   {"name": "releasedAt", "type": "TIMESTAMP"},
   {"name": "attributes", "type": "JSON"},
   {"name": "status", "type": "ENUM", "values": ["draft", "live"]},
   {"name": "manual", "type": "FILE"},
   {"name": "embedding", "type": "VECTOR", "vectorDimensions": 384}]},
  {"name": "Category", "fields": [{"name": "name", "type": "STRING", "unique": true}]}],
 "relationships": [{"name": "IN_CATEGORY", "from": "Product", "to": "Category",
   "fromField": "categories", "toField": "products",
   "properties": [{"name": "position", "type": "INTEGER"}]}]}`

func shop(t testing.TB) *Definition {
	var d Definition
	dec := json.NewDecoder(strings.NewReader(shopJSON))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	return &d
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./schema -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended):\n%s", name, got)
	}
}

func render(p Plan) string {
	var b strings.Builder
	for _, s := range p.Steps {
		mark := ""
		if s.Destructive {
			mark = " [DESTRUCTIVE]"
		}
		b.WriteString("-- " + s.Description + mark + "\n" + s.SQL + ";\n")
	}
	return b.String()
}

func TestCreateDDLGolden(t *testing.T) {
	d := shop(t)
	if err := Validate(d); err != nil {
		t.Fatalf("shop schema invalid: %v", err.Details)
	}
	p, problems := Diff("s_test", nil, d)
	if len(problems) > 0 || len(p.Destructive()) > 0 {
		t.Fatalf("create plan: problems %v, destructive %v", problems, p.Destructive())
	}
	golden(t, "shop_create.sql", render(p))
}

func TestEvolveDDLGolden(t *testing.T) {
	old, next := shop(t), shop(t)
	p := &next.Entities[0]
	p.Fields = append(p.Fields[:1], p.Fields[2:]...)                                                             // drop price
	p.Fields = append(p.Fields, Field{Name: "sku", Type: String, Unique: true})                                  // add unique
	p.Fields = append(p.Fields, Field{Name: "rating", Type: Integer, Required: true, Default: json.Number("3")}) // required with default
	p.Fields[0].Searchable = false                                                                               // search column goes
	next.Relationships = nil                                                                                     // drop relationship
	plan, problems := Diff("s_test", old, next)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	if n := len(plan.Destructive()); n != 2 {
		t.Errorf("want 2 destructive steps (drop price, drop IN_CATEGORY), got %d: %s", n, render(plan))
	}
	golden(t, "shop_evolve.sql", render(plan))

	bad := shop(t)
	bad.Entities[0].Fields = append(bad.Entities[0].Fields, Field{Name: "mandatory", Type: String, Required: true})
	if _, problems := Diff("s_test", old, bad); len(problems) != 1 || !strings.Contains(problems[0], "needs a default") {
		t.Errorf("a new required field without default must be refused, got %v", problems)
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(d *Definition)
		field  string
	}{
		{"bad schema name", func(d *Definition) { d.Name = "1shop" }, "name"},
		{"lower-case entity", func(d *Definition) { d.Entities[0].Name = "product" }, "entities[0].name"},
		{"sql in entity name", func(d *Definition) { d.Entities[0].Name = `P"; DROP TABLE x; --` }, "entities[0].name"},
		{"duplicate entity", func(d *Definition) { d.Entities[1].Name = "PRODUCT" }, "entities[1].name"},
		{"reserved field", func(d *Definition) { d.Entities[0].Fields[0].Name = "createdAt" }, "entities[0].fields[0].name"},
		{"reserved id", func(d *Definition) { d.Entities[0].Fields[0].Name = "ID" }, "entities[0].fields[0].name"},
		{"sql in field name", func(d *Definition) { d.Entities[0].Fields[1].Name = `price" text); --` }, "entities[0].fields[1].name"},
		{"unknown type", func(d *Definition) { d.Entities[0].Fields[1].Type = "MONEY" }, "entities[0].fields[1].type"},
		{"duplicate field", func(d *Definition) { d.Entities[0].Fields[1].Name = "NAME" }, "entities[0].fields[1].name"},
		{"enum without values", func(d *Definition) { d.Entities[0].Fields[7].Values = nil }, "entities[0].fields[7].values"},
		{"enum value with quote", func(d *Definition) { d.Entities[0].Fields[7].Values = []string{"it's"} }, "entities[0].fields[7].values[0]"},
		{"vector too large", func(d *Definition) { d.Entities[0].Fields[9].VectorDimensions = 16001 }, "entities[0].fields[9].vectorDimensions"},
		{"vector zero", func(d *Definition) { d.Entities[0].Fields[9].VectorDimensions = 0 }, "entities[0].fields[9].vectorDimensions"},
		{"dims on string", func(d *Definition) { d.Entities[0].Fields[0].VectorDimensions = 3 }, "entities[0].fields[0].vectorDimensions"},
		{"list vector", func(d *Definition) { d.Entities[0].Fields[9].List = true }, "entities[0].fields[9].list"},
		{"searchable number", func(d *Definition) { d.Entities[0].Fields[1].Searchable = true }, "entities[0].fields[1].searchable"},
		{"bad default", func(d *Definition) { d.Entities[0].Fields[2].Default = "many" }, "entities[0].fields[2].default"},
		{"relationship to nowhere", func(d *Definition) { d.Relationships[0].To = "Nope" }, "relationships[0].to"},
		{"relationship named like entity", func(d *Definition) { d.Relationships[0].Name = "product" }, "relationships[0].name"},
		{"fromField clashes with field", func(d *Definition) { d.Relationships[0].FromField = "tags" }, "relationships[0].fromField"},
		{"vector property", func(d *Definition) { d.Relationships[0].Properties[0].Type = Vector }, "relationships[0].properties[0].type"},
		{"no entities", func(d *Definition) { d.Entities = nil; d.Relationships = nil }, "entities"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := shop(t)
			c.mutate(d)
			err := Validate(d)
			if err == nil {
				t.Fatal("accepted an invalid definition")
			}
			for _, fe := range err.Details {
				if fe.Field == c.field {
					return
				}
			}
			t.Fatalf("no error for %s; got %+v", c.field, err.Details)
		})
	}
}

var quotedIdent = regexp.MustCompile(`"[^"]*"`)

// FuzzEntityAndFieldNames feeds names through validation; whatever is
// accepted must produce DDL in which every identifier is one quoted, valid
// name — and, with a database, DDL that Postgres executes.
func FuzzEntityAndFieldNames(f *testing.F) {
	for _, s := range [][2]string{{"Product", "name"}, {"P", "x"}, {`A"b`, "c"}, {"Order", "select"}, {"Table", "from"}, {"X;DROP", "y"}, {"Ünï", "ü"}, {"A" + strings.Repeat("b", 62), "c"}, {"User", "group"}} {
		f.Add(s[0], s[1])
	}
	var db *sqlx.DB
	if url := os.Getenv("DATABASE_URL"); url != "" {
		var err error
		if db, err = sqlx.Open("postgres", url); err != nil {
			f.Fatal(err)
		}
		defer db.Close()
	}
	f.Fuzz(func(t *testing.T, entity, field string) {
		d := &Definition{Name: "fuzz", Entities: []Entity{{Name: entity, Fields: []Field{
			{Name: field, Type: String, Searchable: true, Unique: true},
			{Name: field + "_v", Type: Vector, VectorDimensions: 2},
		}}}}
		if Validate(d) != nil {
			return
		}
		plan, _ := Diff("s_fuzz", nil, d)
		for _, st := range plan.Steps {
			for _, q := range quotedIdent.FindAllString(st.SQL, -1) {
				name := strings.Trim(q, `"`)
				if !ValidIdent(name) && name != ColSearch && !strings.HasPrefix(name, "ix_") && name != "s_fuzz" {
					t.Fatalf("DDL carries an unvalidated identifier %q: %s", q, st.SQL)
				}
			}
		}
		if db == nil {
			return
		}
		tx, err := db.Beginx()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, st := range plan.Steps {
			if _, err := tx.ExecContext(context.Background(), st.SQL); err != nil {
				t.Fatalf("Postgres refused DDL for entity %q field %q: %v\n%s", entity, field, err, st.SQL)
			}
		}
	})
}

// FuzzIdent keeps the hand-written identifier check equal to the regexp
// that documents it.
func FuzzIdent(f *testing.F) {
	for _, s := range []string{"a", "A_1", "_a", "1a", "", "a-b", "ä", strings.Repeat("a", 63), strings.Repeat("a", 64), "a\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if isIdent(s) != identRe.MatchString(s) {
			t.Fatalf("isIdent(%q) = %v, regexp says %v", s, isIdent(s), identRe.MatchString(s))
		}
	})
}

// Turning history on for an existing entity, then off: the history table,
// the trigger function, and the two triggers (updates and deletes; creates
// but for the row whose own statement wrote its version).
func TestHistoryDDLGolden(t *testing.T) {
	old, on := shop(t), shop(t)
	on.Entities[1].History = true
	plan, problems := Diff("s_test", old, on)
	if len(problems) > 0 || len(plan.Destructive()) > 0 {
		t.Fatalf("history on: problems %v, destructive %v", problems, plan.Destructive())
	}
	off, problems := Diff("s_test", on, old)
	if len(problems) > 0 || len(off.Destructive()) != 1 {
		t.Fatalf("history off: problems %v, want one destructive step: %s", problems, render(off))
	}
	golden(t, "shop_history.sql", "-- ON\n"+render(plan)+"-- OFF\n"+render(off))
}

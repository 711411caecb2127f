package schema

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Step is one DDL statement of a migration plan.
type Step struct {
	SQL         string `json:"sql"`
	Description string `json:"description"`
	// Destructive steps drop data; they are only applied with allowDataLoss.
	Destructive bool `json:"destructive"`
}

// Plan is the ordered DDL that takes a pg schema from one definition to
// another. A nil old definition means "create from nothing".
type Plan struct {
	Steps []Step `json:"steps"`
}

// Destructive lists the steps that lose data.
func (p Plan) Destructive() []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Destructive {
			out = append(out, s)
		}
	}
	return out
}

// PgSchemaName is the Postgres schema holding a DDS schema's data.
func PgSchemaName(schemaID string) string {
	return "s_" + strings.ReplaceAll(schemaID, "-", "")
}

// Diff computes the plan from old (nil for a new schema) to new, both valid.
// It returns a validation error for changes that cannot be applied at all
// (a new required field without a default on an existing entity).
func Diff(pg string, old, new *Definition) (Plan, []string) {
	var p Plan
	var problems []string
	add := func(destructive bool, desc, format string, args ...any) {
		p.Steps = append(p.Steps, Step{SQL: fmt.Sprintf(format, args...), Description: desc, Destructive: destructive})
	}
	if old == nil {
		old = &Definition{}
		add(false, "create the data schema", "CREATE SCHEMA IF NOT EXISTS %s", Ident(pg))
	}
	// Relationships whose table must go (removed, or endpoints changed) are
	// dropped before entities; new ones are created after.
	newRels := map[string]*Relationship{}
	for i := range new.Relationships {
		newRels[new.Relationships[i].Name] = &new.Relationships[i]
	}
	for i := range old.Relationships {
		or := &old.Relationships[i]
		nr, keep := newRels[or.Name]
		if !keep || nr.From != or.From || nr.To != or.To {
			add(true, fmt.Sprintf("drop relationship %s and its edges", or.Name), "DROP TABLE %s", QualifiedIdent(pg, RelTable(or)))
		}
	}
	for i := range old.Entities {
		oe := &old.Entities[i]
		if _, keep := new.Entity(oe.Name); !keep {
			add(true, fmt.Sprintf("drop entity %s and its records", oe.Name), "DROP TABLE %s CASCADE", QualifiedIdent(pg, oe.Name))
			if oe.History {
				p.Steps = append(p.Steps, dropHistory(pg, oe, "drop the history of entity "+oe.Name))
			}
		}
	}
	for i := range new.Entities {
		ne := &new.Entities[i]
		oe, exists := old.Entity(ne.Name)
		if !exists {
			p.Steps = append(p.Steps, createEntity(pg, ne)...)
			continue
		}
		steps, probs := alterEntity(pg, oe, ne)
		p.Steps = append(p.Steps, steps...)
		problems = append(problems, probs...)
	}
	for i := range new.Relationships {
		nr := &new.Relationships[i]
		or, existed := old.Relationship(nr.Name)
		if existed && or.From == nr.From && or.To == nr.To {
			continue
		}
		p.Steps = append(p.Steps, createRelationship(pg, nr)...)
	}
	return p, problems
}

func tableSQL(pg, table string) string { return QualifiedIdent(pg, table) }

// indexName is deterministic so a later plan can drop what an earlier made.
func indexName(table, field, kind string) string {
	h := sha1.Sum([]byte(table + "\x00" + field + "\x00" + kind))
	return "ix_" + kind + "_" + hex.EncodeToString(h[:8])
}

func createEntity(pg string, e *Entity) []Step {
	cols := []string{
		`"id" uuid PRIMARY KEY`,
		`"createdAt" timestamptz NOT NULL DEFAULT now()`,
		`"updatedAt" timestamptz NOT NULL DEFAULT now()`,
	}
	if e.SoftDelete {
		cols = append(cols, Ident(ColDeletedAt)+" timestamptz")
	}
	for i := range e.Fields {
		cols = append(cols, columnDef(&e.Fields[i]))
	}
	if s := searchColumn(e); s != "" {
		cols = append(cols, s)
	}
	steps := []Step{{
		SQL:         fmt.Sprintf("CREATE TABLE %s (\n  %s\n)", tableSQL(pg, e.Name), strings.Join(cols, ",\n  ")),
		Description: "create entity " + e.Name,
	}}
	steps = append(steps, Step{
		SQL:         fmt.Sprintf("CREATE INDEX %s ON %s (\"createdAt\", \"id\")", Ident(indexName(e.Name, ColCreatedAt, "bt")), tableSQL(pg, e.Name)),
		Description: "index " + e.Name + ".createdAt",
	})
	for i := range e.Fields {
		steps = append(steps, fieldIndexes(pg, e.Name, &e.Fields[i])...)
	}
	if len(e.SearchableFields()) > 0 {
		steps = append(steps, searchIndex(pg, e.Name))
	}
	return append(steps, lifecycleSteps(pg, nil, e)...)
}

func columnDef(f *Field) string {
	s := Ident(f.Name) + " " + ColumnType(f)
	if f.Default != nil {
		s += " DEFAULT " + Literal(f, f.Default)
	}
	if f.Required {
		s += " NOT NULL"
	}
	return s
}

// searchColumn is the generated tsvector over the searchable fields.
func searchColumn(e *Entity) string {
	fs := e.SearchableFields()
	if len(fs) == 0 {
		return ""
	}
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = fmt.Sprintf("coalesce(%s, '')", Ident(f.Name))
	}
	return fmt.Sprintf(`%s tsvector GENERATED ALWAYS AS (to_tsvector('english'::regconfig, %s)) STORED`,
		Ident(ColSearch), strings.Join(parts, " || ' ' || "))
}

func searchIndex(pg, table string) Step {
	return Step{
		SQL:         fmt.Sprintf("CREATE INDEX %s ON %s USING gin (%s)", Ident(indexName(table, ColSearch, "gin")), tableSQL(pg, table), Ident(ColSearch)),
		Description: "full-text index on " + table,
	}
}

// fieldIndexes are the indexes a field implies: unique, btree (indexed:
// keyed by the field then id, see pagedIndexKind; a FILE field's plain),
// GIN (lists, indexed JSON), HNSW cosine (vectors within pgvector's limit).
func fieldIndexes(pg, table string, f *Field) []Step {
	return fieldIndexesHow(pg, table, f, "")
}

// pagedIndexKind names the btree index of an indexed scalar field, on
// (field, id): an equality on the field (a filter, or a row rule such as
// ownerId = $user.id) then selects its rows already in the default list
// order (id, a UUIDv7, so creation order), and a page is the first rows
// of one index range, forwards or backwards, from a cursor on id
// included, instead of every matching row sorted, or the whole table
// walked in id order and filtered. An order by the field itself (then
// id, the tie breaker) is the index's order too. Earlier versions indexed
// the field alone ("bt"); Upgrade replaces those.
const pagedIndexKind = "btid"

// PagedIndex reports whether f's index is the (field, id) one of
// pagedIndexKind: an indexed scalar field's that is neither unique (its
// own unique index) nor a FILE (a file id names one or a few records: no
// page to serve). The DDL, Upgrade and the compiler's rule walk
// (query/rulewalk.go) all decide by it.
func (f *Field) PagedIndex() bool {
	return f.Indexed && !f.Unique && !f.List && f.Type != Vector && f.Type != JSON && f.Type != File
}

// fieldIndexesHow is fieldIndexes with how between CREATE INDEX and the
// name: "" or "CONCURRENTLY IF NOT EXISTS " (Upgrade).
func fieldIndexesHow(pg, table string, f *Field, how string) []Step {
	var out []Step
	idx := func(kind, method, expr string, unique bool) {
		u := ""
		if unique {
			u = "UNIQUE "
		}
		desc := fmt.Sprintf("%s index on %s.%s", kind, table, f.Name)
		if kind == pagedIndexKind {
			desc = fmt.Sprintf("index %s by %s then id (equality filters and row rules on %s, paged in list order)", table, f.Name, f.Name)
		}
		out = append(out, Step{
			SQL:         fmt.Sprintf("CREATE %sINDEX %s%s ON %s %s(%s)", u, how, Ident(indexName(table, f.Name, kind)), tableSQL(pg, table), method, expr),
			Description: desc,
		})
	}
	col := Ident(f.Name)
	switch {
	case f.Type == Vector:
		if f.VectorDimensions <= MaxHNSWDimensions {
			idx("hnsw", "USING hnsw ", col+" vector_cosine_ops", false)
		}
	case f.List:
		idx("gin", "USING gin ", col, false)
	case f.Type == JSON && f.Indexed:
		idx("gin", "USING gin ", col+" jsonb_path_ops", false)
	default:
		switch {
		case f.Unique:
			idx("uq", "", col, true)
		case f.PagedIndex():
			idx(pagedIndexKind, "", col+", "+Ident(ColID), false)
		case f.Indexed || f.Type == File:
			idx("bt", "", col, false)
		}
	}
	return out
}

func dropFieldIndexes(pg, table string, f *Field) []Step {
	var out []Step
	for _, s := range fieldIndexes(pg, table, f) {
		name := s.SQL[strings.Index(s.SQL, `"ix_`):]
		name = name[:strings.Index(name[1:], `"`)+2]
		if !strings.Contains(name, "_"+pagedIndexKind+"_") {
			out = append(out, Step{SQL: fmt.Sprintf("DROP INDEX %s.%s", Ident(pg), name), Description: "drop " + s.Description})
			continue
		}
		// The table may still hold the field's index of an earlier version
		// (Upgrade not run yet) instead of this one.
		out = append(out,
			Step{SQL: fmt.Sprintf("DROP INDEX IF EXISTS %s.%s", Ident(pg), name), Description: "drop " + s.Description},
			Step{SQL: fmt.Sprintf("DROP INDEX IF EXISTS %s.%s", Ident(pg), Ident(indexName(table, f.Name, "bt"))), Description: fmt.Sprintf("drop the index on %s.%s an earlier version made", table, f.Name)})
	}
	return out
}

func alterEntity(pg string, oe, ne *Entity) ([]Step, []string) {
	var steps []Step
	var problems []string
	t := tableSQL(pg, ne.Name)
	searchChanged := !sameSearch(oe, ne)
	if searchChanged && len(oe.SearchableFields()) > 0 {
		steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t, Ident(ColSearch)), Description: "rebuild full-text column of " + ne.Name})
	}
	for i := range oe.Fields {
		of := &oe.Fields[i]
		nf, keep := ne.Field(of.Name)
		if !keep {
			steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t, Ident(of.Name)), Description: fmt.Sprintf("drop field %s.%s and its values", ne.Name, of.Name), Destructive: true})
			continue
		}
		if ColumnType(of) != ColumnType(nf) {
			steps = append(steps,
				Step{SQL: fmt.Sprintf("ALTER TABLE %s DROP COLUMN %s", t, Ident(of.Name)), Description: fmt.Sprintf("change type of %s.%s from %s to %s (values are dropped)", ne.Name, of.Name, ColumnType(of), ColumnType(nf)), Destructive: true},
				Step{SQL: fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", t, columnDef(nf)), Description: fmt.Sprintf("add field %s.%s", ne.Name, nf.Name)})
			if nf.Required && nf.Default == nil {
				problems = append(problems, fmt.Sprintf("%s.%s: a required field whose type changes needs a default", ne.Name, nf.Name))
			}
			steps = append(steps, fieldIndexes(pg, ne.Name, nf)...)
			continue
		}
		if !reflect.DeepEqual(fieldIndexes(pg, ne.Name, of), fieldIndexes(pg, ne.Name, nf)) {
			steps = append(steps, dropFieldIndexes(pg, ne.Name, of)...)
			steps = append(steps, fieldIndexes(pg, ne.Name, nf)...)
		}
		if !reflect.DeepEqual(of.Default, nf.Default) {
			if nf.Default == nil {
				steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", t, Ident(nf.Name)), Description: fmt.Sprintf("drop default of %s.%s", ne.Name, nf.Name)})
			} else {
				steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET DEFAULT %s", t, Ident(nf.Name), Literal(nf, nf.Default)), Description: fmt.Sprintf("set default of %s.%s", ne.Name, nf.Name)})
			}
		}
		if of.Required != nf.Required {
			if nf.Required {
				if nf.Default != nil {
					steps = append(steps, Step{SQL: fmt.Sprintf("UPDATE %s SET %s = %s WHERE %s IS NULL", t, Ident(nf.Name), Literal(nf, nf.Default), Ident(nf.Name)), Description: fmt.Sprintf("fill empty %s.%s with its default", ne.Name, nf.Name)})
				}
				steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s SET NOT NULL", t, Ident(nf.Name)), Description: fmt.Sprintf("make %s.%s required", ne.Name, nf.Name)})
			} else {
				steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", t, Ident(nf.Name)), Description: fmt.Sprintf("make %s.%s optional", ne.Name, nf.Name)})
			}
		}
	}
	for i := range ne.Fields {
		nf := &ne.Fields[i]
		if _, existed := oe.Field(nf.Name); existed {
			continue
		}
		if nf.Required && nf.Default == nil {
			problems = append(problems, fmt.Sprintf("%s.%s: a new required field on an existing entity needs a default", ne.Name, nf.Name))
		}
		steps = append(steps, Step{SQL: fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", t, columnDef(nf)), Description: fmt.Sprintf("add field %s.%s", ne.Name, nf.Name)})
		steps = append(steps, fieldIndexes(pg, ne.Name, nf)...)
	}
	if searchChanged && len(ne.SearchableFields()) > 0 {
		steps = append(steps,
			Step{SQL: fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s", t, searchColumn(ne)), Description: "full-text column of " + ne.Name},
			searchIndex(pg, ne.Name))
	}
	return append(steps, lifecycleSteps(pg, oe, ne)...), problems
}

func sameSearch(a, b *Entity) bool {
	x, y := a.SearchableFields(), b.SearchableFields()
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if x[i].Name != y[i].Name {
			return false
		}
	}
	return true
}

func createRelationship(pg string, r *Relationship) []Step {
	t := tableSQL(pg, RelTable(r))
	return append([]Step{
		{SQL: fmt.Sprintf(`CREATE TABLE %s (
  "id" uuid PRIMARY KEY,
  "source_id" uuid NOT NULL REFERENCES %s ("id") ON DELETE CASCADE,
  "target_id" uuid NOT NULL REFERENCES %s ("id") ON DELETE CASCADE,
  "properties" jsonb NOT NULL DEFAULT '{}',
  "created_at" timestamptz NOT NULL DEFAULT now()
)`, t, tableSQL(pg, r.From), tableSQL(pg, r.To)), Description: "create relationship " + r.Name},
		{SQL: fmt.Sprintf(`CREATE INDEX %s ON %s ("source_id", "target_id")`, Ident(indexName(r.Name, "source", "bt")), t), Description: "index " + r.Name + " by source"},
		{SQL: fmt.Sprintf(`CREATE INDEX %s ON %s ("target_id", "source_id")`, Ident(indexName(r.Name, "target", "bt")), t), Description: "index " + r.Name + " by target"},
	}, orderIndexes(pg, r, "")...)
}

// orderIndexes index a relationship's edges per end in their default order
// (creation, then id), so a page of one record's edges is the first rows
// of an index scan rather than a sort of all of them. how is "" or
// "CONCURRENTLY IF NOT EXISTS " (Upgrade).
func orderIndexes(pg string, r *Relationship, how string) []Step {
	var out []Step
	for _, end := range []string{"source", "target"} {
		out = append(out, Step{
			SQL: fmt.Sprintf(`CREATE INDEX %s%s ON %s ("%s_id", "created_at", "id")`,
				how, Ident(orderIndexName(r, end)), tableSQL(pg, RelTable(r)), end),
			Description: "index " + r.Name + " by " + end + " in creation order",
		})
	}
	return out
}

func orderIndexName(r *Relationship, end string) string { return indexName(r.Name, end+"_order", "bt") }

// Literal renders a validated default as a SQL literal of the column type.
// Only scalar, non-list, non-vector fields have defaults (Validate).
func Literal(f *Field, v any) string {
	c, err := CoerceValue(f, v)
	if err != nil {
		panic("schema.Literal: unvalidated default: " + err.Error())
	}
	switch x := c.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case time.Time:
		return quote(x.Format(time.RFC3339Nano)) + "::timestamptz"
	case string:
		if f.Type == JSON {
			return quote(x) + "::jsonb"
		}
		if f.Type == Date {
			return quote(x) + "::date"
		}
		return quote(x)
	}
	b, _ := json.Marshal(c)
	return quote(string(b))
}

// quote renders a SQL string literal (standard_conforming_strings is on in
// every supported Postgres; NUL bytes were refused by CoerceValue).
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// UniqueIndexName is the name of the unique index of a unique field, so a
// unique violation can be traced back to the field.
func UniqueIndexName(table, field string) string { return indexName(table, field, "uq") }

// FieldIndexNames are the names every index of a field of table may have
// (unique, btree by the field then id, btree of the field alone, GIN,
// HNSW), for naming the field in Postgres' errors.
func FieldIndexNames(table, field string) []string {
	return []string{indexName(table, field, "uq"), indexName(table, field, pagedIndexKind), indexName(table, field, "bt"), indexName(table, field, "gin"), indexName(table, field, "hnsw")}
}

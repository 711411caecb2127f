package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Bulk writes are the statements of batch jobs on tenant tables: the count
// and the update or delete of every record matching a filter, and the
// insert of an import's staged rows with the checks that need all of them.
// Package jobs owns the job, its staging table and the orchestration; it
// hands records plans (a filter, the fields to set, the staging table) and
// its transaction, so a job's write commits with its bookkeeping.

// CheckWhere reports whether where is a valid filter on entity's records
// (a bad one is a VALIDATION_ERROR naming it).
func (sc *Scope) CheckWhere(entity string, where query.Filter) error {
	var a query.Args
	_, err := sc.compiler.Where(entity, where, "t", "where", &a)
	return err
}

// CountWhere counts entity's records matching where.
func (s *Store) CountWhere(ctx context.Context, sc *Scope, entity string, where query.Filter) (int64, error) {
	var a query.Args
	w, err := sc.compiler.Where(entity, where, "t", "where", &a)
	if err != nil {
		return 0, err
	}
	var n int64
	w = andLive(andLive(w, sc.compiler.Live(entity, "t")), sc.compiler.ReadRule(entity, "t", &a)) // hidden records are not counted
	if err := s.db.GetContext(ctx, &n, fmt.Sprintf(`SELECT count(*) FROM %s t WHERE %s`, sc.compiler.Table(entity), w), sc.bind(a.List())...); err != nil {
		return 0, MapError(sc, entity, err)
	}
	return n, nil
}

// Written is what a bulk write wrote: how many records, and the span of
// the outbox events it inserted (see outbox.Range; First is NULL when it
// inserted none).
type Written struct {
	N     int64         `db:"n"`
	First sql.NullInt64 `db:"first_seq"`
	Last  sql.NullInt64 `db:"last_seq"`
	At    sql.NullTime  `db:"written_at"`
}

// UpdateWhere sets the fields of set (validated as a PATCH) on every
// record of entity matching where, in tx, in one statement, with one
// entity.updated event per record when events.
func (s *Store) UpdateWhere(ctx context.Context, tx *sqlx.Tx, sc *Scope, entity string, where query.Filter, set map[string]any, events bool) (Written, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return Written{}, err
	}
	var a query.Args
	w, err := sc.compiler.Where(e.Name, where, "t", "where", &a)
	if err != nil {
		return Written{}, err
	}
	ru, err := sc.bulkRules(e, "update", set, &a) // rulewrites.go
	if err != nil {
		return Written{}, err
	}
	w = andLive(w, ru.where)
	row, errs := Prepare(e, set, Patch)
	if err := apperr.Fields(errs); err != nil {
		return Written{}, err
	}
	sets := []string{`"updatedAt" = now()`}
	for i, f := range row.Fields {
		sets = append(sets, schema.Ident(f.Name)+" = "+a.Add(row.Values[i], schema.ColumnType(f)))
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	w = andLive(w, sc.compiler.Live(e.Name, "t"))
	if err := ru.returnCheck(sc, e, &ret, &a); err != nil {
		return Written{}, err
	}
	ctes := []string{"w AS (" + fmt.Sprintf(`UPDATE %s AS t SET %s WHERE %s RETURNING %s`, sc.compiler.Table(e.Name), strings.Join(sets, ", "), w, strings.Join(ret, ", ")) + ")"}
	if events {
		ctes = append(ctes, "e AS ("+outbox.InsertCTE(&a, sc.Origin(), outbox.EntityUpdated, e.Name, "w")+")")
	}
	return ru.written(ctx, tx, sc, e, "WITH "+strings.Join(ctes, ",\n"), events, a.List())
}

// DeleteWhere deletes every record of entity matching where, in tx, in one
// statement, with one entity.deleted event per record when events. The
// files the records held are marked deleted in the same statement (the
// worker's sweeper removes their objects).
func (s *Store) DeleteWhere(ctx context.Context, tx *sqlx.Tx, sc *Scope, entity string, where query.Filter, events bool) (Written, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return Written{}, err
	}
	var a query.Args
	w, err := sc.compiler.Where(e.Name, where, "t", "where", &a)
	if err != nil {
		return Written{}, err
	}
	ru, err := sc.bulkRules(e, "delete", nil, &a) // rulewrites.go
	if err != nil {
		return Written{}, err
	}
	w = andLive(w, ru.where)
	ret, _ := sc.compiler.Columns(e, nil, "t")
	write := fmt.Sprintf(`DELETE FROM %s AS t WHERE %s`, sc.compiler.Table(e.Name), w)
	if e.SoftDelete { // only marked: edges and files stay, for a restore
		write = fmt.Sprintf(`UPDATE %s AS t SET %s = now() WHERE %s`, sc.compiler.Table(e.Name), schema.Ident(schema.ColDeletedAt),
			andLive(w, sc.compiler.Live(e.Name, "t")))
	}
	ctes := []string{"w AS (" + write + " RETURNING " + strings.Join(ret, ", ") + ")"}
	if events {
		ctes = append(ctes, "e AS ("+outbox.InsertCTE(&a, sc.Origin(), outbox.EntityDeleted, e.Name, "w")+")")
	}
	if held := heldFileIDs(e, "w"); held != "" && !e.SoftDelete {
		ctes = append(ctes, fmt.Sprintf(`fx AS (UPDATE dds.files SET status = 'deleted', deleted_at = coalesce(deleted_at, now())
  WHERE tenant_id = %s AND status <> 'deleted' AND id IN (%s))`, a.Add(sc.TenantID, "uuid"), held))
	}
	return written(ctx, tx, sc, e.Name, "WITH "+strings.Join(ctes, ",\n"), events, a.List())
}

// InsertStaged inserts the rows staged in table stage, in "_line" order,
// in tx, in one statement, with one entity.created event per record when
// events. stage is a quoted, qualified table its owner made (package jobs),
// with a bigint "_line", a text "_id" (the record's id) and one text
// column per field of entity, each holding its column type's text form.
func (s *Store) InsertStaged(ctx context.Context, tx *sqlx.Tx, sc *Scope, entity, stage string, events bool) (Written, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return Written{}, err
	}
	var a query.Args
	ru, err := s.importRules(ctx, tx, sc, e, stage, &a) // rulewrites.go
	if err != nil {
		return Written{}, err
	}
	names := []string{`"id"`}
	sel := []string{`s."_id"::uuid`}
	for i := range e.Fields {
		names = append(names, schema.Ident(e.Fields[i].Name))
		if v, ok := ru.preset[e.Fields[i].Name]; ok {
			sel = append(sel, v)
			continue
		}
		sel = append(sel, "s."+schema.Ident(e.Fields[i].Name)+"::"+schema.ColumnType(&e.Fields[i]))
	}
	ret := []string{`t."id"`}
	if events {
		ret, _ = sc.compiler.Columns(e, nil, "t")
	}
	if err := ru.returnCheck(sc, e, &ret, &a); err != nil {
		return Written{}, err
	}
	with := fmt.Sprintf(`WITH w AS (INSERT INTO %s AS t (%s) SELECT %s FROM %s s ORDER BY s."_line" RETURNING %s)`,
		sc.compiler.Table(e.Name), strings.Join(names, ", "), strings.Join(sel, ", "), stage, strings.Join(ret, ", "))
	if events {
		with += ",\ne AS (" + outbox.InsertCTE(&a, sc.Origin(), outbox.EntityCreated, e.Name, "w") + ")"
	}
	return ru.written(ctx, tx, sc, e, with, events, a.List())
}

// written runs a write whose CTEs end with the records in w (and their
// events in e when events) and returns how many records it wrote and the
// span of its events.
func written(ctx context.Context, tx *sqlx.Tx, sc *Scope, entity, with string, events bool, args []any) (Written, error) {
	var r Written
	if e, _ := sc.compiler.Entity(entity); e != nil && e.History {
		// The job's transaction tells the history trigger who wrote.
		if _, err := tx.ExecContext(ctx, "SELECT set_config('"+schema.HistoryActorSetting+"', $1, true)", sc.actor()); err != nil {
			return Written{}, MapError(sc, entity, err)
		}
	}
	span := "NULL::bigint AS first_seq, NULL::bigint AS last_seq, NULL::timestamptz AS written_at"
	if events {
		span = outbox.Range
	}
	if err := tx.GetContext(ctx, &r, with+"\nSELECT count(*) AS n, "+span+" FROM w", sc.bind(args)...); err != nil {
		return Written{}, MapError(sc, entity, err)
	}
	return r, nil
}

// heldFileIDs is a query of the file ids held by the FILE fields of the
// records in src ("" when the entity has none).
func heldFileIDs(e *schema.Entity, src string) string {
	var parts []string
	for i := range e.Fields {
		f := &e.Fields[i]
		if f.Type != schema.File {
			continue
		}
		if f.List {
			parts = append(parts, fmt.Sprintf(`SELECT unnest(%s.%s) FROM %s`, src, schema.Ident(f.Name), src))
		} else {
			parts = append(parts, fmt.Sprintf(`SELECT %s.%s FROM %s`, src, schema.Ident(f.Name), src))
		}
	}
	return strings.Join(parts, " UNION ALL ")
}

// StagedProblem is a staged row that fails a check: its line, the item as
// staged, and why.
type StagedProblem struct {
	Line int64
	Item json.RawMessage
	Err  *apperr.Error
}

// CheckStaged runs the checks that need every staged row (see
// InsertStaged for stage), in SQL: unique values within the rows and
// against entity's stored records, and FILE values naming confirmed files
// of the tenant. Each check returns its first limit failing rows, in line
// order; more counts the failing rows beyond them.
func (s *Store) CheckStaged(ctx context.Context, sc *Scope, entity, stage string, limit int) (problems []StagedProblem, more int64, err error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, 0, err
	}
	item := `row_to_json(s)::jsonb - '_line' - '_id'`
	type check struct {
		field, msg, q string
		args          []any
	}
	var checks []check
	target := sc.compiler.Table(e.Name)
	for i := range e.Fields {
		f := &e.Fields[i]
		col := fmt.Sprintf("(%s::%s)", schema.Ident(f.Name), schema.ColumnType(f))    // in the staging table
		scol := fmt.Sprintf("(s.%s::%s)", schema.Ident(f.Name), schema.ColumnType(f)) // the same, of alias s
		if f.Unique && !f.List {
			checks = append(checks, check{f.Name, "must be unique: the same value is at index %d of the file",
				fmt.Sprintf(`SELECT s."_line", x.first, %s AS item, count(*) OVER () AS n FROM %s s
  JOIN (SELECT "_line", min("_line") OVER (PARTITION BY %s) AS first FROM %s WHERE %s IS NOT NULL) x ON x."_line" = s."_line"
  WHERE x."_line" <> x.first ORDER BY s."_line" LIMIT %d`, item, stage, col, stage, col, limit), nil})
			checks = append(checks, check{f.Name, fmt.Sprintf("must be unique: a %s with this value already exists", e.Name),
				fmt.Sprintf(`SELECT s."_line", 0 AS first, %s AS item, count(*) OVER () AS n FROM %s s
  WHERE EXISTS (SELECT 1 FROM %s t WHERE t.%s = %s) ORDER BY s."_line" LIMIT %d`, item, stage, target, schema.Ident(f.Name), scol, limit), nil})
		}
		if f.Type == schema.File {
			missing := `NOT EXISTS (SELECT 1 FROM dds.files fl WHERE fl.id = %s AND fl.tenant_id = $1 AND fl.status = 'confirmed')`
			cond := fmt.Sprintf("s.%s IS NOT NULL AND "+missing, schema.Ident(f.Name), scol)
			if f.List {
				cond = fmt.Sprintf("EXISTS (SELECT 1 FROM unnest%s u(v) WHERE "+missing+")", scol, "u.v")
			}
			checks = append(checks, check{f.Name, "file does not exist, is not confirmed, or belongs to another tenant",
				fmt.Sprintf(`SELECT s."_line", 0 AS first, %s AS item, count(*) OVER () AS n FROM %s s WHERE %s ORDER BY s."_line" LIMIT %d`,
					item, stage, cond, limit), []any{sc.TenantID}})
		}
	}
	for _, c := range checks {
		var rows []struct {
			Line  int64           `db:"_line"`
			First int64           `db:"first"`
			Item  json.RawMessage `db:"item"`
			N     int64           `db:"n"`
		}
		if err := sqlx.SelectContext(ctx, s.db, &rows, c.q, c.args...); err != nil {
			return nil, 0, fmt.Errorf("check staged rows: %w", err)
		}
		for _, r := range rows {
			msg := c.msg
			if strings.Contains(msg, "%d") {
				msg = fmt.Sprintf(msg, r.First)
			}
			code := apperr.Validation
			if strings.Contains(msg, "already exists") {
				code = apperr.Conflict
			}
			problems = append(problems, StagedProblem{Line: r.Line, Item: r.Item, Err: &apperr.Error{Code: code, Message: c.field + ": " + msg,
				Details: []apperr.FieldError{{Field: c.field, Message: msg}}}})
		}
		if len(rows) > 0 {
			more += rows[0].N - int64(len(rows))
		}
	}
	return problems, more, nil
}

package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Writes under end-user rules (docs/auth.md, "Rules"):
//
//   - create: the role's presets replace what the client sent, then the
//     created record must pass create.check: the INSERT selects its row
//     from the values WHERE the check holds, so a failing record is never
//     written (403 naming rules.<Entity>.create.check).
//   - update: only a record the principal can read AND that matches
//     update.where is updated (others are NOT_FOUND, as if absent); the
//     record after the update must pass update.check, tested in the
//     write's transaction, which rolls back on failure (403 naming
//     rules.<Entity>.update.check): a user cannot move ownerId away.
//   - delete: only a readable record matching delete is deleted (others
//     NOT_FOUND).
//   - fields.write: writing another field is 403 naming it.
//
// Answers of writes leave out the fields outside fields.read, as reads do.
// Batch updates and deletes apply the same rules per item, atomically
// (batchRules). Write paths not listed here (batch creates, upserts,
// nested and edge writes, restores, jobs' bulk writes) refuse a principal
// under rules on the entity (refuseRuled) rather than write unchecked.

// ruleDenied is the FORBIDDEN error of a failed check.
func ruleDenied(entity, rule string) error {
	name := "rules." + entity + "." + rule
	return &apperr.Error{Code: apperr.Forbidden, Message: fmt.Sprintf("the record does not pass %s of the principal's roles", name),
		Details: []apperr.FieldError{{Field: name, Message: "the record does not pass this rule"}}}
}

// checkWritable refuses input naming a field outside the write list.
func checkWritable(e *schema.Entity, wr *query.WriteRules, input map[string]any) error {
	if wr == nil || wr.Writable == nil {
		return nil
	}
	var bad []apperr.FieldError
	for k := range input {
		if _, ok := e.Field(k); ok && !wr.Writable[k] {
			bad = append(bad, apperr.FieldError{Field: k, Message: "may not be written by the principal's roles (fields." + e.Name + ".write)"})
		}
	}
	if len(bad) == 0 {
		return nil
	}
	names := make([]string, len(bad))
	for i, b := range bad {
		names[i] = b.Field
	}
	return &apperr.Error{Code: apperr.Forbidden, Message: "fields " + strings.Join(names, ", ") + " of " + e.Name + " may not be written by the principal's roles", Details: bad}
}

// withPresets returns input with the role's presets (variables resolved
// for the principal) replacing what the client sent.
func (sc *Scope) withPresets(wr *query.WriteRules, input map[string]any) map[string]any {
	if wr == nil || len(wr.Preset) == 0 {
		return input
	}
	out := make(map[string]any, len(input)+len(wr.Preset))
	for k, v := range input {
		out[k] = v
	}
	for k, v := range wr.Preset {
		if vr, ok := v.(query.Var); ok {
			x, found := sc.variable(vr)
			if !found {
				x = nil
			}
			v = x
		}
		out[k] = v
	}
	return out
}

// refuseRuled is the error of a write path that does not apply rules yet,
// for a principal under rules on entity (nil otherwise).
func (sc *Scope) refuseRuled(entity, what string) error {
	if sc.compiler.WriteRules(entity) == nil && !sc.compiler.ReadRestricted(entity) {
		return nil
	}
	return apperr.New(apperr.Forbidden, "%s of %s is not available to a principal whose roles have rules on %s; write the records one at a time", what, entity, entity)
}

// redact leaves the fields outside the read list out of a record's JSON.
func (sc *Scope) redact(entity string, rec json.RawMessage) json.RawMessage {
	m := sc.compiler.ReadableFields(entity)
	if m == nil || rec == nil {
		return rec
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(rec, &obj) != nil {
		return rec
	}
	for k := range obj {
		if !m[k] {
			delete(obj, k)
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return rec
	}
	return out
}

// createRuled is Create for a principal with write rules on e: presets
// are in input already; the row is inserted only if it passes the check.
func (s *Store) createRuled(ctx context.Context, sc *Scope, e *schema.Entity, row Row, wr *query.WriteRules) (json.RawMessage, error) {
	var a query.Args
	idArg := a.Add(uuid.Must(uuid.NewV7()).String(), "uuid")
	eventID := outbox.NewEventID()
	eventArg := a.Add(eventID, "uuid")
	cols := []string{`"id"`, `"createdAt"`, `"updatedAt"`}
	vals := []string{idArg + ` AS "id"`, `now() AS "createdAt"`, `now() AS "updatedAt"`}
	for i := range e.Fields {
		f := &e.Fields[i]
		v := "NULL::" + schema.ColumnType(f)
		for j, rf := range row.Fields {
			if rf == f {
				v = a.Add(row.Values[j], schema.ColumnType(f))
			}
		}
		cols = append(cols, schema.Ident(f.Name))
		vals = append(vals, v+" AS "+schema.Ident(f.Name))
	}
	check := "TRUE"
	if wr.CreateCheck != nil {
		var err error
		if check, err = sc.compiler.RuleWhere(e.Name, wr.CreateCheck, "v", "rules."+e.Name+".create.check", &a); err != nil {
			return nil, err
		}
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	ev := outbox.InsertOneCTE(&a, eventArg, sc.Origin(), outbox.EntityCreated, e.Name, "w")
	h, from := sc.actorCTE(e, &a)
	sqlText := fmt.Sprintf("WITH w AS (INSERT INTO %s AS t (%s) SELECT v.* FROM (SELECT %s) v WHERE coalesce(%s, FALSE) RETURNING %s),\ne AS (%s)%s\nSELECT row_to_json(w) FROM w%s",
		sc.compiler.Table(e.Name), strings.Join(cols, ", "), strings.Join(vals, ", "), check, strings.Join(ret, ", "), ev, h, from)
	out, err := s.one(ctx, sc, e.Name, "", sqlText, sc.bind(a.List()), eventID)
	if ae := apperr.As(err); err != nil && ae.Code == apperr.NotFound {
		return nil, ruleDenied(e.Name, "create.check")
	}
	return sc.redact(e.Name, out), err
}

// ruleWhere is a write's extra condition on the record at alias tbl:
// readable, and matching the rule's where (nil: none).
func (sc *Scope) ruleWhere(e *schema.Entity, rule query.Filter, name, tbl string, a *query.Args) (string, error) {
	w := sc.compiler.ReadRule(e.Name, tbl, a)
	if rule == nil {
		return w, nil
	}
	r, err := sc.compiler.RuleWhere(e.Name, rule, tbl, "rules."+e.Name+"."+name, a)
	if err != nil {
		return "", err
	}
	if w == "TRUE" {
		return "coalesce(" + r + ", FALSE)", nil
	}
	return w + " AND coalesce(" + r + ", FALSE)", nil
}

// checkUpdated runs update.check on the record id in q (the write's
// transaction): FORBIDDEN naming the rule when it fails.
func (sc *Scope) checkUpdated(ctx context.Context, q sqlx.QueryerContext, e *schema.Entity, wr *query.WriteRules, id string) error {
	if wr == nil || wr.UpdateCheck == nil {
		return nil
	}
	var a query.Args
	idArg := a.Add(id, "uuid")
	check, err := sc.compiler.RuleWhere(e.Name, wr.UpdateCheck, "t", "rules."+e.Name+".update.check", &a)
	if err != nil {
		return err
	}
	var ok bool
	err = q.QueryRowxContext(ctx, fmt.Sprintf(`SELECT coalesce(%s, FALSE) FROM %s t WHERE t."id" = %s`, check, sc.compiler.Table(e.Name), idArg), sc.bind(a.List())...).Scan(&ok)
	if err != nil {
		return MapError(sc, e.Name, err)
	}
	if !ok {
		return ruleDenied(e.Name, "update.check")
	}
	return nil
}

// inTx runs fn in a transaction committed through the store's commit
// (hook included) when fn succeeds.
func (s *Store) inTx(ctx context.Context, fn func(tx *sqlx.Tx) error) error {
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return apperr.Wrap(err, "begin")
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	if err := s.commit(ctx, tx); err != nil {
		var ae *apperr.Error
		if errors.As(err, &ae) {
			return err
		}
		return apperr.Wrap(err, "commit")
	}
	return nil
}

// batchRules sets the rules of a batch update or delete of e on lock:
// the records must be readable and match update.where (or delete), and,
// on an update, pass update.check after the write (else the item fails
// with 403 naming the rule and the whole batch rolls back).
func (sc *Scope) batchRules(e *schema.Entity, lock *lockIDs, op string) {
	wr := sc.compiler.WriteRules(e.Name)
	if wr == nil && !sc.compiler.ReadRestricted(e.Name) {
		return
	}
	var where query.Filter
	if wr != nil {
		where = wr.Delete
		if op == "update" {
			where = wr.UpdateWhere
		}
	}
	name := "delete"
	if op == "update" {
		name = "update.where"
	}
	lock.rule = func(a *query.Args) (string, error) { return sc.ruleWhere(e, where, name, "t", a) }
	if op != "update" || wr == nil || wr.UpdateCheck == nil {
		return
	}
	lock.after = func(ctx context.Context, tx *sqlx.Tx, b *batch) error {
		var a query.Args
		idArg := a.Add(schema.ArrayLiteral(lock.ids), "uuid[]")
		check, err := sc.compiler.RuleWhere(e.Name, wr.UpdateCheck, "t", "rules."+e.Name+".update.check", &a)
		if err != nil {
			return err
		}
		var bad []string
		if err := tx.SelectContext(ctx, &bad, fmt.Sprintf(`SELECT t."id"::text FROM %s t WHERE t."id" = ANY(%s) AND NOT coalesce(%s, FALSE)`,
			sc.compiler.Table(e.Name), idArg, check), sc.bind(a.List())...); err != nil {
			return MapError(sc, e.Name, err)
		}
		for _, id := range bad {
			for i, x := range lock.ids {
				if x == id {
					b.fail(i, lock.raws[i], ruleDenied(e.Name, "update.check"))
				}
			}
		}
		return nil
	}
}

// redactList is redact for a JSON array of records.
func (sc *Scope) redactList(entity string, recs json.RawMessage) json.RawMessage {
	if sc.compiler.ReadableFields(entity) == nil || recs == nil {
		return recs
	}
	var list []json.RawMessage
	if json.Unmarshal(recs, &list) != nil {
		return recs
	}
	for i := range list {
		list[i] = sc.redact(entity, list[i])
	}
	out, err := json.Marshal(list)
	if err != nil {
		return recs
	}
	return out
}

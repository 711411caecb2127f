package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
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
// Every other write path applies the same rules in its own transaction
// (docs/auth.md, "Rules on every write path"): batches per item
// (batchRules, createRules, checkItems), upserts (upsertRules), nested
// creates (nestedChecks, linkable), edge writes (edgeEnds), restores and
// jobs' bulk writes (bulkRules, importRules, ScopeAs).

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
		return sc.checkItems(ctx, tx, e, wr.UpdateCheck, "update.check", lock.ids, lock.raws, b)
	}
}

// checkItems runs a check rule on the records ids (item i wrote ids[i],
// "" for none) inside the write's transaction, after the write: every
// item whose record fails it fails with 403 naming the rule (and the
// batch then rolls back). A nil rule passes.
func (sc *Scope) checkItems(ctx context.Context, tx sqlx.QueryerContext, e *schema.Entity, rule query.Filter, name string, ids []string, raws []any, b *batch) error {
	if rule == nil {
		return nil
	}
	var mine []string
	for _, id := range ids {
		if id != "" {
			mine = append(mine, id)
		}
	}
	if len(mine) == 0 {
		return nil
	}
	var a query.Args
	idArg := a.Add(schema.ArrayLiteral(mine), "uuid[]")
	check, err := sc.compiler.RuleWhere(e.Name, rule, "t", "rules."+e.Name+"."+name, &a)
	if err != nil {
		return err
	}
	var bad []string
	if err := sqlx.SelectContext(ctx, tx, &bad, fmt.Sprintf(`SELECT t."id"::text FROM %s t WHERE t."id" = ANY(%s) AND NOT coalesce(%s, FALSE)`,
		sc.compiler.Table(e.Name), idArg, check), sc.bind(a.List())...); err != nil {
		return MapError(sc, e.Name, err)
	}
	for _, id := range bad {
		for i, x := range ids {
			if x == id {
				b.fail(i, raws[i], ruleDenied(e.Name, name))
			}
		}
	}
	return nil
}

// createRules applies the create rules of e to a batch create's item i
// (fields.write, then the presets): the input to validate, or the item's
// failure.
func (sc *Scope) createRules(e *schema.Entity, obj map[string]any) (map[string]any, error) {
	wr := sc.compiler.WriteRules(e.Name)
	if wr == nil {
		return obj, nil
	}
	if err := checkWritable(e, wr, obj); err != nil {
		return nil, err
	}
	return sc.withPresets(wr, obj), nil
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

// edgeEnds are the rules' conditions on the ends of an edge write of rel,
// for the source record and the target record each at alias tbl: the
// source must be readable and match update.where (writing an edge changes
// the source's relationships, as updating it would), the target must be
// readable. "TRUE" where no rule applies.
func (sc *Scope) edgeEnds(rel *schema.Relationship, tbl string, a *query.Args) (string, string, error) {
	s, err := sc.edgeSourceRule(rel, tbl, a)
	if err != nil {
		return "", "", err
	}
	return s, sc.compiler.ReadRule(rel.To, tbl, a), nil
}

// edgeSourceRule is the rules' condition on the source record of an edge
// write of rel at alias tbl (see edgeEnds).
func (sc *Scope) edgeSourceRule(rel *schema.Relationship, tbl string, a *query.Args) (string, error) {
	src, err := sc.compiler.Entity(rel.From)
	if err != nil {
		return "", err
	}
	var where query.Filter
	if wr := sc.compiler.WriteRules(rel.From); wr != nil {
		where = wr.UpdateWhere
	}
	if where == nil && !sc.compiler.ReadRestricted(rel.From) {
		return "TRUE", nil
	}
	return sc.ruleWhere(src, where, "update.where", tbl, a)
}

// edgeRule is edgeEnds as one condition on the edge at alias x ("TRUE"
// when no rule applies): an edge whose ends fail it is not found.
func (sc *Scope) edgeRule(rel *schema.Relationship, x string, a *query.Args) (string, error) {
	s, t, err := sc.edgeEnds(rel, "z", a)
	if err != nil {
		return "", err
	}
	out := "TRUE"
	if s != "TRUE" {
		out = andLive(out, fmt.Sprintf(`EXISTS (SELECT 1 FROM %s z WHERE z."id" = %s."source_id" AND %s)`, sc.compiler.Table(rel.From), x, s))
	}
	if t != "TRUE" {
		out = andLive(out, fmt.Sprintf(`EXISTS (SELECT 1 FROM %s z WHERE z."id" = %s."target_id" AND %s)`, sc.compiler.Table(rel.To), x, t))
	}
	return strings.TrimPrefix(out, "TRUE AND "), nil
}

// upsertRules are the rules of an upsert of e: the insert side is a
// create (fields.write and presets, applied to the items already, then
// create.check), the update side an update (the conflicting record must
// be readable and match update.where, then pass update.check).
type upsertRules struct {
	where func(a *query.Args) (string, error)
	wr    *query.WriteRules
}

// upsertRules returns e's upsert rules for the scope's principal, nil
// when none apply.
func (sc *Scope) upsertRules(e *schema.Entity) *upsertRules {
	wr := sc.compiler.WriteRules(e.Name)
	if wr == nil && !sc.compiler.ReadRestricted(e.Name) {
		return nil
	}
	var where query.Filter
	if wr != nil {
		where = wr.UpdateWhere
	} else {
		wr = &query.WriteRules{Entity: e.Name}
	}
	return &upsertRules{wr: wr, where: func(a *query.Args) (string, error) {
		return sc.ruleWhere(e, where, "update.where", "t", a)
	}}
}

// upsertHidden is an item's error when the record holding its conflict
// value is one the principal may not update (hidden by the read rule or
// outside update.where). It is the 409 a create of the same value answers
// (the unique constraint already tells that the value is taken), so an
// upsert reveals nothing more than a create would: not the record, its
// id, nor whether the principal could read it.
func upsertHidden(e *schema.Entity, key *schema.Field) error {
	return &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("%s: a %s with this value exists that the principal's roles may not update", key.Name, e.Name),
		Details: []apperr.FieldError{{Field: key.Name, Message: "must be unique"}}}
}

// upsertRuled runs an upsert's groups under rules in one transaction: an
// item whose conflicting record was left alone fails (upsertHidden), then
// the created records must pass create.check and the updated ones
// update.check; any failure rolls everything back.
func (s *Store) upsertRuled(ctx context.Context, sc *Scope, e *schema.Entity, key *schema.Field, b *batch, groups []*upsertGroup, items []any, ru *upsertRules) (json.RawMessage, int, int, error) {
	t0 := time.Now()
	defer func() { b.dbTime += time.Since(t0) }()
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, 0, 0, MapError(sc, e.Name, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit it is a no-op
	var n, created int
	var events []string
	merged := make([]json.RawMessage, len(items))
	createdIDs := make([]string, len(items))
	updatedIDs := make([]string, len(items))
	for _, g := range groups {
		var gn, gc int
		var ev sql.NullString
		var out []byte
		if err := tx.QueryRowxContext(ctx, g.sql, sc.bind(g.args)...).Scan(&gn, &gc, &out, &ev); err != nil {
			return nil, 0, 0, MapError(sc, e.Name, err)
		}
		n, created = n+gn, created+gc
		if ev.Valid {
			events = append(events, ev.String)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(out, &list); err != nil || len(list) != len(g.index) {
			return nil, 0, 0, apperr.New(apperr.Internal, "upsert returned %d records for %d items", len(list), len(g.index))
		}
		for k, idx := range g.index {
			rec := list[k]
			if len(rec) == 0 || string(rec) == "null" {
				b.fail(idx, items[idx], upsertHidden(e, key))
				continue
			}
			var r struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(rec, &r); err != nil {
				return nil, 0, 0, apperr.Wrap(err, "read upserted record")
			}
			if r.ID == g.ids[k] {
				createdIDs[idx] = r.ID
			} else {
				updatedIDs[idx] = r.ID
			}
			merged[idx] = sc.redact(e.Name, rec)
		}
	}
	if len(b.res.Failed) == 0 {
		if err := sc.checkItems(ctx, tx, e, ru.wr.CreateCheck, "create.check", createdIDs, items, b); err != nil {
			return nil, 0, 0, err
		}
		if err := sc.checkItems(ctx, tx, e, ru.wr.UpdateCheck, "update.check", updatedIDs, items, b); err != nil {
			return nil, 0, 0, err
		}
	}
	if len(b.res.Failed) > 0 { // rolled back: nothing written
		return nil, 0, 0, nil
	}
	if err := s.commit(ctx, tx); err != nil {
		return nil, 0, 0, commitError(ctx, sc, e.Name, err)
	}
	s.announce(sc.TenantID, strings.Join(events, ","))
	out, err := json.Marshal(merged)
	if err != nil {
		return nil, 0, 0, apperr.Wrap(err, "encode upsert result")
	}
	return out, n, created, nil
}

// errRolledBack makes inTx roll back a write whose items failed a rule
// (the failures are the caller's to report).
var errRolledBack = errors.New("rolled back: an item failed a rule")

// linkKey keys a connect by its id and side (linkable).
func linkKey(r connectRef) string {
	if r.source {
		return r.id + "\x00s"
	}
	return r.id
}

// linkable returns the connects of refs (records of entity name) that
// name a live record the principal may link, keyed by linkKey: a
// readable one and, where the connected record is the edge's source, one
// matching update.where (edgeEnds).
func (s *Store) linkable(ctx context.Context, sc *Scope, name string, refs []connectRef) (map[string]bool, error) {
	have := map[string]bool{}
	for _, source := range []bool{false, true} {
		var ids []string
		for _, r := range refs {
			if r.source == source {
				ids = append(ids, r.id)
			}
		}
		if len(ids) == 0 {
			continue
		}
		var a query.Args
		idArg := a.Add(schema.ArrayLiteral(ids), "uuid[]")
		w := andLive(`t."id" = ANY(`+idArg+`)`, sc.compiler.Live(name, "t"))
		if source {
			r, err := sc.edgeSourceRule(&schema.Relationship{From: name}, "t", &a)
			if err != nil {
				return nil, err
			}
			w = andLive(w, r)
		} else {
			w = andLive(w, sc.compiler.ReadRule(name, "t", &a))
		}
		var found []string
		if err := s.db.SelectContext(ctx, &found, fmt.Sprintf(`SELECT t."id"::text FROM %s t WHERE %s`, sc.compiler.Table(name), w), sc.bind(a.List())...); err != nil {
			return nil, MapError(sc, name, err)
		}
		for _, id := range found {
			have[linkKey(connectRef{id: id, source: source})] = true
		}
	}
	return have, nil
}

// nestedChecks runs create.check on the records a nested create made (the
// parents and the nested creates), in its transaction after the
// statement, so a check sees the new edges: each failing record fails its
// item (FORBIDDEN naming the record's path and the rule).
func (sc *Scope) nestedChecks(ctx context.Context, tx *sqlx.Tx, p *nestedPlan) ([]nestedFailure, error) {
	type group struct {
		e    *schema.Entity
		refs []connectRef
	}
	groups := []group{{e: p.e}}
	for i, id := range p.ids {
		if id != "" {
			groups[0].refs = append(groups[0].refs, connectRef{item: i, id: id})
		}
	}
	for _, g := range p.creates {
		groups = append(groups, group{e: g.e, refs: g.refs})
	}
	var failures []nestedFailure
	for _, g := range groups {
		wr := sc.compiler.WriteRules(g.e.Name)
		if wr == nil || wr.CreateCheck == nil || len(g.refs) == 0 {
			continue
		}
		ids := make([]string, len(g.refs))
		for i, r := range g.refs {
			ids[i] = r.id
		}
		var a query.Args
		idArg := a.Add(schema.ArrayLiteral(ids), "uuid[]")
		name := "rules." + g.e.Name + ".create.check"
		check, err := sc.compiler.RuleWhere(g.e.Name, wr.CreateCheck, "t", name, &a)
		if err != nil {
			return nil, err
		}
		var bad []string
		if err := tx.SelectContext(ctx, &bad, fmt.Sprintf(`SELECT t."id"::text FROM %s t WHERE t."id" = ANY(%s) AND NOT coalesce(%s, FALSE)`,
			sc.compiler.Table(g.e.Name), idArg, check), sc.bind(a.List())...); err != nil {
			return nil, MapError(sc, g.e.Name, err)
		}
		for _, id := range bad {
			for _, r := range g.refs {
				if r.id == id {
					fe := apperr.FieldError{Field: name, Message: "the record does not pass this rule"}
					if r.path != "" {
						fe = apperr.FieldError{Field: r.path, Message: "the record does not pass " + name}
					}
					failures = append(failures, nestedFailure{item: r.item, code: apperr.Forbidden, errs: []apperr.FieldError{fe}})
				}
			}
		}
	}
	sort.SliceStable(failures, func(i, j int) bool { return failures[i].item < failures[j].item })
	return failures, nil
}

// bulkRules are the rules of a job's bulk write of e (the job runs as the
// principal that created it; package jobs records it): the records it
// may touch (where: readable, and matching update.where or delete) and
// the check every written record must pass (update.check, or
// create.check for an import), evaluated in the statement's RETURNING on
// the record as written. A zero bulkRules applies nothing.
type bulkRules struct {
	where  string
	check  query.Filter
	name   string            // the check's rule name ("update.check")
	preset map[string]string // import: field → the SQL of its preset value
	stage  string            // import: the staging table, to name the rows a check refuses
}

// MaxStagedProblems is how many refused rows a StagedRefused lists.
const MaxStagedProblems = 100

// StagedRefused is the error of an import whose staged rows a rule
// refuses (a field outside fields.write, create.check): Err names the
// field or the rule, as for one create; Problems are the first refused
// rows in line order, each naming its line, the item as staged and Err's
// code and field, as a batch names its failed items; Count counts them all.
type StagedRefused struct {
	Err      *apperr.Error
	Problems []StagedProblem
	Count    int64
}

func (e *StagedRefused) Error() string { return e.Err.Error() }
func (e *StagedRefused) Unwrap() error { return e.Err }

// stagedItem is a staged row as the file had it (its text columns).
const stagedItem = `row_to_json(s)::jsonb - '_line' - '_id'`

// refused returns err as a StagedRefused listing the staged rows of
// stage selected by q (columns "_line", item and n, the count of all),
// each failing with err.
func refused(ctx context.Context, tx *sqlx.Tx, sc *Scope, entity string, err error, q string, args []any) error {
	var rows []struct {
		Line int64           `db:"_line"`
		Item json.RawMessage `db:"item"`
		N    int64           `db:"n"`
	}
	if qerr := tx.SelectContext(ctx, &rows, q, sc.bind(args)...); qerr != nil {
		return err // the refusal stands without its list of rows
	}
	ae := apperr.As(err)
	sr := &StagedRefused{Err: ae}
	for _, r := range rows {
		sr.Problems = append(sr.Problems, StagedProblem{Line: r.Line, Item: r.Item, Err: ae})
		sr.Count = r.N
	}
	if len(rows) > 0 {
		ae.Message = fmt.Sprintf("%d of the file's items (the first at index %d): %s; nothing was written", sr.Count, rows[0].Line, ae.Message)
	}
	return sr
}

// bulkRules returns the rules of a bulk update or delete (op) of e; set
// is an update's fields, checked against fields.write.
func (sc *Scope) bulkRules(e *schema.Entity, op string, set map[string]any, a *query.Args) (*bulkRules, error) {
	wr := sc.compiler.WriteRules(e.Name)
	ru := &bulkRules{where: "TRUE"}
	if wr == nil && !sc.compiler.ReadRestricted(e.Name) {
		return ru, nil
	}
	var where query.Filter
	name := "delete"
	if wr != nil {
		where = wr.Delete
		if op == "update" {
			where, name = wr.UpdateWhere, "update.where"
			ru.check, ru.name = wr.UpdateCheck, "update.check"
		}
	}
	if err := checkWritable(e, wr, set); err != nil {
		return nil, prefixedField("set.", err)
	}
	w, err := sc.ruleWhere(e, where, name, "t", a)
	if err != nil {
		return nil, err
	}
	ru.where = w
	return ru, nil
}

// prefixedField puts prefix before each detail's field of a FORBIDDEN
// field error ("set.priority").
func prefixedField(prefix string, err error) error {
	ae := apperr.As(err)
	for i := range ae.Details {
		ae.Details[i].Field = prefix + ae.Details[i].Field
	}
	return ae
}

// importRules are the create rules of an import of e from the staged
// rows in stage: a staged value in a field outside fields.write is 403
// naming the field (checked in tx, before the insert), presets replace
// the staged values, and create.check runs on every inserted record.
func (s *Store) importRules(ctx context.Context, tx *sqlx.Tx, sc *Scope, e *schema.Entity, stage string, a *query.Args) (*bulkRules, error) {
	ru := &bulkRules{where: "TRUE"}
	wr := sc.compiler.WriteRules(e.Name)
	if wr == nil {
		return ru, nil
	}
	for i := range e.Fields {
		f := &e.Fields[i]
		if _, preset := wr.Preset[f.Name]; preset || wr.Writable == nil || wr.Writable[f.Name] {
			continue
		}
		var sent bool
		if err := tx.GetContext(ctx, &sent, fmt.Sprintf(`SELECT EXISTS (SELECT 1 FROM %s s WHERE s.%s IS NOT NULL)`, stage, schema.Ident(f.Name))); err != nil {
			return nil, MapError(sc, e.Name, err)
		}
		if sent {
			col := schema.Ident(f.Name)
			return nil, refused(ctx, tx, sc, e.Name, checkWritable(e, wr, map[string]any{f.Name: true}),
				fmt.Sprintf(`SELECT s."_line", %s AS item, count(*) OVER () AS n FROM %s s WHERE s.%s IS NOT NULL ORDER BY s."_line" LIMIT %d`,
					stagedItem, stage, col, MaxStagedProblems), nil)
		}
	}
	ru.preset = map[string]string{}
	for k, v := range sc.withPresets(wr, nil) {
		f, ok := e.Field(k)
		if !ok {
			continue
		}
		row, errs := Prepare(e, map[string]any{k: v}, Patch)
		if len(errs) > 0 || len(row.Values) != 1 {
			ru.preset[k] = "NULL::" + schema.ColumnType(f)
			continue
		}
		ru.preset[k] = a.Add(row.Values[0], schema.ColumnType(f))
	}
	ru.check, ru.name, ru.stage = wr.CreateCheck, "create.check", stage
	return ru, nil
}

// returnCheck adds the check, as column "_ok", to a write's RETURNING
// list ret: there t is the record as written.
func (ru *bulkRules) returnCheck(sc *Scope, e *schema.Entity, ret *[]string, a *query.Args) error {
	if ru.check == nil {
		return nil
	}
	c, err := sc.compiler.RuleWhere(e.Name, ru.check, "t", "rules."+e.Name+"."+ru.name, a)
	if err != nil {
		return err
	}
	*ret = append(*ret, "coalesce("+c+", FALSE) AS "+`"_ok"`)
	return nil
}

// written is records.written, failing with 403 naming the check when a
// written record fails it (the caller's transaction then rolls back).
func (ru *bulkRules) written(ctx context.Context, tx *sqlx.Tx, sc *Scope, e *schema.Entity, with string, events bool, args []any) (Written, error) {
	if ru.check == nil {
		return written(ctx, tx, sc, e.Name, with, events, args)
	}
	if e.History {
		if _, err := tx.ExecContext(ctx, "SELECT set_config('"+schema.HistoryActorSetting+"', $1, true)", sc.actor()); err != nil {
			return Written{}, MapError(sc, e.Name, err)
		}
	}
	span := "NULL::bigint AS first_seq, NULL::bigint AS last_seq, NULL::timestamptz AS written_at"
	if events {
		span = outbox.Range
	}
	var r struct {
		Written
		Denied int64 `db:"denied"`
	}
	if err := tx.GetContext(ctx, &r, with+"\nSELECT count(*) AS n, "+span+", count(*) FILTER (WHERE NOT w.\"_ok\") AS denied FROM w", sc.bind(args)...); err != nil {
		return Written{}, MapError(sc, e.Name, err)
	}
	if r.Denied > 0 {
		if ru.stage == "" {
			return Written{}, ruleDenied(e.Name, ru.name)
		}
		return Written{}, ru.refusedRows(ctx, tx, sc, e)
	}
	return r.Written, nil
}

// refusedRows names the staged rows whose records, as the import wrote
// them in tx (presets applied), fail the check.
func (ru *bulkRules) refusedRows(ctx context.Context, tx *sqlx.Tx, sc *Scope, e *schema.Entity) error {
	var a query.Args
	name := "rules." + e.Name + "." + ru.name
	c, err := sc.compiler.RuleWhere(e.Name, ru.check, "t", name, &a)
	if err != nil {
		return err
	}
	return refused(ctx, tx, sc, e.Name, ruleDenied(e.Name, ru.name), fmt.Sprintf(`SELECT s."_line", %s AS item, count(*) OVER () AS n
FROM %s s JOIN %s t ON t."id" = s."_id"::uuid WHERE NOT coalesce(%s, FALSE) ORDER BY s."_line" LIMIT %d`,
		stagedItem, ru.stage, sc.compiler.Table(e.Name), c, MaxStagedProblems), a.List())
}

// CheckWritable refuses input naming a field of entity outside the
// principal's fields.write (403 naming it); nil without a write list.
func (sc *Scope) CheckWritable(entity string, input map[string]any) error {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return err
	}
	return checkWritable(e, sc.compiler.WriteRules(e.Name), input)
}

// ScopeAs is Scope for a principal recorded by earlier work (a batch
// job's creator, package jobs): its roles are resolved to their
// definitions now, so the work runs under the rules as they are when it
// runs. Roles that no longer exist refuse the work (403) rather than run
// it without rules.
func (s *Store) ScopeAs(ctx context.Context, p *auth.Principal) (*Scope, error) {
	if len(p.Roles) > 0 {
		if s.rules == nil {
			return nil, apperr.New(apperr.Internal, "records: a principal with roles needs a store that enforces rules")
		}
		a, err := s.schemas.ActiveFor(ctx, p.TenantID)
		if err != nil {
			return nil, err
		}
		_, set, err := s.rules.RoleRules(ctx, p.TenantID, a.Def, p.Roles)
		if err != nil {
			return nil, err
		}
		if set == "" {
			return nil, apperr.New(apperr.Forbidden, "the roles %s of the principal that created this work no longer exist", strings.Join(p.Roles, ", "))
		}
		p.RoleSet = set
	}
	return s.Scope(ctx, p)
}

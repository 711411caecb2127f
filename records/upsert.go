package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Upserts (docs/rest.md, Upsert): create each item, or update the record
// that already holds its value of one unique field. The items are
// validated like a batch create's (a record may be inserted, so required
// fields must be present), then written by one INSERT ... ON CONFLICT
// (field) DO UPDATE ... RETURNING statement whose data-modifying CTE
// inserts each row's event: entity.created where the row was inserted
// (its xmax is 0), entity.updated where it was updated. Statement and
// events are one transaction, so an upsert is all or nothing.
//
// An update changes the fields its item sends (the conflict field aside),
// and of those only the ones Upsert.Update names when it is given: a
// field an item leaves out keeps its stored value, whatever other items
// send. updatedAt is set on every updated row, even when nothing else
// changes. As ON CONFLICT ... DO UPDATE SET is the same for every row of
// a statement, items are grouped by the fields their update changes, one
// statement per group in one transaction; items usually send the same
// fields, and then the upsert is one statement.

// Upsert is an upsert request.
type Upsert struct {
	// OnConflict is the unique field whose value finds the record to update.
	OnConflict string
	// Update limits the fields an update changes to these (of those the
	// item sends); nil: every field the item sends but OnConflict.
	Update []string
	// Items are the records, objects of fields, as sent.
	Items []any
}

// UpsertResult is a batch result with how many rows were created and how
// many updated.
type UpsertResult struct {
	*BatchResult
	CreatedCount int `json:"createdCount"`
	UpdatedCount int `json:"updatedCount"`
}

// createdCol is the column an upsert's RETURNING adds to say whether the
// row was inserted; it starts with an underscore, which no field name may.
const createdCol = "_created"

// upsertField checks that name is a unique field of e that an upsert may
// match on: one with its own unique index, which ON CONFLICT can infer.
func upsertField(e *schema.Entity, name string) (*schema.Field, error) {
	if name == "" {
		return nil, apperr.Field("onConflict", "is required (the name of a unique field of %s)", e.Name)
	}
	f, ok := e.Field(name)
	if !ok {
		return nil, apperr.Field("onConflict", "%s has no field %q; name a unique field (%s)", e.Name, name, uniqueNames(e))
	}
	if !f.ConflictTarget() {
		return nil, apperr.Field("onConflict", "field %q of %s is not unique; an upsert matches on a unique field (%s)", name, e.Name, uniqueNames(e))
	}
	return f, nil
}

func uniqueNames(e *schema.Entity) string {
	n := e.ConflictTargets()
	if len(n) == 0 {
		return e.Name + " has none"
	}
	return strings.Join(n, ", ")
}

// Upsert validates and writes u's items atomically. A request whose
// onConflict or update is wrong is a VALIDATION_ERROR naming it; items that
// fail validation reject the whole upsert with a result listing them (and
// a nil error), as a batch does.
func (s *Store) Upsert(ctx context.Context, sc *Scope, entity string, u Upsert) (*UpsertResult, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	key, err := upsertField(e, u.OnConflict)
	if err != nil {
		return nil, err
	}
	var update []*schema.Field
	if u.Update != nil {
		seen := map[string]bool{}
		for i, name := range u.Update {
			f, ok := e.Field(name)
			path := fmt.Sprintf("update[%d]", i)
			switch {
			case !ok:
				return nil, apperr.Field(path, "%s has no field %q", e.Name, name)
			case f == key:
				return nil, apperr.Field(path, "%q is the conflict field; the record it finds keeps its value", name)
			case seen[name]:
				return nil, apperr.Field(path, "%q is listed twice", name)
			}
			seen[name] = true
			update = append(update, f)
		}
	}
	if err := checkSize(len(u.Items), "items"); err != nil {
		return nil, err
	}
	b := newBatch(len(u.Items))
	rows := make([]Row, len(u.Items))
	objs := make([]map[string]any, len(u.Items))
	for i, it := range u.Items {
		obj, ok := it.(map[string]any)
		if !ok {
			b.fail(i, it, apperr.New(apperr.Validation, "item must be a JSON object of fields"))
			continue
		}
		obj, err := sc.createRules(e, obj) // rulewrites.go
		if err != nil {
			b.fail(i, it, err)
			continue
		}
		objs[i] = obj
		row, errs := Prepare(e, obj, Create)
		if len(errs) > 0 {
			b.fieldFail(i, it, errs)
			continue
		}
		rows[i] = row
	}
	allowed := map[*schema.Field]bool{} // the fields an update may change
	for _, f := range update {
		allowed[f] = true
	}
	failed := failedSet(b.res.Failed)
	keys := map[string]int{}
	// Items are grouped by the fields an update of theirs changes: one
	// statement per group, as ON CONFLICT ... DO UPDATE SET is the same for
	// every row of a statement. Items of one upsert usually send the same
	// fields, so there is usually one group.
	var groups []*upsertGroup
	bySet := map[string]*upsertGroup{}
	for i, obj := range objs {
		if failed[i] || obj == nil {
			continue
		}
		if v, ok := obj[key.Name]; !ok || v == nil {
			b.fail(i, u.Items[i], apperr.Field(key.Name, "is required: the upsert finds the record to update by it"))
			continue
		}
		t, _, _ := textValue(rowValue(rows[i], key))
		if j, dup := keys[t]; dup {
			b.fail(i, u.Items[i], apperr.Field(key.Name, "appears more than once in the upsert (also at index %d); each record is written once", j))
			continue
		}
		keys[t] = i
		var set []*schema.Field
		var sig []byte
		for j := range e.Fields {
			f := &e.Fields[j]
			if _, sent := obj[f.Name]; sent && f != key && (u.Update == nil || allowed[f]) {
				set = append(set, f)
				sig = append(sig, f.Name...)
				sig = append(sig, 0)
			}
		}
		g := bySet[string(sig)]
		if g == nil {
			g = &upsertGroup{update: set}
			bySet[string(sig)] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, rows[i])
		g.index = append(g.index, i)
	}
	if len(b.res.Failed) == 0 {
		s.checkFiles(ctx, sc, rows, u.Items, b)
	}
	if len(b.res.Failed) > 0 {
		return &UpsertResult{BatchResult: b.done(nil, 0)}, nil
	}
	b.checked = time.Now()
	rules := sc.upsertRules(e) // rulewrites.go
	for _, g := range groups {
		var err error
		if g.sql, g.args, g.ids, err = upsertSQL(sc, e, key, g.update, g.rows, rules); err != nil {
			return nil, err
		}
	}
	if rules != nil {
		out, n, created, err := s.upsertRuled(ctx, sc, e, key, b, groups, u.Items, rules)
		if err != nil {
			return nil, err
		}
		return &UpsertResult{BatchResult: b.done(out, n), CreatedCount: created, UpdatedCount: n - created}, nil
	}
	out, n, created, err := s.upsertTx(ctx, sc, e.Name, b, groups, len(u.Items))
	if err != nil {
		return nil, err
	}
	return &UpsertResult{BatchResult: b.done(out, n), CreatedCount: created, UpdatedCount: n - created}, nil
}

// upsertGroup is the items of an upsert whose updates change the same
// fields, and their statement.
type upsertGroup struct {
	update []*schema.Field
	rows   []Row
	index  []int // each row's index among the items
	sql    string
	args   []any
	ids    []string // the ids an insert of each row takes
}

// UpsertOne upserts one record and returns it, with whether it was
// created. Item failures are a VALIDATION_ERROR (or the item's own error)
// naming the field.
func (s *Store) UpsertOne(ctx context.Context, sc *Scope, entity, onConflict string, update []string, input map[string]any) (json.RawMessage, bool, error) {
	res, err := s.Upsert(ctx, sc, entity, Upsert{OnConflict: onConflict, Update: update, Items: []any{input}})
	if err != nil {
		return nil, false, err
	}
	if res.Rejected() {
		f := res.Failed[0].Error
		return nil, false, &apperr.Error{Code: f.Code, Message: f.Message, Details: f.Details}
	}
	var list []json.RawMessage
	if err := json.Unmarshal(res.Successful, &list); err != nil || len(list) != 1 {
		return nil, false, apperr.New(apperr.Internal, "upsert returned %d records", len(list))
	}
	return list[0], res.CreatedCount == 1, nil
}

// rowValue is the value row binds for f (nil when absent).
func rowValue(r Row, f *schema.Field) any {
	for k, rf := range r.Fields {
		if rf == f {
			return r.Values[k]
		}
	}
	return nil
}

// UpsertSQL is the statement of an upsert of rows of e on key, updating
// update; exported for the benchmark's minimal handler. See upsertSQL.
func UpsertSQL(sc *Scope, e *schema.Entity, key *schema.Field, update []*schema.Field, rows []Row) (string, []any, error) {
	q, args, _, err := upsertSQL(sc, e, key, update, rows, nil)
	return q, args, err
}

// upsertSQL renders the upsert: the items as text arrays unnested WITH
// ORDINALITY (CTE u), one INSERT ... SELECT FROM u ORDER BY the key (so
// concurrent upserts of overlapping keys lock rows in one order and wait
// for each other rather than deadlock) ON CONFLICT (key) DO
// UPDATE SET updatedAt, update = EXCLUDED ... RETURNING the record and
// (xmax = 0) (CTE w), the events (CTE e), and one row: the count, the
// count created, the records in item order (w joined back to u on the
// key, a hash join rather than a search per row) and the event ids.
//
// Under rules (ru not nil, rulewrites.go) the DO UPDATE has a WHERE: the
// conflicting record is updated only if the principal may update it; the
// final select then keeps one row per item (a LEFT JOIN), r NULL for an
// item whose conflicting record was left alone.
func upsertSQL(sc *Scope, e *schema.Entity, key *schema.Field, update []*schema.Field, rows []Row, ru *upsertRules) (string, []any, []string, error) {
	fields, used := unionFields(rows)
	ids := make([]string, len(rows))
	cols := make([][]pgtype.Text, len(fields))
	for j := range cols {
		cols[j] = make([]pgtype.Text, len(rows))
	}
	for i, r := range rows {
		ids[i] = uuid.Must(uuid.NewV7()).String()
		for k, f := range r.Fields {
			t, ok, err := textValue(r.Values[k])
			if err != nil {
				return "", nil, nil, apperr.Wrap(err, "encode upsert value")
			}
			cols[used[f]][i] = pgtype.Text{String: t, Valid: ok}
		}
	}
	var a query.Args
	names := []string{`"id"`}
	unnest := []string{a.Add(ids, "text[]")}
	sel := []string{`u.c0::uuid`}
	keyCol := ""
	for j, f := range fields {
		names = append(names, schema.Ident(f.Name))
		unnest = append(unnest, a.Add(cols[j], "text[]"))
		sel = append(sel, fmt.Sprintf("u.c%d::%s", j+1, schema.ColumnType(f)))
		if f == key {
			keyCol = sel[len(sel)-1]
		}
	}
	if keyCol == "" {
		return "", nil, nil, apperr.Field(key.Name, "is required: the upsert finds the record to update by it")
	}
	aliases := make([]string, len(unnest))
	for j := range aliases {
		aliases[j] = fmt.Sprintf("c%d", j)
	}
	sets := []string{`"updatedAt" = now()`}
	for _, f := range update {
		sets = append(sets, fmt.Sprintf("%s = EXCLUDED.%s", schema.Ident(f.Name), schema.Ident(f.Name)))
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	out := []string{`w."id"`, `w."createdAt"`, `w."updatedAt"`}
	for i := range e.Fields {
		out = append(out, "w."+schema.Ident(e.Fields[i].Name))
	}
	cond, count, rec, join := "", "count(*)", "(SELECT r FROM (SELECT "+strings.Join(out, ", ")+") r)", "FROM w JOIN u ON w."+schema.Ident(key.Name)+" = "+keyCol
	if ru != nil {
		w, err := ru.where(&a)
		if err != nil {
			return "", nil, nil, err
		}
		cond = "\n  WHERE " + w
		count = "count(o.r)"
		rec = `CASE WHEN w."id" IS NULL THEN NULL ELSE ` + rec + ` END`
		join = "FROM u LEFT JOIN w ON w." + schema.Ident(key.Name) + " = " + keyCol
	}
	q := fmt.Sprintf(`WITH u AS (SELECT * FROM unnest(%s) WITH ORDINALITY AS u(%s, ord)),
w AS (INSERT INTO %s AS t (%s) SELECT %s FROM u ORDER BY %s
  ON CONFLICT (%s) DO UPDATE SET %s%s
  RETURNING %s, (t.xmax = 0) AS %s),
e AS (%s)
SELECT %s, count(*) FILTER (WHERE o.%s), coalesce(json_agg(o.r ORDER BY o.ord), '[]'::json), `+outbox.EventIDs+`
FROM (SELECT u.ord, w.%s, %s AS r %s) o`,
		strings.Join(unnest, ", "), strings.Join(aliases, ", "),
		sc.compiler.Table(e.Name), strings.Join(names, ", "), strings.Join(sel, ", "), keyCol,
		schema.Ident(key.Name), strings.Join(sets, ", "), cond,
		strings.Join(ret, ", "), `"`+createdCol+`"`,
		outbox.InsertUpsertCTE(&a, sc.Origin(), e.Name, "w", createdCol),
		count, `"`+createdCol+`"`, `"`+createdCol+`"`, rec, join)
	return q, a.List(), ids, nil
}

// upsertTx runs the upsert's statements (one per group; several run in
// one transaction, so the upsert stays all or nothing) and announces their
// events after commit. It returns the records in item order, how many
// were written and how many of those created.
func (s *Store) upsertTx(ctx context.Context, sc *Scope, entity string, b *batch, groups []*upsertGroup, total int) (json.RawMessage, int, int, error) {
	t0 := time.Now()
	defer func() { b.dbTime += time.Since(t0) }()
	var q sqlx.QueryerContext = s.db
	var tx *sqlx.Tx
	if len(groups) > 1 || commitHookFrom(ctx) != nil {
		var err error
		if tx, err = s.db.BeginTxx(ctx, nil); err != nil {
			return nil, 0, 0, MapError(sc, entity, err)
		}
		defer tx.Rollback()
		q = tx
	}
	var n, created int
	var events []string
	outs := make([][]byte, len(groups))
	for i, g := range groups {
		var gn, gc int
		var ev sql.NullString
		if err := q.QueryRowxContext(ctx, g.sql, g.args...).Scan(&gn, &gc, &outs[i], &ev); err != nil {
			return nil, 0, 0, MapError(sc, entity, err)
		}
		n, created = n+gn, created+gc
		if ev.Valid {
			events = append(events, ev.String)
		}
	}
	if tx != nil {
		if err := s.commit(ctx, tx); err != nil {
			return nil, 0, 0, commitError(ctx, sc, entity, err)
		}
	}
	s.announce(sc.TenantID, strings.Join(events, ","))
	if len(groups) == 1 {
		return outs[0], n, created, nil
	}
	merged := make([]json.RawMessage, total)
	for i, g := range groups {
		var list []json.RawMessage
		if err := json.Unmarshal(outs[i], &list); err != nil || len(list) != len(g.index) {
			return nil, 0, 0, apperr.New(apperr.Internal, "upsert returned %d records for %d items", len(list), len(g.index))
		}
		for k, idx := range g.index {
			merged[idx] = list[k]
		}
	}
	out, err := json.Marshal(merged)
	if err != nil {
		return nil, 0, 0, apperr.Wrap(err, "encode upsert result")
	}
	return out, n, created, nil
}

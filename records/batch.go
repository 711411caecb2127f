package records

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

// Batches (docs/rest.md, Batches). Every item is validated first (types,
// required fields, unknown fields, ids, duplicates inside the batch, unique
// values already stored, FILE references, records to update or delete
// existing); any failure rejects the whole batch before a write. The writes
// are then one statement in one transaction: a multi-row INSERT ... SELECT
// FROM unnest(...) (or UPDATE ... FROM unnest, DELETE ... = ANY) whose
// data-modifying CTE also inserts one entity event per written record into
// the dds.events outbox, so a batch of n items emits n events exactly when
// it commits.

// MaxBatch is the largest batch a request may carry.
const MaxBatch = 1000

// BatchResult is the batch result: successful and failed items (docs/rest.md, Batches).
type BatchResult struct {
	Successful   json.RawMessage `json:"successful"`
	Failed       []BatchFailure  `json:"failed"`
	TotalCount   int             `json:"totalCount"`
	SuccessCount int             `json:"successCount"`
	FailureCount int             `json:"failureCount"`
	Stats        BatchStats      `json:"stats"`
}

// BatchFailure is one rejected item.
type BatchFailure struct {
	Index int        `json:"index"`
	Item  any        `json:"item"`
	Error BatchError `json:"error"`
}

// BatchError is the error of one item: the first problem in code, message
// and field; every field problem of the item in details.
type BatchError struct {
	Code    apperr.Code         `json:"code"`
	Message string              `json:"message"`
	Field   string              `json:"field,omitempty"`
	Details []apperr.FieldError `json:"details,omitempty"`
}

// BatchStats are wall-clock timings in milliseconds.
type BatchStats struct {
	ProcessingTimeMs float64 `json:"processingTimeMs"`
	ValidationTimeMs float64 `json:"validationTimeMs"`
	DatabaseTimeMs   float64 `json:"databaseTimeMs"`
}

// Rejected reports whether the batch was refused (nothing was written).
func (r *BatchResult) Rejected() bool { return r.FailureCount > 0 }

// BatchUpdateItem is one item of a batch update.
type BatchUpdateItem struct {
	ID   any            `json:"id"`
	Data map[string]any `json:"data"`
	Raw  any            `json:"-"` // the item as sent, echoed in failures
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

type batch struct {
	res     *BatchResult
	start   time.Time
	dbTime  time.Duration
	checked time.Time
}

func newBatch(n int) *batch {
	return &batch{res: &BatchResult{TotalCount: n, Successful: json.RawMessage("[]"), Failed: []BatchFailure{}}, start: time.Now()}
}

func (b *batch) fail(i int, item any, err error) {
	e := apperr.As(err)
	be := BatchError{Code: e.Code, Message: e.Message, Details: e.Details}
	if len(e.Details) > 0 {
		be.Field = e.Details[0].Field
	}
	if e.Code == apperr.Internal {
		be.Message = "internal error"
	}
	b.res.Failed = append(b.res.Failed, BatchFailure{Index: i, Item: item, Error: be})
}

func (b *batch) fieldFail(i int, item any, errs []apperr.FieldError) {
	b.fail(i, item, apperr.Fields(errs))
}

// done finishes the timings; failures reject everything.
func (b *batch) done(successful json.RawMessage, n int) *BatchResult {
	if len(b.res.Failed) > 0 {
		slices.SortStableFunc(b.res.Failed, func(x, y BatchFailure) int { return cmp.Compare(x.Index, y.Index) })
		b.res.FailureCount = len(b.res.Failed)
		b.res.SuccessCount = 0
	} else {
		b.res.Successful = successful
		b.res.SuccessCount = n
	}
	if b.checked.IsZero() {
		b.checked = time.Now()
	}
	b.res.Stats = BatchStats{
		ProcessingTimeMs: ms(time.Since(b.start)),
		ValidationTimeMs: ms(b.checked.Sub(b.start) - b.dbTime),
		DatabaseTimeMs:   ms(b.dbTime),
	}
	if b.res.Stats.ValidationTimeMs < 0 {
		b.res.Stats.ValidationTimeMs = 0
	}
	return b.res
}

func checkSize(n int, what string) error {
	if n == 0 {
		return apperr.Field(what, "must hold at least one item")
	}
	if n > MaxBatch {
		return apperr.Field(what, "holds %d items; a batch holds at most %d", n, MaxBatch)
	}
	return nil
}

// BatchCreate validates and inserts items (objects of fields) atomically.
// A rejected batch returns a result with failures and a nil error.
func (s *Store) BatchCreate(ctx context.Context, sc *Scope, entity string, items []any) (*BatchResult, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(items), "items"); err != nil {
		return nil, err
	}
	b := newBatch(len(items))
	rows := make([]Row, len(items))
	for i, it := range items {
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
		row, errs := Prepare(e, obj, Create)
		if len(errs) > 0 {
			if nestedKeys(sc.Schema.Def, e, obj) { // relationship fields: nested.go
				return s.batchCreateNested(ctx, sc, e, items)
			}
			b.fieldFail(i, it, errs)
			continue
		}
		rows[i] = row
	}
	if !s.checkStored(ctx, sc, e, items, rows, nil, b) {
		return b.done(nil, 0), nil
	}

	ids := make([]string, len(rows))
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	var a query.Args
	ins, err := insertCTE(sc, e, &a, "w", ids, rows)
	if err != nil {
		return nil, err
	}
	h, from := sc.actorCTE(e, &a)
	q := fmt.Sprintf(`WITH %s,
e AS (%s)%s
SELECT count(*), coalesce(json_agg(w ORDER BY w."id"), '[]'::json), `+outbox.EventIDs+` FROM w%s`,
		ins, outbox.InsertCTE(&a, sc.Origin(), outbox.EntityCreated, e.Name, "w"), h, from)
	var lock *lockIDs
	if wr := sc.compiler.WriteRules(e.Name); wr != nil && wr.CreateCheck != nil { // rulewrites.go
		lock = &lockIDs{ids: ids, raws: items, created: true}
		lock.after = func(ctx context.Context, tx *sqlx.Tx, b *batch) error {
			return sc.checkItems(ctx, tx, e, wr.CreateCheck, "create.check", ids, items, b)
		}
	}
	out, n, err := s.batchTx(ctx, sc, e.Name, b, lock, q, a.List())
	if err != nil {
		return nil, err
	}
	return b.done(sc.redactList(e.Name, out), n), nil
}

// insertCTE renders the CTE name inserting rows of e with ids (UUIDv7,
// made in item order, so ordering by id is item order): a multi-row
// INSERT ... SELECT FROM unnest(...) WITH ORDINALITY returning every
// column. Columns are id plus the union of the fields any row sets; a row
// that does not set a field binds NULL there, which is its column default
// (Prepare already applied declared defaults).
func insertCTE(sc *Scope, e *schema.Entity, a *query.Args, name string, ids []string, rows []Row) (string, error) {
	fields, used := unionFields(rows)
	cols := make([][]pgtype.Text, len(fields))
	for j := range cols {
		cols[j] = make([]pgtype.Text, len(rows))
	}
	for i, r := range rows {
		for k, f := range r.Fields {
			t, ok, err := textValue(r.Values[k])
			if err != nil {
				return "", apperr.Wrap(err, "encode batch value")
			}
			cols[used[f]][i] = pgtype.Text{String: t, Valid: ok}
		}
	}
	names := []string{`"id"`}
	unnest := []string{a.Add(ids, "text[]")}
	sel := []string{`u.c0::uuid`}
	for j, f := range fields {
		names = append(names, schema.Ident(f.Name))
		unnest = append(unnest, a.Add(cols[j], "text[]"))
		sel = append(sel, fmt.Sprintf("u.c%d::%s", j+1, schema.ColumnType(f)))
	}
	aliases := make([]string, len(unnest))
	for j := range aliases {
		aliases[j] = fmt.Sprintf("c%d", j)
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	return fmt.Sprintf(`%s AS (INSERT INTO %s AS t (%s) SELECT %s FROM unnest(%s) WITH ORDINALITY AS u(%s, ord) ORDER BY u.ord RETURNING %s)`,
		name, sc.compiler.Table(e.Name), strings.Join(names, ", "), strings.Join(sel, ", "), strings.Join(unnest, ", "),
		strings.Join(aliases, ", "), strings.Join(ret, ", ")), nil
}

// BatchUpdate validates and patches items atomically: each item's data
// changes only the fields it names (PATCH semantics).
func (s *Store) BatchUpdate(ctx context.Context, sc *Scope, entity string, items []BatchUpdateItem) (*BatchResult, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(items), "items"); err != nil {
		return nil, err
	}
	b := newBatch(len(items))
	rows := make([]Row, len(items))
	ids := make([]string, len(items))
	raws := make([]any, len(items))
	seen := map[string]int{}
	for i, it := range items {
		raws[i] = it.Raw
		id, ok := b.itemID(i, it.ID, it.Raw, seen)
		if !ok {
			continue
		}
		if it.Data == nil {
			b.fail(i, it.Raw, apperr.Field("data", "is required (an object of the fields to change)"))
			continue
		}
		if err := checkWritable(e, sc.compiler.WriteRules(e.Name), it.Data); err != nil { // rulewrites.go
			b.fail(i, it.Raw, err)
			continue
		}
		row, errs := Prepare(e, it.Data, Patch)
		if len(errs) > 0 {
			b.fieldFail(i, it.Raw, errs)
			continue
		}
		ids[i], rows[i] = id, row
	}
	if !s.checkStored(ctx, sc, e, raws, rows, ids, b) {
		return b.done(nil, 0), nil
	}

	fields, used := unionFields(rows)
	vals := make([][]pgtype.Text, len(fields))
	set := make([][]bool, len(fields))
	for j := range fields {
		vals[j] = make([]pgtype.Text, len(rows))
		set[j] = make([]bool, len(rows))
	}
	for i, r := range rows {
		for k, f := range r.Fields {
			t, ok, err := textValue(r.Values[k])
			if err != nil {
				return nil, apperr.Wrap(err, "encode batch value")
			}
			vals[used[f]][i] = pgtype.Text{String: t, Valid: ok}
			set[used[f]][i] = true
		}
	}
	var a query.Args
	idArg := a.Add(ids, "text[]")
	unnest := []string{idArg}
	aliases := []string{"id"}
	sets := []string{`"updatedAt" = now()`}
	for j, f := range fields {
		unnest = append(unnest, a.Add(vals[j], "text[]"), a.Add(set[j], "boolean[]"))
		aliases = append(aliases, fmt.Sprintf("v%d", j), fmt.Sprintf("p%d", j))
		sets = append(sets, fmt.Sprintf("%s = CASE WHEN u.p%d THEN u.v%d::%s ELSE t.%s END", schema.Ident(f.Name), j, j, schema.ColumnType(f), schema.Ident(f.Name)))
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	h, from := sc.actorCTE(e, &a)
	q := fmt.Sprintf(`WITH w AS (UPDATE %s AS t SET %s FROM unnest(%s) AS u(%s) WHERE %s RETURNING %s),
e AS (%s)%s
SELECT count(*), coalesce(json_agg(w ORDER BY array_position(%s, w."id"::text)), '[]'::json), `+outbox.EventIDs+` FROM w%s`,
		sc.compiler.Table(e.Name), strings.Join(sets, ", "), strings.Join(unnest, ", "), strings.Join(aliases, ", "),
		andLive(`t."id" = u.id::uuid`, sc.compiler.Live(e.Name, "t")),
		strings.Join(ret, ", "), outbox.InsertCTE(&a, sc.Origin(), outbox.EntityUpdated, e.Name, "w"), h, idArg, from)
	// No fileFields: the updated records still hold their files.
	lock := &lockIDs{ids: ids, raws: raws}
	sc.batchRules(e, lock, "update") // rulewrites.go
	out, n, err := s.batchTx(ctx, sc, e.Name, b, lock, q, a.List())
	if err != nil {
		return nil, err
	}
	return b.done(sc.redactList(e.Name, out), n), nil
}

// BatchDelete deletes records by id atomically.
func (s *Store) BatchDelete(ctx context.Context, sc *Scope, entity string, rawIDs []any) (*BatchResult, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if err := checkSize(len(rawIDs), "ids"); err != nil {
		return nil, err
	}
	b := newBatch(len(rawIDs))
	ids := make([]string, len(rawIDs))
	raws := make([]any, len(rawIDs))
	seen := map[string]int{}
	for i, raw := range rawIDs {
		raws[i] = map[string]any{"id": raw}
		ids[i], _ = b.itemID(i, raw, raws[i], seen)
	}
	if len(b.res.Failed) > 0 {
		return b.done(nil, 0), nil
	}
	b.checked = time.Now()
	var a query.Args
	idArg := a.Add(ids, "text[]")
	ret, _ := sc.compiler.Columns(e, nil, "t")
	write := fmt.Sprintf(`DELETE FROM %s AS t WHERE t."id" = ANY(%s::uuid[])`, sc.compiler.Table(e.Name), idArg)
	fileFields := e.FileFields()
	if e.SoftDelete { // only marked: edges and files stay, for a restore
		write = fmt.Sprintf(`UPDATE %s AS t SET %s = now() WHERE t."id" = ANY(%s::uuid[]) AND %s`, sc.compiler.Table(e.Name),
			schema.Ident(schema.ColDeletedAt), idArg, sc.compiler.Live(e.Name, "t"))
		fileFields = nil
	}
	h, from := sc.actorCTE(e, &a)
	q := fmt.Sprintf(`WITH w AS (%s RETURNING %s),
e AS (%s)%s
SELECT count(*), coalesce(json_agg(w ORDER BY array_position(%s, w."id"::text)), '[]'::json), `+outbox.EventIDs+` FROM w%s`,
		write, strings.Join(ret, ", "), outbox.InsertCTE(&a, sc.Origin(), outbox.EntityDeleted, e.Name, "w"), h, idArg, from)
	lock := &lockIDs{ids: ids, raws: raws, fileFields: fileFields}
	sc.batchRules(e, lock, "delete") // rulewrites.go
	out, n, err := s.batchTx(ctx, sc, e.Name, b, lock, q, a.List())
	if err != nil {
		return nil, err
	}
	return b.done(sc.redactList(e.Name, out), n), nil
}

// unionFields lists every field any row sets, in first-seen order, with
// each field's position in that list.
func unionFields(rows []Row) ([]*schema.Field, map[*schema.Field]int) {
	used := map[*schema.Field]int{}
	var fields []*schema.Field
	for _, r := range rows {
		for _, f := range r.Fields {
			if _, ok := used[f]; !ok {
				used[f] = len(fields)
				fields = append(fields, f)
			}
		}
	}
	return fields, used
}

// lockIDs are the records an update/delete batch needs: locked FOR UPDATE
// inside the batch transaction, any missing one fails its item.
type lockIDs struct {
	ids  []string
	raws []any
	// fileFields, on a delete, are the FILE fields whose files go with the
	// deleted records (marked in the transaction, purged after commit).
	fileFields []string
	// rule, when set, is the rules' condition on the locked records
	// (readable, and matching update.where or delete): a record outside it
	// fails its item as missing. after, when set, runs after the write in
	// its transaction and fails the items whose records break a check.
	rule  func(a *query.Args) (string, error)
	after func(ctx context.Context, tx *sqlx.Tx, b *batch) error
	// created: the ids are of records the write creates (a batch create
	// under rules, whose after runs create.check): nothing to lock.
	created bool
}

// batchTx runs the write in one transaction. With lock, the records are
// first locked and checked to exist; a missing record fails its item
// (NOT_FOUND) and the transaction is rolled back without writing.
func (s *Store) batchTx(ctx context.Context, sc *Scope, entity string, b *batch, lock *lockIDs, q string, args []any) (json.RawMessage, int, error) {
	t0 := time.Now()
	defer func() { b.dbTime += time.Since(t0) }()
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, 0, MapError(sc, entity, err)
	}
	defer tx.Rollback()
	if lock != nil && !lock.created {
		var found []string
		var la query.Args
		w := andLive(`t."id" = ANY(`+la.Add(schema.ArrayLiteral(lock.ids), "uuid[]")+`)`, sc.compiler.Live(entity, "t"))
		if lock.rule != nil {
			r, err := lock.rule(&la)
			if err != nil {
				return nil, 0, err
			}
			w = andLive(w, r)
		}
		if err := tx.SelectContext(ctx, &found, fmt.Sprintf(`SELECT t."id"::text FROM %s t WHERE %s ORDER BY t."id" FOR UPDATE`, sc.compiler.Table(entity), w),
			sc.bind(la.List())...); err != nil {
			return nil, 0, MapError(sc, entity, err)
		}
		have := make(map[string]bool, len(found))
		for _, id := range found {
			have[id] = true
		}
		for i, id := range lock.ids {
			if !have[id] {
				b.fail(i, lock.raws[i], apperr.New(apperr.NotFound, "%s %q not found", entity, id))
			}
		}
		if len(b.res.Failed) > 0 {
			return nil, 0, nil
		}
	}
	var n int
	var out []byte
	var events sql.NullString
	if err := tx.QueryRowContext(ctx, q, args...).Scan(&n, &out, &events); err != nil {
		return nil, 0, MapError(sc, entity, err)
	}
	if lock != nil && lock.after != nil {
		if err := lock.after(ctx, tx, b); err != nil {
			return nil, 0, err
		}
		if len(b.res.Failed) > 0 { // rolled back: nothing written
			return nil, 0, nil
		}
	}
	var fileIDs []string
	if lock != nil && len(lock.fileFields) > 0 && s.files != nil {
		var deleted []json.RawMessage
		if err := json.Unmarshal(out, &deleted); err != nil {
			return nil, 0, apperr.Wrap(err, "read deleted records")
		}
		for _, rec := range deleted {
			fileIDs = append(fileIDs, FileIDs(rec, lock.fileFields)...)
		}
		if err := s.files.MarkDeleted(ctx, tx, sc.TenantID, fileIDs); err != nil {
			return nil, 0, err
		}
	}
	if err := s.commit(ctx, tx); err != nil {
		return nil, 0, commitError(ctx, sc, entity, err)
	}
	s.announce(sc.TenantID, events.String)
	if len(fileIDs) > 0 {
		s.files.PurgeDeleted(ctx, sc.TenantID, fileIDs)
	}
	return out, n, nil
}

// itemID parses the record id v of item i (sent as item) and checks it is
// not already in the batch (seen maps ids to their index); a bad or
// repeated id fails the item.
func (b *batch) itemID(i int, v, item any, seen map[string]int) (string, bool) {
	s, ok := v.(string)
	if !ok || s == "" {
		b.fail(i, item, apperr.Field("id", "is required (the record id string)"))
		return "", false
	}
	u, err := uuid.Parse(s)
	if err != nil {
		b.fail(i, item, apperr.Field("id", "must be a record id (UUID)"))
		return "", false
	}
	id := u.String()
	if j, dup := seen[id]; dup {
		b.fail(i, item, apperr.Field("id", "appears more than once in the batch (also at index %d)", j))
		return "", false
	}
	seen[id] = i
	return id, true
}

func failedSet(f []BatchFailure) map[int]bool {
	m := make(map[int]bool, len(f))
	for _, x := range f {
		m[x.Index] = true
	}
	return m
}

// checkUnique fails items whose unique field values repeat inside the batch
// or already belong to another stored record (for updates: a record not
// updated by this batch). The database constraint stays the last word
// under concurrency (409).
func (s *Store) checkUnique(ctx context.Context, sc *Scope, e *schema.Entity, items []any, rows []Row, failed map[int]bool, ids []string, b *batch) {
	for fi := range e.Fields {
		f := &e.Fields[fi]
		if !f.Unique {
			continue
		}
		first := map[string]int{}
		var vals []string
		var idx []int
		for i, r := range rows {
			if failed[i] {
				continue
			}
			for k, rf := range r.Fields {
				if rf != f || r.Values[k] == nil {
					continue
				}
				t, _, _ := textValue(r.Values[k])
				if j, dup := first[t]; dup {
					b.fail(i, items[i], apperr.Field(f.Name, "must be unique: the same value is at index %d of the batch", j))
					failed[i] = true
					continue
				}
				first[t] = i
				vals = append(vals, t)
				idx = append(idx, i)
			}
		}
		if len(vals) == 0 {
			continue
		}
		t0 := time.Now()
		var taken []string
		q := fmt.Sprintf(`SELECT DISTINCT t.%s::text FROM %s t WHERE t.%s = ANY($1::%s[])`, schema.Ident(f.Name), sc.compiler.Table(e.Name), schema.Ident(f.Name), schema.ColumnType(f))
		args := []any{schema.ArrayLiteral(vals)}
		if ids != nil {
			q += ` AND NOT (t."id" = ANY($2::uuid[]))`
			var mine []string
			for _, id := range ids {
				if id != "" {
					mine = append(mine, id)
				}
			}
			args = append(args, schema.ArrayLiteral(mine))
		}
		err := s.db.SelectContext(ctx, &taken, q, args...)
		b.dbTime += time.Since(t0)
		if err != nil {
			continue // the constraint will decide
		}
		// Compare in the column's own text form.
		tk := map[string]bool{}
		for _, v := range taken {
			tk[v] = true
		}
		for n, v := range vals {
			if tk[v] || tk[canonical(f, v)] {
				i := idx[n]
				b.fail(i, items[i], &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("%s: a %s with this value already exists", f.Name, e.Name),
					Details: []apperr.FieldError{{Field: f.Name, Message: "must be unique"}}})
			}
		}
	}
}

// canonical is a bound text value in Postgres' output form where they may
// differ (numbers).
func canonical(f *schema.Field, v string) string {
	if f.Type == schema.Number {
		if x, err := strconv.ParseFloat(v, 64); err == nil {
			return strconv.FormatFloat(x, 'f', -1, 64)
		}
	}
	return v
}

// checkStored runs the checks that need the database once every item passed
// validation: unique values (against the batch and stored records; ids are
// the records an update batch rewrites, nil for a create), then FILE
// references. It reports whether the batch may be written, and starts the
// write clock.
func (s *Store) checkStored(ctx context.Context, sc *Scope, e *schema.Entity, items []any, rows []Row, ids []string, b *batch) bool {
	s.checkUnique(ctx, sc, e, items, rows, failedSet(b.res.Failed), ids, b)
	if len(b.res.Failed) == 0 {
		s.checkFiles(ctx, sc, rows, items, b)
	}
	if len(b.res.Failed) > 0 {
		return false
	}
	b.checked = time.Now()
	return true
}

// checkFiles verifies every FILE reference in one call; on failure it
// re-checks item by item to name the failing items.
func (s *Store) checkFiles(ctx context.Context, sc *Scope, rows []Row, items []any, b *batch) {
	var all []string
	for _, r := range rows {
		all = append(all, r.Files...)
	}
	if len(all) == 0 {
		return
	}
	t0 := time.Now()
	defer func() { b.dbTime += time.Since(t0) }()
	if s.VerifyFiles(ctx, sc, all) == nil {
		return
	}
	for i, r := range rows {
		if len(r.Files) == 0 {
			continue
		}
		if err := s.VerifyRowFiles(ctx, sc, r); err != nil {
			b.fail(i, items[i], err)
		}
	}
}

// TextValue renders a coerced value (schema.CoerceValue's result) in the
// text form Postgres parses for the column type; ok is false for NULL.
// Imports stage their rows in this form.
func TextValue(v any) (string, bool, error) { return textValue(v) }

// textValue renders a coerced value (schema.CoerceValue's result) in the
// text form Postgres parses for the column type; ok is false for NULL.
func textValue(v any) (string, bool, error) {
	if v == nil {
		return "", false, nil
	}
	if dv, isValuer := v.(driver.Valuer); isValuer {
		x, err := dv.Value()
		if err != nil {
			return "", false, err
		}
		if x == nil {
			return "", false, nil
		}
		v = x
	}
	switch x := v.(type) {
	case string:
		return x, true, nil
	case []byte:
		return string(x), true, nil
	case int64:
		return strconv.FormatInt(x, 10), true, nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true, nil
	case bool:
		return strconv.FormatBool(x), true, nil
	case time.Time:
		return x.Format(time.RFC3339Nano), true, nil
	}
	return "", false, fmt.Errorf("unsupported value %T", v)
}

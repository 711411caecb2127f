// Package records is the only door to tenant tables: every surface (REST,
// GraphQL, Connect, the live feed, jobs) hands it a plan and a principal,
// and no other package compiles or runs SQL on a tenant's tables. A Scope
// is resolved for a principal (its tenant's active schema, the principal
// itself); every statement is compiled here against it, so no handler can
// reach another tenant's tables, and every cache of compiled SQL is keyed
// by what the statement depends on (Kept, stmtCache). Each write and its
// outbox event are one SQL statement, so no committed write lacks its event.
package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Files is what records needs of the file service: FILE field values must
// name confirmed files of the tenant, and deleting a record deletes the
// files it holds, durably (marked in the delete's transaction, purged after
// commit; the worker's sweeper finishes a purge a crash interrupted).
// Declared here, where it is consumed; implemented by package files.
type Files interface {
	VerifyConfirmed(ctx context.Context, tenantID string, ids []string) error
	MarkDeleted(ctx context.Context, tx sqlx.ExecerContext, tenantID string, ids []string) error
	PurgeDeleted(ctx context.Context, tenantID string, ids []string)
}

// Store reads and writes records.
type Store struct {
	db        *sqlx.DB
	replicas  *db.Replicas // where reads may go (replicas.go); nil: the primary
	schemas   *schema.Service
	files     Files
	events    *pgnotify.Publisher
	observe   func(query.Statement) // see Observed; nil in production
	efSearch  int                   // the connections' hnsw.ef_search; 0: db.DefaultVectorEfSearch
	timeout   time.Duration         // each request statement's deadline (budget.go); 0: none
	rowBudget int64                 // the row budget of lists and aggregates (budget.go); 0: none
	// compilerKey names the scope's compiler among the schema version's
	// memos, and stmtKey its statement cache; both depend on efSearch and
	// are built once, not per request.
	compilerKey, stmtKey string
	rules                RuleSource // the roles' rules (rules.go); nil: none enforced
}

// Option configures a Store.
type Option func(*Store)

// WithEventNotifications makes the store announce the committed events on
// outbox.Channel through p, after commit: p gathers the ids of a tenant
// into one "<tenant id>:<id>,<id>,..." notification per flush.
func WithEventNotifications(p *pgnotify.Publisher) Option {
	return func(s *Store) { s.events = p }
}

// WithVectorEfSearch tells the store its connections run with
// hnsw.ef_search = ef (the value given to db.WithVectorEfSearch), so vector
// searches that need no other candidate list size run without SET LOCAL.
func WithVectorEfSearch(ef int) Option {
	return func(s *Store) { s.efSearch = ef }
}

// NewStore returns a store. files may be nil (FILE fields then only need a
// well-formed id, and deleting a record leaves its files).
func NewStore(db *sqlx.DB, schemas *schema.Service, files Files, opts ...Option) *Store {
	s := &Store{db: db, schemas: schemas, files: files}
	for _, o := range opts {
		o(s)
	}
	s.compilerKey = fmt.Sprintf("query.Compiler/ef=%d", s.efSearch)
	s.stmtKey = fmt.Sprintf("records.stmtCache/ef=%d", s.efSearch)
	return s
}

// announce publishes the events (a comma-separated id list, as the write
// statements return it) of a committed write.
func (s *Store) announce(tenantID, eventIDs string) {
	if s.events == nil || eventIDs == "" {
		return
	}
	if !strings.Contains(eventIDs, ",") { // one write, one event: no list to split
		s.events.PublishList(outbox.Channel, tenantID, eventIDs)
		return
	}
	s.events.PublishList(outbox.Channel, tenantID, strings.Split(eventIDs, ",")...)
}

// Mode says how input fields are interpreted.
type Mode int

// Write modes.
const (
	Create  Mode = iota // absent fields take their default; required must be present
	Replace             // PUT: absent fields become null (or their default)
	Patch               // only present fields change
)

// Row is validated input: columns and the values to bind to them.
type Row struct {
	Fields     []*schema.Field
	Values     []any
	Files      []string // FILE ids to verify
	FileFields []string // the field holding each of Files
}

// Prepare validates input against e for mode and returns every problem.
// System fields (id, createdAt, updatedAt) in the input are ignored, so a
// client may send back a record it read.
func Prepare(e *schema.Entity, input map[string]any, mode Mode) (Row, []apperr.FieldError) {
	n := len(e.Fields)
	if mode == Patch {
		n = min(n, len(input))
	}
	row := Row{Fields: make([]*schema.Field, 0, n), Values: make([]any, 0, n)}
	var errs []apperr.FieldError
	for name := range input {
		if _, ok := e.Field(name); !ok && !schema.IsReserved(name) {
			errs = append(errs, apperr.FieldError{Field: name, Message: fmt.Sprintf("unknown field on %s", e.Name)})
		}
	}
	// Map order is random: sort the (rare) unknown-field errors so the
	// response is stable, without sorting every valid input.
	slices.SortFunc(errs, func(a, b apperr.FieldError) int { return strings.Compare(a.Field, b.Field) })
	for i := range e.Fields {
		f := &e.Fields[i]
		v, present := input[f.Name]
		if !present {
			switch {
			case mode == Patch:
				continue
			case f.Default != nil:
				v = f.Default
			case f.Required:
				errs = append(errs, apperr.FieldError{Field: f.Name, Message: "is required"})
				continue
			case mode == Create:
				continue
			}
		}
		if v == nil && f.Required {
			errs = append(errs, apperr.FieldError{Field: f.Name, Message: "is required and cannot be null"})
			continue
		}
		c, err := schema.CoerceValue(f, v)
		if err != nil {
			errs = append(errs, apperr.FieldError{Field: f.Name, Message: err.Error()})
			continue
		}
		if f.Type == schema.File && c != nil {
			row.Files = append(row.Files, c.(string))
			row.FileFields = append(row.FileFields, f.Name)
		}
		row.Fields = append(row.Fields, f)
		row.Values = append(row.Values, c)
	}
	return row, errs
}

// VerifyFiles checks FILE references of rows written by sc's principal:
// confirmed files of its tenant and, under row rules, files it may reach
// (filerules.go).
func (s *Store) VerifyFiles(ctx context.Context, sc *Scope, ids []string) error {
	if s.files == nil || len(ids) == 0 {
		return nil
	}
	if err := s.files.VerifyConfirmed(ctx, sc.TenantID, ids); err != nil {
		return err
	}
	return s.verifyReach(ctx, sc, ids)
}

// VerifyRowFiles checks a row's FILE references and names the entity field
// holding a bad one (the file service names the file id).
func (s *Store) VerifyRowFiles(ctx context.Context, sc *Scope, row Row) error {
	err := s.VerifyFiles(ctx, sc, row.Files)
	if err == nil { // declared after this, ae (whose address errors.As takes) is not allocated per write
		return nil
	}
	var ae *apperr.Error
	if !errors.As(err, &ae) || ae.Code != apperr.Validation {
		return err
	}
	details := make([]apperr.FieldError, len(ae.Details))
	for i, d := range ae.Details {
		details[i] = d
		for j, id := range row.Files {
			if id == d.Field {
				details[i] = apperr.FieldError{Field: row.FileFields[j], Message: fmt.Sprintf("file %s %s", id, d.Message)}
			}
		}
	}
	return apperr.Fields(details)
}

// Origin is where the scope's events come from.
func (sc *Scope) Origin() outbox.Origin {
	return outbox.Origin{TenantID: sc.TenantID, SchemaID: sc.Schema.ID, SchemaName: sc.Schema.Name}
}

// Get reads one record.
func (s *Store) Get(ctx context.Context, sc *Scope, entity, id string, sel query.Selection) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	var st query.Statement
	key := ""
	if len(sel.Nested) == 0 && len(sel.Files) == 0 && len(sel.Aggregates) == 0 && sel.Output == nil { // the key names the fields, nothing else
		key = "get\x00" + entity + "\x00" + strings.Join(sel.Fields, ",")
	}
	if text, params, ok := sc.stmts().getParams(key); ok {
		pid, err := query.ParseID(entity, id)
		if err != nil {
			return nil, err
		}
		st = query.Statement{SQL: text, Args: withID(pid, params)}
	} else {
		var err error
		if st, err = sc.compiler.Get(entity, id, sel); err != nil {
			return nil, err
		}
		// The id is the only value, besides the rule variables bound per
		// principal: the text is reusable.
		if key != "" && len(st.Args) >= 1 && query.OnlyParams(st.Args[1:]) {
			sc.stmts().putParams(key, st.SQL, st.Args[1:])
		}
	}
	if s.observe != nil {
		s.observe(st)
	}
	var out []byte
	err := s.read(ctx, func(q *sqlx.DB) (bool, error) {
		return false, q.QueryRowContext(ctx, st.SQL, sc.bind(st.Args)...).Scan(&out)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "%s %q not found", entity, id)
	}
	if err != nil {
		return nil, MapError(sc, entity, err)
	}
	return out, nil
}

// Create inserts a record and its entity.created event in one statement.
func (s *Store) Create(ctx context.Context, sc *Scope, entity string, input map[string]any) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	wr := sc.compiler.WriteRules(e.Name) // rulewrites.go
	if wr != nil {
		if err := checkWritable(e, wr, input); err != nil {
			return nil, err
		}
		input = sc.withPresets(wr, input)
	}
	row, errs := Prepare(e, input, Create)
	if len(errs) > 0 && nestedKeys(sc.Schema.Def, e, input) { // relationship fields: nested.go
		return s.createNested(ctx, sc, e, input)
	}
	if err := apperr.Fields(errs); err != nil {
		return nil, err
	}
	if err := s.VerifyRowFiles(ctx, sc, row); err != nil {
		return nil, err
	}
	if wr != nil {
		return s.createRuled(ctx, sc, e, row, wr)
	}
	// Bind order: id, event id, the present fields, then
	// outbox.InsertOneCTE's five values (the same for every create of the
	// entity, boxed once).
	cache := sc.stmts()
	tail := cache.tail(e.Name, func() []any {
		return []any{sc.TenantID, sc.Schema.ID, sc.Schema.Name, outbox.EntityCreated, e.Name}
	})
	eventID := outbox.NewEventID()
	args := make([]any, 0, 2+len(row.Values)+len(tail))
	args = append(args, uuid.Must(uuid.NewV7()).String(), eventID)
	args = append(args, row.Values...)
	args = append(args, tail...)
	if e.History {
		args = append(args, sc.actor(), e.Name) // historyCreateCTE's two
	}
	// The text depends on the entity and the fields present: the key is
	// built in a stack buffer and only copied into a string when the text is
	// new.
	var kb [256]byte
	key := append(kb[:0], "create\x00"...)
	key = append(key, e.Name...)
	key = append(key, 0)
	for i, f := range row.Fields {
		if i > 0 {
			key = append(key, ',')
		}
		key = append(key, f.Name...)
	}
	sqlText, ok := cache.lookup(key)
	if !ok {
		var a query.Args
		sqlText = CreateSQL(sc, e, row.Fields, &a)
		if len(a.List()) != len(args) {
			panic("records.Create: bind order out of step with the statement")
		}
		cache.put(string(key), sqlText)
	}
	out, err := s.one(ctx, sc, entity, "", sqlText, args, eventID)
	return sc.redact(entity, out), err
}

// CreateSQL is the statement of Create for a record of e with fields
// present: one data-modifying CTE inserting the row with every value bound
// and cast to its column type, one inserting its entity.created event
// (outbox.InsertOneCTE), for an entity with history one inserting its
// first version (historyCreateCTE), and row_to_json of the inserted row.
// It adds its placeholders to a, in the order they bind: record id, event
// id, the fields' values, the outbox's five, then for history the actor
// and the entity's name (the record's slots hold nil in a: only their
// placeholders and order matter). Exported for the benchmark's minimal
// handler, which must run the very statement DDS runs.
func CreateSQL(sc *Scope, e *schema.Entity, fields []*schema.Field, a *query.Args) string {
	cols := []string{`"id"`}
	id := a.Add(nil, "uuid")
	if e.History {
		// The id's own expression tells the create trigger to skip this
		// row, before the row is inserted (schema.HistoryOwnSetting).
		id = fmt.Sprintf("set_config('%s', %s::text, true)::uuid", schema.HistoryOwnSetting, id)
	}
	vals := []string{id}
	eventArg := a.Add(nil, "uuid")
	for _, f := range fields {
		cols = append(cols, schema.Ident(f.Name))
		vals = append(vals, a.Add(nil, schema.ColumnType(f)))
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	ev := outbox.InsertOneCTE(a, eventArg, sc.Origin(), outbox.EntityCreated, e.Name, "w")
	h := historyCreateCTE(sc, e, a) // after the outbox's values: binds last
	return fmt.Sprintf("WITH w AS (INSERT INTO %s AS t (%s) VALUES (%s) RETURNING %s),\ne AS (%s)%s\nSELECT row_to_json(w) FROM w",
		sc.compiler.Table(e.Name), strings.Join(cols, ", "), strings.Join(vals, ", "), strings.Join(ret, ", "), ev, h)
}

// Update replaces (PUT) or merges (PATCH) a record and writes its
// entity.updated event in one statement.
func (s *Store) Update(ctx context.Context, sc *Scope, entity, id string, input map[string]any, mode Mode) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if id, err = query.ParseID(entity, id); err != nil {
		return nil, err
	}
	wr := sc.compiler.WriteRules(e.Name) // rulewrites.go
	if err := checkWritable(e, wr, input); err != nil {
		return nil, err
	}
	row, errs := Prepare(e, input, mode)
	if err := apperr.Fields(errs); err != nil {
		return nil, err
	}
	if err := s.VerifyRowFiles(ctx, sc, row); err != nil {
		return nil, err
	}
	var a query.Args
	idArg := a.Add(id, "uuid")
	eventID := outbox.NewEventID()
	eventArg := a.Add(eventID, "uuid")
	sets := []string{`"updatedAt" = now()`}
	for i, f := range row.Fields {
		sets = append(sets, schema.Ident(f.Name)+" = "+a.Add(row.Values[i], schema.ColumnType(f)))
	}
	if mode == Replace {
		for i := range e.Fields {
			f := &e.Fields[i]
			if !containsField(row.Fields, f) {
				sets = append(sets, schema.Ident(f.Name)+" = NULL")
			}
		}
	}
	ret, _ := sc.compiler.Columns(e, nil, "t")
	where := andLive(`t."id" = `+idArg, sc.compiler.Live(e.Name, "t"))
	var uw query.Filter
	if wr != nil {
		uw = wr.UpdateWhere
	}
	ruled, err := sc.ruleWhere(e, uw, "update.where", "t", &a) // hidden or not updatable: not found
	if err != nil {
		return nil, err
	}
	where = andLive(where, ruled)
	h, from := sc.actorCTE(e, &a)
	sqlText := fmt.Sprintf("WITH w AS (UPDATE %s AS t SET %s WHERE %s RETURNING %s),\ne AS (%s)%s\nSELECT row_to_json(w) FROM w%s",
		sc.compiler.Table(e.Name), strings.Join(sets, ", "), where, strings.Join(ret, ", "),
		outbox.InsertOneCTE(&a, eventArg, sc.Origin(), outbox.EntityUpdated, e.Name, "w"), h, from)
	args := sc.bind(a.List())
	if wr == nil || wr.UpdateCheck == nil {
		out, err := s.one(ctx, sc, entity, id, sqlText, args, eventID)
		return sc.redact(entity, out), err
	}
	// The record after the update must pass update.check: tested in the
	// write's transaction, which a failure rolls back.
	var out json.RawMessage
	err = s.inTx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if out, err = s.oneIn(ctx, tx, sc, entity, id, sqlText, args); err != nil {
			return err
		}
		return sc.checkUpdated(ctx, tx, e, wr, id)
	})
	if err != nil {
		return nil, err
	}
	s.announce(sc.TenantID, eventID)
	return sc.redact(entity, out), nil
}

func containsField(fs []*schema.Field, f *schema.Field) bool {
	for _, x := range fs {
		if x == f {
			return true
		}
	}
	return false
}

// Delete removes a record (its edges cascade) and writes entity.deleted,
// carrying the deleted record, in one statement.
func (s *Store) Delete(ctx context.Context, sc *Scope, entity, id string) error {
	_, err := s.DeleteReturning(ctx, sc, entity, id)
	return err
}

// DeleteReturning is Delete that also returns the deleted record.
func (s *Store) DeleteReturning(ctx context.Context, sc *Scope, entity, id string) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if id, err = query.ParseID(entity, id); err != nil {
		return nil, err
	}
	var a query.Args
	idArg := a.Add(id, "uuid")
	eventID := outbox.NewEventID()
	eventArg := a.Add(eventID, "uuid")
	ret, _ := sc.compiler.Columns(e, nil, "t")
	var dw query.Filter
	if wr := sc.compiler.WriteRules(e.Name); wr != nil {
		dw = wr.Delete
	}
	ruled, err := sc.ruleWhere(e, dw, "delete", "t", &a) // hidden or not deletable: not found (rulewrites.go)
	if err != nil {
		return nil, err
	}
	write := fmt.Sprintf(`DELETE FROM %s AS t WHERE %s`, sc.compiler.Table(e.Name), andLive(`t."id" = `+idArg, ruled))
	if e.SoftDelete { // only marked: its edges and files stay, for a restore
		write = fmt.Sprintf(`UPDATE %s AS t SET %s = now() WHERE %s AND %s`, sc.compiler.Table(e.Name),
			schema.Ident(schema.ColDeletedAt), andLive(`t."id" = `+idArg, ruled), sc.compiler.Live(e.Name, "t"))
	}
	h, from := sc.actorCTE(e, &a)
	sqlText := fmt.Sprintf("WITH w AS (%s RETURNING %s),\ne AS (%s)%s\nSELECT row_to_json(w) FROM w%s",
		write, strings.Join(ret, ", "), outbox.InsertOneCTE(&a, eventArg, sc.Origin(), outbox.EntityDeleted, e.Name, "w"), h, from)
	fileFields := e.FileFields()
	if s.files == nil || len(fileFields) == 0 || e.SoftDelete {
		out, err := s.one(ctx, sc, entity, id, sqlText, sc.bind(a.List()), eventID)
		return sc.redact(entity, out), err
	}
	// The record holds files: they are marked deleted in the same
	// transaction, and their objects purged after commit.
	tx, err := s.db.BeginTxx(ctx, nil)
	if err != nil {
		return nil, apperr.Wrap(err, "begin")
	}
	defer tx.Rollback()
	out, err := s.oneIn(ctx, tx, sc, entity, id, sqlText, sc.bind(a.List()))
	if err != nil {
		return nil, err
	}
	ids := FileIDs(out, fileFields)
	if err := s.files.MarkDeleted(ctx, tx, sc.TenantID, ids); err != nil {
		return nil, err
	}
	if err := s.commit(ctx, tx); err != nil {
		return nil, commitError(ctx, sc, entity, err)
	}
	s.announce(sc.TenantID, eventID)
	s.files.PurgeDeleted(ctx, sc.TenantID, ids)
	return sc.redact(entity, out), nil
}

// FileIDs returns the non-null values of fields in a record's JSON.
func FileIDs(record []byte, fields []string) []string {
	var m map[string]any
	if json.Unmarshal(record, &m) != nil {
		return nil
	}
	var ids []string
	for _, f := range fields {
		if id, ok := m[f].(string); ok {
			ids = append(ids, id)
		}
	}
	return ids
}

// one runs a single-record write (which commits by itself) and announces
// its event, eventID, once the write has found its row.
func (s *Store) one(ctx context.Context, sc *Scope, entity, id, sqlText string, args []any, eventID string) (json.RawMessage, error) {
	var out json.RawMessage
	err := s.write(ctx, func(q sqlx.QueryerContext) (err error) {
		out, err = s.oneIn(ctx, q, sc, entity, id, sqlText, args)
		return err
	})
	if err == nil {
		s.announce(sc.TenantID, eventID)
	}
	return out, err
}

// oneIn runs a single-record write in q and returns the record (a write
// that finds no row is NotFound); the caller announces its event once it
// has committed.
func (s *Store) oneIn(ctx context.Context, q sqlx.QueryerContext, sc *Scope, entity, id, sqlText string, args []any) (json.RawMessage, error) {
	var out []byte
	err := q.QueryRowxContext(ctx, sqlText, args...).Scan(&out)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "%s %q not found", entity, id)
	}
	if err != nil {
		return nil, MapError(sc, entity, err)
	}
	return out, nil
}

// limitError names the field whose value Postgres could not index. Values
// are capped before they reach Postgres (schema.ByteLimit); this is the
// backstop for what the caps cannot foresee, such as a tsvector that grows
// beyond 1 MB from text under the cap.
func limitError(e *schema.Entity, pe *pgconn.PgError, err error) error {
	var names []string
	if e != nil {
		for i := range e.Fields {
			f := &e.Fields[i]
			if strings.Contains(pe.Message, "tsvector") && f.Searchable {
				names = append(names, f.Name)
				continue
			}
			for _, ix := range schema.FieldIndexNames(e.Name, f.Name) {
				if strings.Contains(pe.Message, `"`+ix+`"`) {
					names = append(names, f.Name)
				}
			}
		}
	}
	if len(names) == 0 {
		return &apperr.Error{Code: apperr.Validation, Message: "a value is too large to store or index", Err: err}
	}
	msg := "is too large to index"
	if strings.Contains(pe.Message, "tsvector") {
		msg = "holds too many distinct words for the full-text index (1 MB of lexemes across the searchable fields)"
	}
	details := make([]apperr.FieldError, len(names))
	for i, n := range names {
		details[i] = apperr.FieldError{Field: n, Message: msg}
	}
	e2 := apperr.Fields(details)
	e2.Err = err
	return e2
}

// MapError turns a Postgres error of a statement on entity into a public
// error naming the field where one is to blame.
func MapError(sc *Scope, entity string, err error) error {
	pe, ok := db.PgError(err)
	if !ok {
		if errors.Is(err, context.DeadlineExceeded) {
			return timeoutError(err)
		}
		if errors.Is(err, context.Canceled) {
			return &apperr.Error{Code: apperr.Unavailable, Message: "the request was cancelled", Err: err}
		}
		return apperr.Wrap(err, "database error")
	}
	e, _ := sc.Schema.Def.Entity(entity)
	switch pe.Code {
	case "23505": // unique_violation
		if e != nil {
			for i := range e.Fields {
				if schema.UniqueIndexName(e.Name, e.Fields[i].Name) == pe.ConstraintName {
					return &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("%s: a %s with this value already exists", e.Fields[i].Name, e.Name),
						Details: []apperr.FieldError{{Field: e.Fields[i].Name, Message: "must be unique"}}, Err: err}
				}
			}
		}
		return &apperr.Error{Code: apperr.Conflict, Message: "a record with these values already exists", Err: err}
	case "23502": // not_null_violation
		return &apperr.Error{Code: apperr.Validation, Message: pe.ColumnName + ": is required",
			Details: []apperr.FieldError{{Field: pe.ColumnName, Message: "is required"}}, Err: err}
	case "54000": // program_limit_exceeded: a value too large for an index or the tsvector
		return limitError(e, pe, err)
	case "57014": // query_canceled: the statement deadline's cancel request, or a statement_timeout
		return timeoutError(err)
	}
	if strings.HasPrefix(pe.Code, "22") { // data exception: a value out of the column's range
		return &apperr.Error{Code: apperr.Validation, Message: "a value is out of range: " + pe.Message, Err: err}
	}
	if pe.Code == "42P01" || pe.Code == "42703" { // table/column vanished: schema changed under us
		return &apperr.Error{Code: apperr.Conflict, Message: "the schema changed during the request; retry", Err: err}
	}
	return apperr.Wrap(err, "database error")
}

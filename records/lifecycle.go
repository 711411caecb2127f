package records

import (
	"context"
	"database/sql"
	"encoding/base64"
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

// Soft delete and history (entity options softDelete and history).
//
// Reads: the query compiler hides soft-deleted records everywhere
// (query/softdelete.go); a scope made by WithDeleted shows those of the
// entity a read is about. Writes by id act on live records only, so a
// deleted record is NOT_FOUND to get, update and delete alike; Delete of an
// entity with soft delete sets deletedAt (its edges and files stay) and
// emits entity.deleted as a delete does; Restore clears it and emits
// entity.updated.
//
// History is written by a trigger (schema/lifecycle.go) in the write's own
// transaction. The writes here tell it who wrote: a CTE of the write's
// statement sets the transaction-local setting schema.HistoryActorSetting
// to the principal's key id and user id before the trigger runs (AFTER
// ROW triggers fire at the end of the statement, after the main query has
// read that CTE).

// WithDeleted returns a scope whose reads show the soft-deleted records of
// the entity they are about (?withDeleted=true, GraphQL withDeleted). Only
// a principal that may delete entity's records may see them: FORBIDDEN
// otherwise. Its compiler is kept on the schema version, so kept
// statements and the statement cache tell the two scopes apart (ruleKey).
func (sc *Scope) WithDeleted(entity string) (*Scope, error) {
	if err := sc.principal.Require("entity", entity, "delete"); err != nil {
		return nil, apperr.New(apperr.Forbidden, "withDeleted needs the delete scope of %s (entity:%s:delete)", entity, entity)
	}
	c := *sc
	base := sc.compiler
	c.compiler = sc.Schema.Memo(sc.stmtKey+"/withDeleted\x00"+sc.principal.RoleSet, func() any { return base.WithDeleted() }).(*query.Compiler)
	return &c, nil
}

// actor is the JSON the history trigger reads the writer from.
func (sc *Scope) actor() string {
	p := sc.principal
	m := map[string]string{}
	if p != nil && p.KeyID != "" {
		m["keyId"] = p.KeyID
	}
	if id := principalUserID(sc); id != "" {
		m["userId"] = id
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// principalUserID is the end user a principal acts for, when it has one
// (user tokens); "" for API keys.
func principalUserID(sc *Scope) string {
	if sc.principal == nil {
		return ""
	}
	return sc.principal.UserID
}

// actorCTE is the CTE that hands the writer to the history trigger, and
// what the main query appends to its FROM list so that the CTE runs; both
// "" for an entity without history. actor is bound (nil when only the
// placeholder matters, as in CreateSQL).
func actorCTE(e *schema.Entity, a *query.Args, actor any) (cte, from string) {
	if !e.History {
		return "", ""
	}
	return fmt.Sprintf(",\nh AS (SELECT set_config('%s', %s, true) AS actor)", schema.HistoryActorSetting, a.Add(actor, "text")), ", h"
}

func (sc *Scope) actorCTE(e *schema.Entity, a *query.Args) (string, string) {
	return actorCTE(e, a, sc.actor())
}

// historyCreateCTE is the CTE by which a single create (CreateSQL) writes
// its record's first version itself, from the INSERT's RETURNING (CTE w),
// instead of leaving it to the history trigger: a trigger's plpgsql call
// and its own INSERT cost about as much as the record's insert, a CTE
// beside it far less. The row is the one the trigger would write — same
// columns, the same record (the row as to_jsonb renders it, without the
// full-text column), the same actor, at from the table's default and an
// id made as its default makes it —
// and the trigger skips it because the INSERT set schema.HistoryOwnSetting
// to its id. It binds the actor (JSON, as sc.actor renders it) and the
// entity's name; "" for an entity without history.
//
// The record: w holds every column but _search, as the table's types,
// except VECTOR fields, which the select list renders as real[]; to_jsonb
// of the column itself is its text, so those are put back as vectors.
func historyCreateCTE(sc *Scope, e *schema.Entity, a *query.Args) string {
	if !e.History {
		return ""
	}
	actor, name := a.Add(nil, "jsonb"), a.Add(nil, "text")
	rec := "to_jsonb(w)"
	var vec []string
	for i := range e.Fields {
		if f := &e.Fields[i]; f.Type == schema.Vector {
			vec = append(vec, fmt.Sprintf("'%s', w.%s::vector", strings.ReplaceAll(f.Name, "'", "''"), schema.Ident(f.Name)))
		}
	}
	if len(vec) > 0 {
		rec += " || jsonb_build_object(" + strings.Join(vec, ", ") + ")"
	}
	// The version's id is dds.uuid_v7()'s, the history table's default,
	// computed inline (schema.UUIDv7SQL): called as the default, the
	// function cost more than the rest of the statement's history. It is
	// Postgres's clock, not the server's, so the versions the trigger
	// writes later order after this one whatever the two clocks say.
	return fmt.Sprintf(`,
h AS (INSERT INTO %s ("id", "entity", "record_id", "op", "key_id", "user_id", "record")
  SELECT %s, %s, w."id", 'create', %s ->> 'keyId', %s ->> 'userId', %s FROM w, %s)`,
		schema.QualifiedIdent(sc.Schema.PgSchema, schema.HistoryTable), schema.UUIDv7SQL("c.ms"), name, actor, actor, rec, schema.UUIDv7ClockSQL("c"))
}

// andLive ANDs the live-record predicate into a write's condition,
// leaving the text as it was for entities without soft delete.
func andLive(w, live string) string {
	if live == "TRUE" {
		return w
	}
	return w + " AND " + live
}

// Restore brings back a soft-deleted record and emits entity.updated with
// it. A record that is not deleted is returned as it is, with no event (a
// retried restore is harmless); one that does not exist is NOT_FOUND.
func (s *Store) Restore(ctx context.Context, sc *Scope, entity, id string) (json.RawMessage, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if !e.SoftDelete {
		return nil, apperr.New(apperr.Validation, "%s has no soft delete: there is nothing to restore (set softDelete: true on the entity)", e.Name)
	}
	if id, err = query.ParseID(entity, id); err != nil {
		return nil, err
	}
	var a query.Args
	idArg := a.Add(id, "uuid")
	eventID := outbox.NewEventID()
	eventArg := a.Add(eventID, "uuid")
	ret, _ := sc.compiler.Columns(e, nil, "t")
	del := schema.Ident(schema.ColDeletedAt)
	h, from := sc.actorCTE(e, &a)
	// Under rules (rulewrites.go) a restore is the undoing of a delete: the
	// deleted record must pass the read rule and the delete rule's where,
	// else it is not found; a live record is answered only if readable.
	var del2 query.Filter
	if wr := sc.compiler.WriteRules(e.Name); wr != nil {
		del2 = wr.Delete
	}
	rule, err := sc.ruleWhere(e, del2, "delete", "t", &a)
	if err != nil {
		return nil, err
	}
	read := sc.compiler.ReadRule(e.Name, "t", &a)
	q := fmt.Sprintf(`WITH w AS (UPDATE %[1]s AS t SET %[2]s = NULL, "updatedAt" = now() WHERE t."id" = %[3]s AND t.%[2]s IS NOT NULL AND %[8]s RETURNING %[4]s),
e AS (%[5]s)%[6]s
SELECT row_to_json(w), true FROM w%[7]s
UNION ALL SELECT row_to_json(r), false FROM (SELECT %[4]s FROM %[1]s t WHERE t."id" = %[3]s AND t.%[2]s IS NULL AND %[9]s) r`,
		sc.compiler.Table(e.Name), del, idArg, strings.Join(ret, ", "),
		outbox.InsertOneCTE(&a, eventArg, sc.Origin(), outbox.EntityUpdated, e.Name, "w"), h, from, rule, read)
	var out []byte
	var restored bool
	err = s.write(ctx, func(qr sqlx.QueryerContext) error {
		return qr.QueryRowxContext(ctx, q, sc.bind(a.List())...).Scan(&out, &restored)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "%s %q not found", entity, id)
	}
	if err != nil {
		return nil, MapError(sc, entity, err)
	}
	if restored {
		s.announce(sc.TenantID, eventID)
	}
	return sc.redact(e.Name, out), nil
}

// History page limits.
const (
	DefaultHistoryLimit = 50
	MaxHistoryLimit     = 500
)

// History lists the recorded versions of a record, newest first, as
// {"items": [{"id", "op", "at", "keyId", "userId", "changed", "record"}],
// "nextCursor"}: a page of at most limit versions after the cursor
// (nextCursor of the page before; absent on the last page). The versions
// of a deleted record stay readable. An entity without history is a
// VALIDATION_ERROR; a record with no recorded version is NOT_FOUND.
func (s *Store) History(ctx context.Context, sc *Scope, entity, id string, limit int, cursor string) (json.RawMessage, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, err
	}
	if !e.History {
		return nil, apperr.New(apperr.Validation, "%s keeps no history (set history: true on the entity)", e.Name)
	}
	if id, err = query.ParseID(entity, id); err != nil {
		return nil, err
	}
	if limit == 0 {
		limit = DefaultHistoryLimit
	}
	if limit < 1 || limit > MaxHistoryLimit {
		return nil, apperr.Field("limit", "must be between 1 and %d", MaxHistoryLimit)
	}
	after := ""
	if cursor != "" {
		raw, err := base64.RawURLEncoding.DecodeString(cursor)
		u, perr := uuid.ParseBytes(raw)
		if err != nil || perr != nil {
			return nil, apperr.Field("cursor", "is not a cursor of this history")
		}
		after = u.String()
	}
	var a query.Args
	w := fmt.Sprintf(`x."record_id" = %s AND x."entity" = %s`, a.Add(id, "uuid"), a.Add(e.Name, "text"))
	if after != "" {
		w += ` AND x."id" < ` + a.Add(after, "uuid")
	}
	w += sc.historyVisible(e, "x", &a) // under rules: historyread.go
	q := fmt.Sprintf(`SELECT coalesce(json_agg(json_build_object('id', x."id", 'op', x."op", 'at', x."at", 'keyId', x."key_id", 'userId', x."user_id", 'changed', %s, 'record', x."record") ORDER BY x."id" DESC), '[]'::json), count(*)
FROM (SELECT * FROM %s x WHERE %s ORDER BY x."id" DESC LIMIT %d) x`, schema.HistoryChanged("x"), schema.QualifiedIdent(sc.Schema.PgSchema, schema.HistoryTable), w, limit+1)
	// One more than the page tells whether a next page exists; it is cut
	// below (the aggregate is rebuilt without it only when it is there).
	var items []byte
	var n int
	if err := s.read(ctx, func(d *sqlx.DB) (bool, error) {
		return false, d.QueryRowContext(ctx, q, sc.bind(a.List())...).Scan(&items, &n)
	}); err != nil {
		return nil, MapError(sc, entity, err)
	}
	items = sc.redactVersions(e.Name, items)
	if n == 0 && after == "" {
		return nil, apperr.New(apperr.NotFound, "%s %q has no recorded versions", entity, id)
	}
	if n <= limit {
		return json.RawMessage(`{"items":` + string(items) + `}`), nil
	}
	var list []json.RawMessage
	if err := json.Unmarshal(items, &list); err != nil {
		return nil, apperr.Wrap(err, "decode history page")
	}
	list = list[:limit]
	var lastID struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(list[limit-1], &lastID)
	u, _ := uuid.Parse(lastID.ID)
	page, _ := json.Marshal(map[string]any{"items": list, "nextCursor": base64.RawURLEncoding.EncodeToString([]byte(u.String()))})
	return page, nil
}

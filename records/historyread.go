package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Reading history under rules (docs/auth.md). A record's versions are
// shown to a principal with roles only while the record passes the read
// rule (soft-deleted records are judged as they are now, deleted; a
// hard-deleted record has no row to judge and its versions are hidden),
// else the record is NOT_FOUND, as its get is; each version's record and
// changed fields are cut to the read list. Principals without rules see
// every version whole.

// historyVisible is the condition a history row at alias x must meet for
// the scope's principal: "" when the entity has no read rule for it.
func (sc *Scope) historyVisible(e *schema.Entity, x string, a *query.Args) string {
	if !sc.compiler.HasRules() {
		return ""
	}
	read := sc.compiler.ReadRule(e.Name, "t", a)
	if read == "TRUE" {
		return ""
	}
	return fmt.Sprintf(` AND EXISTS (SELECT 1 FROM %s t WHERE t."id" = %s."record_id" AND %s)`, sc.compiler.Table(e.Name), x, read)
}

// version is one item of a history page as History's SQL renders it.
type version struct {
	ID      string          `json:"id"`
	Op      string          `json:"op"`
	At      string          `json:"at"`
	KeyID   *string         `json:"keyId"`
	UserID  *string         `json:"userId"`
	Changed []string        `json:"changed"`
	Record  json.RawMessage `json:"record"`
}

// redactVersion cuts a version's record and changed fields to the read
// list of the principal's roles.
func (sc *Scope) redactVersion(entity string, raw json.RawMessage) json.RawMessage {
	m := sc.compiler.ReadableFields(entity)
	if m == nil {
		return raw
	}
	var v version
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	v.Record = sc.redact(entity, v.Record)
	changed := make([]string, 0, len(v.Changed))
	for _, f := range v.Changed {
		if m[f] {
			changed = append(changed, f)
		}
	}
	v.Changed = changed
	out, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return out
}

// redactVersions is redactVersion for a JSON array of versions.
func (sc *Scope) redactVersions(entity string, items []byte) []byte {
	if sc.compiler.ReadableFields(entity) == nil {
		return items
	}
	var list []json.RawMessage
	if json.Unmarshal(items, &list) != nil {
		return items
	}
	for i := range list {
		list[i] = sc.redactVersion(entity, list[i])
	}
	out, err := json.Marshal(list)
	if err != nil {
		return items
	}
	return out
}

// Version reads one version of a record by its id (an item id of
// History), as History renders it, under the same scope and rules. A
// version that is not the record's, or a record the principal may not
// read, is NOT_FOUND.
func (s *Store) Version(ctx context.Context, sc *Scope, entity, id, versionID string) (json.RawMessage, error) {
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
	v, err := uuid.Parse(versionID)
	if err != nil {
		return nil, apperr.Field("versionId", "must be a version id (a UUID) from the record's history")
	}
	var a query.Args
	w := fmt.Sprintf(`x."record_id" = %s AND x."entity" = %s AND x."id" = %s`, a.Add(id, "uuid"), a.Add(e.Name, "text"), a.Add(v.String(), "uuid"))
	w += sc.historyVisible(e, "x", &a)
	q := fmt.Sprintf(`SELECT json_build_object('id', x."id", 'op', x."op", 'at', x."at", 'keyId', x."key_id", 'userId', x."user_id", 'changed', %s, 'record', x."record")
FROM %s x WHERE %s`, schema.HistoryChanged("x"), schema.QualifiedIdent(sc.Schema.PgSchema, schema.HistoryTable), w)
	var out []byte
	err = s.read(ctx, func(d *sqlx.DB) (bool, error) {
		return false, d.QueryRowContext(ctx, q, sc.bind(a.List())...).Scan(&out)
	})
	if errors.Is(err, sql.ErrNoRows) {
		return nil, apperr.New(apperr.NotFound, "%s %q has no version %q", entity, id, v.String())
	}
	if err != nil {
		return nil, MapError(sc, entity, err)
	}
	return sc.redactVersion(e.Name, out), nil
}

package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Relationship edges. An edge has a durable UUIDv7 id; several edges may
// join the same pair. Its properties are validated against the
// relationship's declared properties and stored as a jsonb object whose
// values have the JSON form of their type (timestamps normalised to RFC
// 3339 UTC), so the query compiler can cast them back to typed values.
// Every edge write inserts one relationship.created|updated|deleted event
// per edge into the outbox in the write's own statement (outbox.InsertEdgeCTE).
// Deleting a record removes its edges by FK cascade, without edge events:
// its entity.deleted event stands for them.

// edgeJSON renders an edge row of alias x as the API's edge object.
func edgeJSON(rel *schema.Relationship, x string) string {
	return fmt.Sprintf(`json_build_object('id', %s."id", 'type', '%s', 'sourceId', %s."source_id", 'targetId', %s."target_id", 'properties', %s."properties", 'createdAt', %s."created_at")`,
		x, rel.Name, x, x, x, x)
}

// prepareProperties validates properties for create (required and
// defaults apply) or patch (only given keys; null removes a key). It
// returns the JSON object to store or merge and the keys to remove.
func prepareProperties(rel *schema.Relationship, props map[string]any, create bool) (string, []string, error) {
	var errs []apperr.FieldError
	out := map[string]any{}
	var remove []string
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := rel.Property(k)
		if !ok {
			errs = append(errs, apperr.FieldError{Field: "properties." + k, Message: fmt.Sprintf("unknown property of relationship %s", rel.Name)})
			continue
		}
		v := props[k]
		if v == nil {
			if f.Required {
				errs = append(errs, apperr.FieldError{Field: "properties." + k, Message: "is required and cannot be null"})
			} else if !create {
				remove = append(remove, k)
			}
			continue
		}
		c, err := schema.CoerceValue(f, v)
		if err != nil {
			errs = append(errs, apperr.FieldError{Field: "properties." + k, Message: err.Error()})
			continue
		}
		out[k] = storedProperty(f, v, c)
	}
	if create {
		for i := range rel.Properties {
			f := &rel.Properties[i]
			if _, given := props[f.Name]; given {
				continue
			}
			switch {
			case f.Default != nil:
				c, _ := schema.CoerceValue(f, f.Default)
				out[f.Name] = storedProperty(f, f.Default, c)
			case f.Required:
				errs = append(errs, apperr.FieldError{Field: "properties." + f.Name, Message: "is required"})
			}
		}
	}
	if e := apperr.Fields(errs); e != nil {
		return "", nil, e
	}
	b, err := json.Marshal(out)
	if err != nil {
		return "", nil, apperr.Wrap(err, "encode properties")
	}
	return string(b), remove, nil
}

// storedProperty is the JSON value stored for a validated property.
func storedProperty(f *schema.Field, raw, coerced any) any {
	switch f.Type {
	case schema.Timestamp:
		if f.List {
			items := raw.([]any)
			out := make([]any, len(items))
			for i, it := range items {
				t, _ := schema.ParseTimestamp(it.(string))
				out[i] = t.UTC().Format(time.RFC3339Nano)
			}
			return out
		}
		return coerced.(time.Time).UTC().Format(time.RFC3339Nano)
	}
	return raw
}

// edgeSource checks that entity is the source side of rel.
func edgeSource(sc *Scope, entity, relName string) (*schema.Entity, *schema.Relationship, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, nil, err
	}
	rel, err := sc.compiler.Relationship(relName)
	if err != nil {
		return nil, nil, err
	}
	if rel.From != e.Name {
		if rel.To == e.Name {
			return nil, nil, apperr.New(apperr.Validation, "%s edges go from %s to %s: create or change them from the %s side (/api/v1/dynamic/%s/{id}/relationships/%s)", rel.Name, rel.From, rel.To, rel.From, rel.From, rel.Name)
		}
		return nil, nil, apperr.New(apperr.Validation, "relationship %s connects %s to %s, not %s", rel.Name, rel.From, rel.To, e.Name)
	}
	return e, rel, nil
}

func parseIDs(entity, id, target string, rel *schema.Relationship) (string, string, error) {
	sid, err := query.ParseID(entity, id)
	if err != nil {
		return "", "", err
	}
	u, err := uuid.Parse(target)
	if err != nil {
		return "", "", apperr.New(apperr.NotFound, "target %s %q not found", rel.To, target)
	}
	return sid, u.String(), nil
}

// CreateEdge creates an edge of rel from the entity record id to the
// target record (of rel's target entity) with validated properties.
func (s *Store) CreateEdge(ctx context.Context, sc *Scope, entity, id, relName, target string, props map[string]any) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, rel, err := edgeSource(sc, entity, relName)
	if err != nil {
		return nil, err
	}
	if target == "" {
		return nil, apperr.Field("targetId", "is required")
	}
	sid, tid, err := parseIDs(entity, id, target, rel)
	if err != nil {
		return nil, err
	}
	pj, _, err := prepareProperties(rel, props, true)
	if err != nil {
		return nil, err
	}
	var a query.Args
	sw := andLive(`x."id" = `+a.Add(sid, "uuid"), sc.compiler.Live(e.Name, "x"))
	tw := andLive(`x."id" = `+a.Add(tid, "uuid"), sc.compiler.Live(rel.To, "x"))
	if sr, tr, err := sc.edgeEnds(rel, "x", &a); err != nil { // rulewrites.go
		return nil, err
	} else {
		sw, tw = andLive(sw, sr), andLive(tw, tr)
	}
	q := fmt.Sprintf(`WITH s AS (SELECT x."id" FROM %s x WHERE %s), t AS (SELECT x."id" FROM %s x WHERE %s),
x AS (INSERT INTO %s ("id", "source_id", "target_id", "properties") SELECT %s, s."id", t."id", %s FROM s, t RETURNING *),
e AS (%s)
SELECT EXISTS (SELECT 1 FROM s), EXISTS (SELECT 1 FROM t), (SELECT %s FROM x), `+outbox.EventIDs,
		sc.compiler.Table(e.Name), sw,
		sc.compiler.Table(rel.To), tw,
		sc.compiler.Table(schema.RelTable(rel)), a.Add(uuid.Must(uuid.NewV7()).String(), "uuid"), a.Add(pj, "jsonb"),
		outbox.InsertEdgeCTE(&a, sc.Origin(), outbox.RelationshipCreated, rel.Name, rel.From, rel.To, "x"), edgeJSON(rel, "x"))
	var hasS, hasT bool
	var out []byte
	var events sql.NullString
	// Without both ends the statement wrote nothing: the hook still commits
	// with it, and the answer below is the 404 the retry will get too.
	if err := s.write(ctx, func(qr sqlx.QueryerContext) error {
		return qr.QueryRowxContext(ctx, q, sc.bind(a.List())...).Scan(&hasS, &hasT, &out, &events)
	}); err != nil {
		return nil, MapError(sc, entity, err)
	}
	s.announce(sc.TenantID, events.String)
	if !hasS {
		return nil, apperr.New(apperr.NotFound, "%s %q not found", e.Name, id)
	}
	if !hasT {
		return nil, apperr.New(apperr.NotFound, "target %s %q not found (%s edges go from %s to %s)", rel.To, target, rel.Name, rel.From, rel.To)
	}
	return out, nil
}

// ListEdges lists the edges of a record (REST relationship list): the far
// nodes with "_relationship" and "properties" members, as {"items": [...]}.
func (s *Store) ListEdges(ctx context.Context, sc *Scope, entity, id string, n query.Nested) (json.RawMessage, error) {
	st, err := sc.compiler.RelationshipList(entity, id, n)
	if err != nil {
		return nil, err
	}
	out, err := s.run(ctx, sc, entity, st)
	return out, notFound(err, "%s %q not found", entity, id)
}

// UpdateEdges merges properties into every edge of rel from the record id to
// target (null removes a property) and returns {"items": [edges]}.
func (s *Store) UpdateEdges(ctx context.Context, sc *Scope, entity, id, relName, target string, props map[string]any) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, rel, where, a, sid, err := edgesBetween(sc, entity, id, relName, target)
	if err != nil {
		return nil, err
	}
	set, err := propertySet(rel, props, a)
	if err != nil {
		return nil, err
	}
	return s.edgeWrite(ctx, sc, e, rel, id, outbox.RelationshipUpdated, fmt.Sprintf("no %s edge from %s %q to %s %q", rel.Name, e.Name, id, rel.To, target),
		fmt.Sprintf(`UPDATE %s x SET "properties" = %s WHERE %s RETURNING x.*`, sc.compiler.Table(schema.RelTable(rel)), set, where), sid, a)
}

// UpdateEdgeByID merges properties into one edge, which must touch the
// record id (as source or target).
func (s *Store) UpdateEdgeByID(ctx context.Context, sc *Scope, entity, id, relName, edgeID string, props map[string]any) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, rel, where, a, sid, err := edgeByID(sc, entity, id, relName, edgeID)
	if err != nil {
		return nil, err
	}
	set, err := propertySet(rel, props, a)
	if err != nil {
		return nil, err
	}
	return s.edgeWrite(ctx, sc, e, rel, id, outbox.RelationshipUpdated, fmt.Sprintf("%s edge %q of %s %q not found", rel.Name, edgeID, e.Name, id),
		fmt.Sprintf(`UPDATE %s x SET "properties" = %s WHERE %s RETURNING x.*`, sc.compiler.Table(schema.RelTable(rel)), set, where), sid, a)
}

// DeleteEdges deletes every edge of rel from the record id to target.
func (s *Store) DeleteEdges(ctx context.Context, sc *Scope, entity, id, relName, target string) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, rel, where, a, sid, err := edgesBetween(sc, entity, id, relName, target)
	if err != nil {
		return nil, err
	}
	return s.edgeWrite(ctx, sc, e, rel, id, outbox.RelationshipDeleted, fmt.Sprintf("no %s edge from %s %q to %s %q", rel.Name, e.Name, id, rel.To, target),
		fmt.Sprintf(`DELETE FROM %s x WHERE %s RETURNING x.*`, sc.compiler.Table(schema.RelTable(rel)), where), sid, a)
}

// edgesBetween resolves the edges of rel from the record id (of entity, the
// source side) to target: the predicate on edge alias x, its bind values so
// far, and the parsed source id.
func edgesBetween(sc *Scope, entity, id, relName, target string) (*schema.Entity, *schema.Relationship, string, *query.Args, string, error) {
	e, rel, err := edgeSource(sc, entity, relName)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	sid, tid, err := parseIDs(entity, id, target, rel)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	var a query.Args
	where := fmt.Sprintf(`x."source_id" = %s AND x."target_id" = %s`, a.Add(sid, "uuid"), a.Add(tid, "uuid"))
	ends, err := sc.edgeRule(rel, "x", &a) // rulewrites.go
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	return e, rel, andLive(andLive(where, liveEnds(sc, rel, "x")), ends), &a, sid, nil
}

// DeleteEdgeByID deletes one edge, which must touch the record id.
func (s *Store) DeleteEdgeByID(ctx context.Context, sc *Scope, entity, id, relName, edgeID string) (json.RawMessage, error) {
	ctx, cancel := s.bound(ctx) // budget.go
	defer cancel()
	e, rel, where, a, sid, err := edgeByID(sc, entity, id, relName, edgeID)
	if err != nil {
		return nil, err
	}
	return s.edgeWrite(ctx, sc, e, rel, id, outbox.RelationshipDeleted, fmt.Sprintf("%s edge %q of %s %q not found", rel.Name, edgeID, e.Name, id),
		fmt.Sprintf(`DELETE FROM %s x WHERE %s RETURNING x.*`, sc.compiler.Table(schema.RelTable(rel)), where), sid, a)
}

func edgeByID(sc *Scope, entity, id, relName, edgeID string) (*schema.Entity, *schema.Relationship, string, *query.Args, string, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	rel, err := sc.compiler.Relationship(relName)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	if rel.From != e.Name && rel.To != e.Name {
		return nil, nil, "", nil, "", apperr.New(apperr.Validation, "relationship %s connects %s to %s, not %s", rel.Name, rel.From, rel.To, e.Name)
	}
	sid, err := query.ParseID(entity, id)
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	u, err := uuid.Parse(edgeID)
	if err != nil {
		return nil, nil, "", nil, "", apperr.New(apperr.NotFound, "%s edge %q not found", rel.Name, edgeID)
	}
	var a query.Args
	idArg := a.Add(sid, "uuid")
	var ends []string
	if rel.From == e.Name {
		ends = append(ends, `x."source_id" = `+idArg)
	}
	if rel.To == e.Name {
		ends = append(ends, `x."target_id" = `+idArg)
	}
	where := fmt.Sprintf(`x."id" = %s AND (%s)`, a.Add(u.String(), "uuid"), strings.Join(ends, " OR "))
	rule, err := sc.edgeRule(rel, "x", &a) // rulewrites.go
	if err != nil {
		return nil, nil, "", nil, "", err
	}
	return e, rel, andLive(andLive(where, liveEnds(sc, rel, "x")), rule), &a, sid, nil
}

// liveEnds is the predicate "both ends of the edge at alias x are live
// records" ("TRUE" when neither end's entity has soft delete). An edge
// write (update, delete) touches only edges whose ends reads show: an
// edge to a soft-deleted record is as missing to writes as to reads, so
// writing it is the same 404, and nothing is written.
func liveEnds(sc *Scope, rel *schema.Relationship, x string) string {
	live := "TRUE"
	for _, end := range []struct{ entity, col string }{{rel.From, "source_id"}, {rel.To, "target_id"}} {
		if l := sc.compiler.Live(end.entity, "z"); l != "TRUE" {
			live = andLive(live, fmt.Sprintf(`EXISTS (SELECT 1 FROM %s z WHERE z."id" = %s.%q AND %s)`, sc.compiler.Table(end.entity), x, end.col, l))
		}
	}
	return strings.TrimPrefix(live, "TRUE AND ")
}

// propertySet renders the merged properties of a patch.
func propertySet(rel *schema.Relationship, props map[string]any, a *query.Args) (string, error) {
	if props == nil {
		return "", apperr.Field("properties", "is required (an object)")
	}
	pj, remove, err := prepareProperties(rel, props, false)
	if err != nil {
		return "", err
	}
	set := `x."properties" || ` + a.Add(pj, "jsonb")
	if len(remove) > 0 {
		b, _ := json.Marshal(remove)
		set = "(" + set + `) - ARRAY(SELECT jsonb_array_elements_text(` + a.Add(string(b), "jsonb") + "))"
	}
	return set, nil
}

// edgeWrite runs an UPDATE/DELETE ... RETURNING x.* on edges, with one
// eventType event per edge, and returns {"items": [edges]}; no edge is
// NOT_FOUND (naming the source when it is the source that is missing).
func (s *Store) edgeWrite(ctx context.Context, sc *Scope, e *schema.Entity, rel *schema.Relationship, id, eventType, missing, stmt, sid string, a *query.Args) (json.RawMessage, error) {
	q := fmt.Sprintf(`WITH x AS (%s), e AS (%s)
SELECT EXISTS (SELECT 1 FROM %s y WHERE %s), (SELECT json_agg(%s ORDER BY x."created_at", x."id") FROM x), `+outbox.EventIDs,
		stmt, outbox.InsertEdgeCTE(a, sc.Origin(), eventType, rel.Name, rel.From, rel.To, "x"),
		sc.compiler.Table(e.Name), andLive(andLive(`y."id" = `+a.Add(sid, "uuid"), sc.compiler.Live(e.Name, "y")), sc.compiler.ReadRule(e.Name, "y", a)), edgeJSON(rel, "x"))
	var hasS bool
	var out []byte
	var events sql.NullString
	if err := s.write(ctx, func(qr sqlx.QueryerContext) error {
		return qr.QueryRowxContext(ctx, q, sc.bind(a.List())...).Scan(&hasS, &out, &events)
	}); err != nil {
		return nil, MapError(sc, e.Name, err)
	}
	s.announce(sc.TenantID, events.String)
	if !hasS {
		return nil, apperr.New(apperr.NotFound, "%s %q not found", e.Name, id)
	}
	if out == nil {
		return nil, apperr.New(apperr.NotFound, "%s", missing)
	}
	return json.RawMessage(`{"items":` + string(out) + `}`), nil
}

// Package outbox owns dds.events, the transactional outbox: the event row
// type and event types, the SQL fragment a write embeds to insert its
// events in its own statement, the relay's claim (row locks held by an
// open transaction, hold.go; or, for older relays, an expiring lease),
// the relayed mark, pruning, the reads of subscriptions and the lag an
// operator watches. Every other package reaches the table through here.
//
// NOTIFY on dds_events (sent by the writing process after commit, see
// pgnotify.Publisher) only shortens latency: a relay that misses every
// notification still finds each event by polling Claim.
package outbox

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Event types. Entity events carry a record; relationship events an edge.
const (
	EntityCreated       = "entity.created"
	EntityUpdated       = "entity.updated"
	EntityDeleted       = "entity.deleted"
	RelationshipCreated = "relationship.created"
	RelationshipUpdated = "relationship.updated"
	RelationshipDeleted = "relationship.deleted"
)

// Types lists every event type, in documentation order.
var Types = []string{EntityCreated, EntityUpdated, EntityDeleted, RelationshipCreated, RelationshipUpdated, RelationshipDeleted}

// ValidType reports whether t is one of Types.
func ValidType(t string) bool { return slices.Contains(Types, t) }

// IsRelationship reports whether t is a relationship (edge) event type.
func IsRelationship(t string) bool { return strings.HasPrefix(t, "relationship.") }

// Channel is the NOTIFY channel committed events wake. A payload is
// "<tenant id>:<event id>,<event id>,..." — the events of one tenant
// committed since the writer's previous flush, oldest first, cut to stay
// under Postgres' payload limit (pgnotify.Publisher.PublishList). It is a
// latency hint only.
const Channel = "dds_events"

// ParseNotification splits a Channel payload into its tenant and event ids.
func ParseNotification(payload string) (tenantID string, eventIDs []string, ok bool) {
	tenantID, ids, ok := strings.Cut(payload, ":")
	if !ok || tenantID == "" || ids == "" {
		return "", nil, false
	}
	return tenantID, strings.Split(ids, ","), true
}

// Event is one row of dds.events plus its tenant's name. For entity events
// Name is the entity and SubjectID the record id; Record is the record (as
// it was before deletion for entity.deleted). For relationship events Name
// is the relationship, SubjectID the edge id and Record the Edge.
type Event struct {
	ID         string          `db:"id"`
	TenantID   string          `db:"tenant_id"`
	TenantName string          `db:"tenant_name"`
	SchemaName string          `db:"schema_name"`
	Type       string          `db:"type"`
	Name       string          `db:"entity_name"`
	SubjectID  string          `db:"entity_id"`
	Record     json.RawMessage `db:"record"`
	CreatedAt  time.Time       `db:"created_at"`
	// Seq is the event's position in the outbox (read by ReadMany and the
	// relay's claims).
	Seq int64 `db:"seq"`

	fields   map[string]any // Record decoded by Fields
	previous *[]byte        // the record Previous found, once read
}

// Fields is the event's record decoded with UseNumber, decoded once however
// many subscribers test it (an event is handled by one goroutine at a
// time: it is not safe for concurrent use).
func (e *Event) Fields() (map[string]any, error) {
	if e.fields == nil {
		d := json.NewDecoder(bytes.NewReader(e.Record))
		d.UseNumber()
		var m map[string]any
		if err := d.Decode(&m); err != nil {
			return nil, err
		}
		e.fields = m
	}
	return e.fields, nil
}

// Edge is the record of a relationship event.
type Edge struct {
	ID           string          `json:"id"`
	Relationship string          `json:"relationshipName"`
	SourceEntity string          `json:"sourceEntity"`
	SourceID     string          `json:"sourceId"`
	TargetEntity string          `json:"targetEntity"`
	TargetID     string          `json:"targetId"`
	Properties   json.RawMessage `json:"properties"`
	CreatedAt    string          `json:"createdAt"`
}

// Edge decodes the record of a relationship event.
func (e *Event) Edge() (Edge, error) {
	var x Edge
	if !IsRelationship(e.Type) {
		return x, fmt.Errorf("event %s is not a relationship event", e.ID)
	}
	err := json.Unmarshal(e.Record, &x)
	return x, err
}

// Entities are the entity names an event concerns: the entity of an entity
// event, both ends of a relationship event.
func (e *Event) Entities() []string {
	if !IsRelationship(e.Type) {
		return []string{e.Name}
	}
	x, err := e.Edge()
	if err != nil {
		return nil
	}
	return []string{x.SourceEntity, x.TargetEntity}
}

// Origin is where events come from: the tenant and its active schema.
type Origin struct {
	TenantID, SchemaID, SchemaName string
}

// InsertCTE renders the body of a data-modifying CTE that inserts one event
// of eventType per row of the CTE src (alias w) into dds.events, so the
// write and its events commit in one statement; it returns the event ids
// (see EventIDs), their seq and created_at (see Range). For entity events name is
// the entity and the src rows are its records; for relationship events use
// InsertEdgeCTE. It binds, in order: tenant, schema id, schema name, type,
// name (callers caching statement text rely on that order).
func InsertCTE(a *query.Args, o Origin, eventType, name, src string) string {
	return insert(a, "", o, eventType, name, src, entityRecord)
}

// entityRecord is the record expression of entity events: the written row.
func entityRecord(string) string { return `row_to_json(w)::jsonb` }

// InsertEdgeCTE is InsertCTE for relationship events: the src rows are edge
// rows (id, source_id, target_id, properties, created_at) of relationship
// name from sourceEntity to targetEntity; each event's record is an Edge.
// It binds the same five values as InsertCTE, then the two entity names.
func InsertEdgeCTE(a *query.Args, o Origin, eventType, name, sourceEntity, targetEntity, src string) string {
	return insert(a, "", o, eventType, name, src, func(nameArg string) string {
		return fmt.Sprintf(`jsonb_build_object('id', w."id", 'relationshipName', %s, 'sourceEntity', %s, 'sourceId', w."source_id",
    'targetEntity', %s, 'targetId', w."target_id", 'properties', w."properties", 'createdAt', w."created_at")`,
			nameArg, a.Add(sourceEntity, "text"), a.Add(targetEntity, "text"))
	})
}

// InsertOneCTE is InsertCTE for a write of at most one row (a create,
// update or delete by id), whose event id the writer made (NewEventID) and
// bound as idArg. It returns nothing: the writer already knows the id it
// is to announce, so the statement need not carry it out (measured on a
// create, the event-id subquery and dds.uuid_v7() cost Postgres about 20
// µs of a 150 µs statement). It binds the same five values as InsertCTE.
func InsertOneCTE(a *query.Args, idArg string, o Origin, eventType, name, src string) string {
	return insert(a, idArg, o, eventType, name, src, entityRecord)
}

// NewEventID returns a new event id for InsertOneCTE: time-ordered (UUID
// version 7), as the ids dds.events' default makes.
func NewEventID() string { return uuid.Must(uuid.NewV7()).String() }

// insert binds the five common values, then lets record render the record
// expression (given the placeholder of name). The event ids are bound as
// idArg, or, when it is "", dds.events' default, returned with their seq
// and created_at.
func insert(a *query.Args, idArg string, o Origin, eventType, name, src string, record func(nameArg string) string) string {
	t, sid, sn, ty, n := a.Add(o.TenantID, "uuid"), a.Add(o.SchemaID, "uuid"), a.Add(o.SchemaName, "text"),
		a.Add(eventType, "text"), a.Add(name, "text")
	if idArg == "" {
		return fmt.Sprintf(`INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
  SELECT %s, %s, %s, %s, %s, w."id", %s FROM %s w RETURNING id, seq, created_at`, t, sid, sn, ty, n, record(n), src)
	}
	return fmt.Sprintf(`INSERT INTO dds.events (id, tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
  SELECT %s, %s, %s, %s, %s, %s, w."id", %s FROM %s w`, idArg, t, sid, sn, ty, n, record(n), src)
}

// EventIDs is the select-list expression of the ids of the events a
// statement inserted through InsertCTE into the CTE named e, as one
// comma-separated text (NULL when none), so the writer can announce them on
// Channel after commit.
const EventIDs = `(SELECT string_agg(id::text, ',') FROM e)`

// Range is the select-list of the span of the events a statement inserted
// through InsertCTE into the CTE named e: the lowest and highest seq and
// their created_at (the writing transaction's start), NULLs when none. A
// large write (a job) hands it to AnnounceRange after commit rather than
// carrying every id out of the statement.
const Range = `(SELECT min(seq) FROM e) AS first_seq, (SELECT max(seq) FROM e) AS last_seq, (SELECT min(created_at) FROM e) AS written_at`

// idsPerPayload ids of 36 characters, their commas and a tenant id fit
// well under Postgres' 8000-byte NOTIFY payload.
const idsPerPayload = 200

// AnnounceRange announces on Channel, after the commit of a large write,
// every event of tenant inserted by that write: those between seq first
// and last written at its transaction's start (at, which keeps other
// writers' events interleaved in the seq span out), idsPerPayload ids per
// notification, in outbox order. It runs in its own transaction, with
// synchronous_commit off like every announcement.
func AnnounceRange(ctx context.Context, ex sqlx.ExecerContext, tenantID string, first, last int64, at time.Time) error {
	_, err := ex.ExecContext(ctx, `SELECT set_config('synchronous_commit', 'off', true), count(pg_notify($1, $2::text || ':' || ids))
		FROM (SELECT string_agg(id::text, ',' ORDER BY seq) AS ids
			FROM (SELECT id, seq, (row_number() OVER (ORDER BY seq) - 1) / $6 AS g FROM dds.events
				WHERE tenant_id = $2 AND seq BETWEEN $3 AND $4 AND created_at = $5) x
			GROUP BY g) y`, Channel, tenantID, first, last, at, idsPerPayload)
	return err
}

// Store reads and updates dds.events.
type Store struct{ db *sqlx.DB }

// NewStore returns a store over db.
func NewStore(db *sqlx.DB) *Store { return &Store{db: db} }

// sortedIDs is a sorted copy of ids: concurrent updaters lock rows in one order.
func sortedIDs(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// MarkRelayed sets relayed_at on events (in ex, so a caller can make it
// part of its own transaction). Ids are sorted so concurrent markers lock
// rows in one order.
func MarkRelayed(ctx context.Context, ex sqlx.ExecerContext, eventIDs []string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	_, err := ex.ExecContext(ctx, `UPDATE dds.events SET relayed_at = now(), claimed_until = NULL WHERE id = ANY($1::uuid[])`, schema.ArrayLiteral(sortedIDs(eventIDs)))
	return err
}

// ReadMany reads the events of a tenant among ids, in outbox order (seq);
// ids of other tenants, of pruned events and malformed ids are skipped.
// TenantName is left empty.
func ReadMany(ctx context.Context, q sqlx.QueryerContext, tenantID string, ids []string) ([]Event, error) {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if u, err := uuid.Parse(id); err == nil {
			valid = append(valid, u.String())
		}
	}
	if len(valid) == 0 {
		return nil, nil
	}
	var out []Event
	err := sqlx.SelectContext(ctx, q, &out, `SELECT id, tenant_id, '' AS tenant_name, schema_name, type, entity_name, entity_id, record, created_at, seq
		FROM dds.events WHERE id = ANY($1::uuid[]) AND tenant_id = $2 AND `+recordEventsOnly+` ORDER BY seq`, schema.ArrayLiteral(valid), tenantID)
	return out, err
}

// HighWater is the position of the tenant's newest event in the outbox (0
// when it has none): a reader that starts now wants only events after it.
func HighWater(ctx context.Context, q sqlx.QueryerContext, tenantID string) (int64, error) {
	var seq int64
	err := sqlx.GetContext(ctx, q, &seq, `SELECT coalesce(max(seq), 0) FROM dds.events WHERE tenant_id = $1`, tenantID)
	return seq, err
}

// Prune deletes events relayed more than age ago, at most batch rows per
// statement (so no DELETE holds many locks), and returns how many.
func (s *Store) Prune(ctx context.Context, age time.Duration, batch int) (int64, error) {
	var total int64
	ival := (time.Duration(age.Seconds()) * time.Second).String()
	for {
		res, err := s.db.ExecContext(ctx, `DELETE FROM dds.events WHERE id IN (SELECT id FROM dds.events
			WHERE relayed_at IS NOT NULL AND relayed_at < now() - $1::interval LIMIT $2)`, ival, batch)
		if err != nil {
			return total, err
		}
		n, _ := res.RowsAffected()
		total += n
		if n < int64(batch) {
			return total, nil
		}
	}
}

// Backlog is the state of the unrelayed part of the outbox.
type Backlog struct {
	Unrelayed int64
	// OldestAge is the age of the oldest unrelayed event (0 when none):
	// the outbox lag.
	OldestAge time.Duration
}

// Backlog measures the unrelayed events (uses the events_pending index).
func (s *Store) Backlog(ctx context.Context) (Backlog, error) {
	var row struct {
		N   int64   `db:"n"`
		Age float64 `db:"age"`
	}
	err := s.db.GetContext(ctx, &row, `SELECT count(*) AS n,
		COALESCE(EXTRACT(EPOCH FROM now() - (SELECT created_at FROM dds.events WHERE relayed_at IS NULL ORDER BY seq LIMIT 1)), 0)::float8 AS age
		FROM dds.events WHERE relayed_at IS NULL`)
	return Backlog{Unrelayed: row.N, OldestAge: time.Duration(row.Age * float64(time.Second))}, err
}

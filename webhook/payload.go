// Package webhook owns outgoing webhooks: the delivery payload (spec §2.4),
// signing (X-Webhook-Signature plus Standard Webhooks headers), the
// SSRF-safe HTTP client, the Postgres store of webhooks, deliveries and
// attempts, and one delivery attempt (Deliverer) shared by the outbox relay
// (first attempt) and the Temporal retry workflow (later attempts).
package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Event types a webhook may subscribe to (spec §6.1).
const (
	EventCreated = "entity.created"
	EventUpdated = "entity.updated"
	EventDeleted = "entity.deleted"
)

// EventTypes lists every valid event type.
var EventTypes = []string{EventCreated, EventUpdated, EventDeleted}

// ValidEventType reports whether t is one of EventTypes.
func ValidEventType(t string) bool { return slices.Contains(EventTypes, t) }

// Event is one outbox event (a row of dds.events) plus its tenant's name;
// the relay scans claimed events into it directly.
type Event struct {
	ID         string          `db:"id"`
	TenantID   string          `db:"tenant_id"`
	TenantName string          `db:"tenant_name"`
	SchemaName string          `db:"schema_name"`
	Type       string          `db:"type"`
	EntityName string          `db:"entity_name"`
	EntityID   string          `db:"entity_id"`
	Record     json.RawMessage `db:"record"`
	CreatedAt  time.Time       `db:"created_at"`
}

// Payload is the delivery body of spec §2.4.
type Payload struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Timestamp string        `json:"timestamp"`
	Data      PayloadData   `json:"data"`
	Tenant    PayloadTenant `json:"tenant"`
}

// PayloadData carries the entity.
type PayloadData struct {
	EntityName string          `json:"entityName"`
	EntityID   string          `json:"entityId"`
	Record     json.RawMessage `json:"record"`
}

// PayloadTenant names the tenant.
type PayloadTenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Body renders the payload bytes for ev. The bytes are computed once per
// event, stored with each delivery and sent unchanged on every attempt, so
// a receiver verifying a retry sees exactly the same body.
func Body(ev Event) ([]byte, error) {
	rec := ev.Record
	if len(rec) == 0 {
		rec = json.RawMessage("{}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, rec); err != nil {
		return nil, fmt.Errorf("event %s: record is not JSON: %w", ev.ID, err)
	}
	p := Payload{
		ID:        ev.ID,
		Type:      ev.Type,
		Timestamp: ev.CreatedAt.UTC().Format(time.RFC3339Nano),
		Data:      PayloadData{EntityName: ev.EntityName, EntityID: ev.EntityID, Record: compact.Bytes()},
		Tenant:    PayloadTenant{ID: ev.TenantID, Name: ev.TenantName},
	}
	return json.Marshal(p)
}

// Package webhook owns outgoing webhooks: the control-plane tables
// dds.webhooks and dds.webhook_deliveries (the store of webhooks,
// deliveries and attempts), the delivery payload (docs/webhooks.md),
// signing (X-Webhook-Signature plus Standard Webhooks headers), the
// SSRF-safe HTTP client, one delivery attempt (Deliverer) shared by the
// outbox relay (first attempt) and the retry workflow (later attempts), and
// that durable retry: the Temporal workflow, its activity, their
// registration with a worker (Register) and the starts that the relay's
// hand-over and the API's manual replay make.
//
// The retry workflow lives here rather than in package relay because it
// belongs to the delivery rows, not to the outbox: it reads and writes only
// dds.webhook_deliveries through the Deliverer, and the relay is only one
// of its two starters (the API's replay is the other, and must not depend
// on the relay loop).
package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dds-project/dds/outbox"
)

// Payload is the delivery body (docs/webhooks.md, "What a receiver gets").
type Payload struct {
	ID        string        `json:"id"`
	Type      string        `json:"type"`
	Timestamp string        `json:"timestamp"`
	Data      PayloadData   `json:"data"`
	Tenant    PayloadTenant `json:"tenant"`
}

// PayloadData carries the entity (entity events) or the edge
// (relationship events).
type PayloadData struct {
	EntityName string          `json:"entityName,omitempty"`
	EntityID   string          `json:"entityId,omitempty"`
	Record     json.RawMessage `json:"record,omitempty"`

	RelationshipName string          `json:"relationshipName,omitempty"`
	EdgeID           string          `json:"edgeId,omitempty"`
	SourceEntity     string          `json:"sourceEntity,omitempty"`
	SourceID         string          `json:"sourceId,omitempty"`
	TargetEntity     string          `json:"targetEntity,omitempty"`
	TargetID         string          `json:"targetId,omitempty"`
	Properties       json.RawMessage `json:"properties,omitempty"`
}

// PayloadTenant names the tenant.
type PayloadTenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Body renders the payload bytes for ev. The bytes are computed once per
// event, stored with each delivery and sent unchanged on every attempt, so
// a receiver verifying a retry sees exactly the same body.
func Body(ev outbox.Event) ([]byte, error) {
	p := Payload{
		ID:        ev.ID,
		Type:      ev.Type,
		Timestamp: ev.CreatedAt.UTC().Format(time.RFC3339Nano),
		Tenant:    PayloadTenant{ID: ev.TenantID, Name: ev.TenantName},
	}
	if outbox.IsOperational(ev.Type) {
		var compact bytes.Buffer
		if err := json.Compact(&compact, ev.Record); err != nil {
			return nil, fmt.Errorf("event %s: data is not JSON: %w", ev.ID, err)
		}
		return json.Marshal(struct {
			ID        string          `json:"id"`
			Type      string          `json:"type"`
			Timestamp string          `json:"timestamp"`
			Data      json.RawMessage `json:"data"`
			Tenant    PayloadTenant   `json:"tenant"`
		}{p.ID, p.Type, p.Timestamp, compact.Bytes(), p.Tenant})
	}
	if outbox.IsRelationship(ev.Type) {
		x, err := ev.Edge()
		if err != nil {
			return nil, fmt.Errorf("event %s: edge is not JSON: %w", ev.ID, err)
		}
		props := x.Properties
		if len(props) == 0 || string(props) == "null" {
			props = json.RawMessage("{}")
		}
		p.Data = PayloadData{RelationshipName: x.Relationship, EdgeID: x.ID, SourceEntity: x.SourceEntity, SourceID: x.SourceID,
			TargetEntity: x.TargetEntity, TargetID: x.TargetID, Properties: props}
		return json.Marshal(p)
	}
	rec := ev.Record
	if len(rec) == 0 {
		rec = json.RawMessage("{}")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, rec); err != nil {
		return nil, fmt.Errorf("event %s: record is not JSON: %w", ev.ID, err)
	}
	p.Data = PayloadData{EntityName: ev.Name, EntityID: ev.SubjectID, Record: compact.Bytes()}
	return json.Marshal(p)
}

package outbox

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/jmoiron/sqlx"
)

// Operational event types (docs/webhooks.md, "Operational events"): about
// the tenant's webhooks, not its records. They are outbox events like the
// others — relayed, signed and delivered to the webhooks that subscribe to
// them — but tenant-level: no schema (nil schema id, empty name), no
// entity (empty entity name; entity_id is the webhook or the delivery the
// event is about) and record holds the payload's data. Change feeds and
// subscriptions, which follow records, never show them.
const (
	WebhookDisabled   = "webhook.disabled"
	DeliveryExhausted = "delivery.exhausted"
)

// OperationalTypes lists the operational event types, in documentation order.
var OperationalTypes = []string{WebhookDisabled, DeliveryExhausted}

// IsOperational reports whether t is an operational event type.
func IsOperational(t string) bool { return slices.Contains(OperationalTypes, t) }

// WebhookTypes is every type a webhook may subscribe to: the record
// events, then the operational ones.
func WebhookTypes() []string { return append(slices.Clone(Types), OperationalTypes...) }

// ValidWebhookType reports whether a webhook may subscribe to t.
func ValidWebhookType(t string) bool { return ValidType(t) || IsOperational(t) }

// recordEventsOnly is the condition that keeps operational events out of
// the reads that follow records (subscriptions, the change feed).
const recordEventsOnly = `type NOT IN ('webhook.disabled', 'delivery.exhausted')`

// Operational is one operational event to write.
type Operational struct {
	TenantID  string
	Type      string // one of OperationalTypes
	SubjectID string // the webhook (webhook.disabled) or the delivery (delivery.exhausted)
	Data      json.RawMessage
}

// InsertOperational writes operational events in the caller's transaction,
// so an event exists exactly when the change it reports committed.
func InsertOperational(ctx context.Context, tx sqlx.ExecerContext, evs []Operational) error {
	if len(evs) == 0 {
		return nil
	}
	var tn, ty, sub []string
	var data [][]byte
	for _, e := range evs {
		tn = append(tn, e.TenantID)
		ty = append(ty, e.Type)
		sub = append(sub, e.SubjectID)
		data = append(data, e.Data)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
		SELECT u.t, '00000000-0000-0000-0000-000000000000', '', u.ty, '', u.s, convert_from(u.d, 'UTF8')::jsonb
		FROM unnest($1::uuid[], $2::text[], $3::uuid[], $4::bytea[]) AS u(t, ty, s, d)`,
		tn, ty, sub, data)
	return err
}

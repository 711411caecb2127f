package openapi

import (
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/schema"
)

// EventType is one event type a tenant can receive (webhooks, change
// feeds) with the JSON Schema (2020-12, as OpenAPI 3.1 uses) of the body
// a receiver gets (docs/webhooks.md, "What a receiver gets").
type EventType struct {
	Type        string           `json:"type"`
	Description string           `json:"description"`
	Schema      *openapi3.Schema `json:"schema"`
}

var eventDescriptions = map[string]string{
	outbox.EntityCreated:       "A record was created.",
	outbox.EntityUpdated:       "A record was updated; `record` is the record after the write.",
	outbox.EntityDeleted:       "A record was deleted; `record` is the record as it was before.",
	outbox.RelationshipCreated: "An edge was created.",
	outbox.RelationshipUpdated: "An edge's properties were updated.",
	outbox.RelationshipDeleted: "An edge was deleted.",
	outbox.WebhookDisabled:     "A webhook of the tenant was disabled automatically: its receiver answered 410 Gone, or every attempt failed for 5 days.",
	outbox.DeliveryExhausted:   "A delivery's retries ran out: its last retry failed and it will not be attempted again (unless replayed).",
}

// EventTypes lists every event type with its payload schema, generated
// from def (the tenant's active schema; nil: none, so records and edges
// are described without their fields). The output is deterministic for
// the same input.
func EventTypes(def *schema.Definition) []EventType {
	var out []EventType
	for _, t := range outbox.Types {
		var data *openapi3.Schema
		if t == outbox.EntityCreated || t == outbox.EntityUpdated || t == outbox.EntityDeleted {
			data = entityData(def)
		} else {
			data = edgeData(def)
		}
		out = append(out, EventType{Type: t, Description: eventDescriptions[t], Schema: envelope(t, data)})
	}
	out = append(out,
		EventType{Type: outbox.WebhookDisabled, Description: eventDescriptions[outbox.WebhookDisabled], Schema: envelope(outbox.WebhookDisabled, disabledData())},
		EventType{Type: outbox.DeliveryExhausted, Description: eventDescriptions[outbox.DeliveryExhausted], Schema: envelope(outbox.DeliveryExhausted, exhaustedData())})
	return out
}

// disabledData is the data of webhook.disabled (webhook.DisabledData).
func disabledData() *openapi3.Schema {
	reason := str("gone: the receiver answered 410; failing: every attempt failed for 5 days")
	reason.Enum = []any{"gone", "failing"}
	code := nullable(integer("HTTP status of the failed attempt; null when no answer arrived (time-out, refused)"))
	last := closed(object(openapi3.Schemas{
		"deliveryId":  val(withFormat(str("the delivery whose attempt failed last"), "uuid")),
		"statusCode":  val(code),
		"error":       val(nullable(str("what went wrong"))),
		"attemptedAt": val(withFormat(str("when"), "date-time")),
	}, "deliveryId", "statusCode", "error", "attemptedAt"))
	last.Description = "the latest failed attempt (the one that disabled it)"
	return closed(object(openapi3.Schemas{
		"webhookId":  val(withFormat(str("the disabled webhook"), "uuid")),
		"targetUrl":  val(str("its receiver")),
		"reason":     val(reason),
		"disabledAt": val(withFormat(str("when it was disabled"), "date-time")),
		"lastError":  val(last),
	}, "webhookId", "targetUrl", "reason", "disabledAt", "lastError"))
}

// exhaustedData is the data of delivery.exhausted (webhook.ExhaustedData).
func exhaustedData() *openapi3.Schema {
	types := []any{}
	for _, t := range outbox.Types {
		types = append(types, t)
	}
	et := str("the type of the event that was not delivered")
	et.Enum = types
	return closed(object(openapi3.Schemas{
		"webhookId":      val(withFormat(str("the webhook"), "uuid")),
		"deliveryId":     val(withFormat(str("the delivery (GET /api/v1/webhooks/{id}/deliveries)"), "uuid")),
		"eventId":        val(withFormat(str("the event not delivered (its webhook-id)"), "uuid")),
		"eventType":      val(et),
		"attempts":       val(integer("attempts made, the first included")),
		"lastStatusCode": val(nullable(integer("HTTP status of the last attempt; null when no answer arrived"))),
		"lastError":      val(nullable(str("what went wrong on the last attempt"))),
		"lastAttemptAt":  val(withFormat(str("when the last attempt was made"), "date-time")),
	}, "webhookId", "deliveryId", "eventId", "eventType", "attempts", "lastStatusCode", "lastError", "lastAttemptAt"))
}

func envelope(t string, data *openapi3.Schema) *openapi3.Schema {
	id := withFormat(str("event id (UUIDv7); also the webhook-id header"), "uuid")
	ty := str("event type")
	ty.Enum = []any{t}
	ts := withFormat(str("commit time of the write"), "date-time")
	tenant := closed(object(openapi3.Schemas{"id": val(withFormat(str("tenant id"), "uuid")), "name": val(str("tenant name"))}, "id", "name"))
	s := closed(object(openapi3.Schemas{"id": val(id), "type": val(ty), "timestamp": val(ts), "data": val(data), "tenant": val(tenant)},
		"id", "type", "timestamp", "data", "tenant"))
	s.Description = "The body of an " + t + " delivery."
	return s
}

func entityData(def *schema.Definition) *openapi3.Schema {
	name := str("entity name")
	var records []*openapi3.SchemaRef
	if def != nil {
		for i := range def.Entities {
			e := &def.Entities[i]
			name.Enum = append(name.Enum, e.Name)
			rec, _ := recordSchema(e)
			// anyOf: two entities may share a shape.
			records = append(records, val(rec))
		}
	}
	record := typed("object")
	record.Description = "the record with every field"
	if len(records) > 0 {
		record = &openapi3.Schema{AnyOf: records, Description: "the record with every field, by entity (`entityName`)"}
		if len(records) == 1 {
			record = records[0].Value
		}
	}
	entityID := withFormat(str("record id"), "uuid")
	return closed(object(openapi3.Schemas{"entityName": val(name), "entityId": val(entityID), "record": val(record)},
		"entityName", "entityId", "record"))
}

func edgeData(def *schema.Definition) *openapi3.Schema {
	name := str("relationship name")
	ents := map[string]bool{}
	var props []*openapi3.SchemaRef
	if def != nil {
		for i := range def.Relationships {
			r := &def.Relationships[i]
			name.Enum = append(name.Enum, r.Name)
			ents[r.From], ents[r.To] = true, true
			ps := openapi3.Schemas{}
			for j := range r.Properties {
				ps[r.Properties[j].Name] = val(fieldSchema(&r.Properties[j]))
			}
			p := object(ps)
			p.Description = fmt.Sprintf("the properties of a %s edge", r.Name)
			props = append(props, val(p))
		}
	}
	properties := typed("object")
	properties.Description = "the edge's properties"
	if len(props) > 0 {
		properties = &openapi3.Schema{AnyOf: props, Description: "the edge's properties, by relationship (`relationshipName`)"}
	}
	entity := str("entity name")
	if def != nil {
		for i := range def.Entities {
			if ents[def.Entities[i].Name] {
				entity.Enum = append(entity.Enum, def.Entities[i].Name)
			}
		}
	}
	uuidStr := func(d string) *openapi3.SchemaRef { return val(withFormat(str(d), "uuid")) }
	return closed(object(openapi3.Schemas{
		"relationshipName": val(name), "edgeId": uuidStr("edge id"),
		"sourceEntity": val(entity), "sourceId": uuidStr("source record id"),
		"targetEntity": val(entity), "targetId": uuidStr("target record id"),
		"properties": val(properties),
	}, "relationshipName", "edgeId", "sourceEntity", "sourceId", "targetEntity", "targetId", "properties"))
}

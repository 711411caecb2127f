package openapi

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/webhook"
)

// deliveries documents what a tenant's key does with a webhook after
// creating it (docs/webhooks.md): delete it, read its delivery log, retry
// one delivery, replay its deliveries since a time (a durable job) and
// follow the replay, and list the event types with their payload schemas.
// A client generated from the document can then recover failed deliveries
// without reading the docs.
func (b *builder) deliveries(tag string, eventType *openapi3.Schema) {
	dt := func(d string) *openapi3.Schema { return withFormat(str(d), "date-time") }
	uuid := func(d string) *openapi3.SchemaRef { return val(withFormat(str(d), "uuid")) }
	status := str("pending: committed, first attempt not yet recorded; queued: waiting for a slot of the webhook's rateLimit; succeeded: a 2xx was received; retrying: failed, a retry is scheduled; failed: the last retry failed too; cancelled: the webhook was deactivated or deleted first")
	status.Enum = []any{webhook.StatusPending, webhook.StatusQueued, webhook.StatusSucceeded, webhook.StatusRetrying, webhook.StatusFailed, webhook.StatusCancelled}
	attempts := integer("attempts made so far")
	attempts.Min = fptr(0)

	b.schemas["dds.WebhookAttempt"] = val(object(openapi3.Schemas{
		"attempt":       val(withDesc(integer(""), "1 for the first attempt, then each retry or replay")),
		"statusCode":    val(nullable(integer("the receiver's HTTP status; null: no answer (see error)"))),
		"latencyMs":     val(integer("time to the receiver's answer, in milliseconds")),
		"error":         val(nullable(str("why the attempt failed; null when it succeeded"))),
		"attemptedAt":   val(dt("")),
		"nextAttemptAt": val(nullable(dt("when the next retry is scheduled; null: none"))),
	}, "attempt", "statusCode", "latencyMs", "error", "attemptedAt", "nextAttemptAt"))
	b.schemas["dds.WebhookDelivery"] = val(object(openapi3.Schemas{
		"id":            uuid("delivery id"),
		"webhookId":     uuid("the webhook"),
		"eventId":       uuid("the event delivered (its webhook-id header, the same on every attempt)"),
		"eventType":     val(eventType),
		"entityName":    val(str("the entity or relationship of the event; empty for operational events")),
		"status":        val(status),
		"attempts":      val(attempts),
		"lastAttemptAt": val(nullable(dt(""))),
		"nextAttemptAt": val(nullable(dt("when the next retry is scheduled; null: none"))),
		"createdAt":     val(dt("")),
		"updatedAt":     val(dt("")),
		"attemptLog":    val(withDesc(array(ref("dds.WebhookAttempt")), "every attempt, in order (in the deliveries list)")),
	}, "id", "webhookId", "eventId", "eventType", "entityName", "status", "attempts", "lastAttemptAt", "nextAttemptAt", "createdAt", "updatedAt"))
	b.schemas["dds.WebhookDeliveryList"] = val(object(openapi3.Schemas{"deliveries": val(array(ref("dds.WebhookDelivery")))}, "deliveries"))

	b.schemas["dds.WebhookReplayRequest"] = val(closed(object(openapi3.Schemas{
		"since":      val(dt("re-send the deliveries created at or after this time (not in the future)")),
		"until":      val(nullable(dt("and before this time (after since); null or absent: up to now"))),
		"onlyFailed": val(withDesc(typed("boolean"), "only deliveries whose retries ran out (status failed); default false: every delivery of the range")),
	}, "since")))
	running := str("")
	running.Enum = []any{"running"}
	b.schemas["dds.WebhookReplay"] = val(object(openapi3.Schemas{
		"id":         uuid("replay id: follow it at GET /api/v1/webhooks/{id}/replays/{replayId}"),
		"webhookId":  uuid("the webhook"),
		"status":     val(running),
		"since":      val(dt("")),
		"until":      val(nullable(dt(""))),
		"onlyFailed": val(typed("boolean")),
	}, "id", "webhookId", "status", "since", "until", "onlyFailed"))
	replayStatus := str("running; completed: every delivery of the range was handed to its delivery (its attempts show in the log); failed: the job failed or was cancelled")
	replayStatus.Enum = []any{"running", "completed", "failed"}
	b.schemas["dds.WebhookReplayStatus"] = val(object(openapi3.Schemas{
		"id":         uuid("replay id"),
		"webhookId":  uuid("the webhook"),
		"status":     val(replayStatus),
		"total":      val(integer("deliveries the replay re-sends (0 while it is still listing them)")),
		"sent":       val(integer("deliveries handed over so far")),
		"startedAt":  val(dt("")),
		"finishedAt": val(nullable(dt("null while running"))),
	}, "id", "webhookId", "status", "total", "sent", "startedAt", "finishedAt"))

	schemaDoc := typed("object")
	schemaDoc.Description = "JSON Schema (2020-12) of the body a receiver gets for this type, with the fields of the tenant's active schema"
	b.schemas["dds.EventType"] = val(object(openapi3.Schemas{
		"type":        val(eventType),
		"description": val(str("")),
		"schema":      val(schemaDoc),
	}, "type", "description", "schema"))
	b.schemas["dds.EventTypeList"] = val(object(openapi3.Schemas{"eventTypes": val(array(ref("dds.EventType")))}, "eventTypes"))

	scope := func(o string) string { return "webhook:*:" + o }
	id := pathParam("id", "webhook id")
	limit := integer("")
	limit.Min, limit.Max, limit.Default = fptr(1), fptr(500), 50
	filter := str("")
	filter.Enum = status.Enum
	b.item("/api/v1/webhooks/{id}").Delete = op{id: "deleteWebhook", summary: "Delete a webhook (its deliveries and attempt log go with it)", scope: scope("delete"), tag: tag,
		params: openapi3.Parameters{id}, ok: map[int]*openapi3.ResponseRef{204: noContent("Deleted.")}}.build()
	b.item("/api/v1/webhooks/{id}/deliveries").Get = op{id: "listWebhookDeliveries", summary: "A webhook's deliveries, newest first, each with its attempts", scope: scope("read"), tag: tag,
		params: openapi3.Parameters{id, queryParam("limit", "page size", limit), queryParam("status", "only deliveries with this status", filter)},
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("The deliveries.", ref("dds.WebhookDeliveryList"))}}.build()
	b.item("/api/v1/webhooks/{id}/deliveries/{deliveryId}/retry").Post = op{id: "retryWebhookDelivery", summary: "Send one delivery again now", scope: scope("update"), tag: tag,
		params: openapi3.Parameters{id, pathParam("deliveryId", "delivery id")},
		ok:     map[int]*openapi3.ResponseRef{202: jsonResp("The delivery, handed to a new attempt (status retrying).", ref("dds.WebhookDelivery"))},
		errors: []string{"Conflict", "Unavailable"}}.build()
	b.item("/api/v1/webhooks/{id}/replay").Post = op{id: "replayWebhook", summary: "Re-send a webhook's deliveries since a time (all, or only those whose retries ran out), as a durable job", scope: scope("update"), tag: tag,
		params: openapi3.Parameters{id}, body: jsonBody("The range to replay.", ref("dds.WebhookReplayRequest")),
		ok:     map[int]*openapi3.ResponseRef{202: jsonResp("The replay, started.", ref("dds.WebhookReplay"))},
		errors: []string{"Conflict", "Unavailable"}}.build()
	b.item("/api/v1/webhooks/{id}/replays/{replayId}").Get = op{id: "getWebhookReplay", summary: "A replay's status and progress", scope: scope("read"), tag: tag,
		params: openapi3.Parameters{id, pathParam("replayId", "replay id")},
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("The replay.", ref("dds.WebhookReplayStatus"))},
		errors: []string{"Unavailable"}}.build()
	b.item("/api/v1/event-types").Get = op{id: "listEventTypes", summary: "Every event type a webhook can subscribe to, with its payload's JSON Schema", scope: scope("read"), tag: tag,
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("The event types.", ref("dds.EventTypeList"))}}.build()
}

// eventTypeEnum is the event types a webhook subscribes to, as an enum.
func eventTypeEnum() *openapi3.Schema {
	et := str("event type")
	for _, t := range outbox.WebhookTypes() {
		et.Enum = append(et.Enum, t)
	}
	return et
}

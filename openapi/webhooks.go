package openapi

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/webhook"
)

// webhooks documents the webhook management routes a tenant's key uses
// (docs/webhooks.md): create, list, get and update, with rateLimit; the
// delivery log, retry, replay and event types are in deliveries.
func (b *builder) webhooks() {
	const tag = "Webhooks"
	b.tags = append(b.tags, &openapi3.Tag{Name: tag, Description: "Webhook subscriptions (docs/webhooks.md)"})
	evs := array(val(eventTypeEnum()))
	evs.MinItems = 1
	rate := integer("the most deliveries per second this webhook receives (any one-second window, every worker and retry together); deliveries over it wait, queued. null: unlimited")
	rate.Min, rate.Max = fptr(1), fptr(webhook.MaxRateLimit)
	props := func() openapi3.Schemas {
		return openapi3.Schemas{
			"targetUrl":   val(withFormat(str("absolute https:// URL of the receiver"), "uri")),
			"eventTypes":  val(evs),
			"entityNames": val(withDesc(nullable(array(val(typed("string")))), "entities whose events are delivered; null: every entity")),
			"schemaName":  val(nullable(str("only events of this schema; null: every schema"))),
			"rateLimit":   val(nullable(rate)),
		}
	}
	create := props()
	b.schemas["dds.WebhookCreate"] = val(closed(object(create, "targetUrl", "eventTypes")))
	patch := props()
	patch["isActive"] = val(withDesc(typed("boolean"), "false disables the webhook (disabledReason user); true re-activates it"))
	b.schemas["dds.WebhookPatch"] = val(closed(object(patch)))
	view := props()
	ts := func(d string) *openapi3.SchemaRef { return val(nullable(withFormat(str(d), "date-time"))) }
	view["id"] = val(withFormat(str("webhook id"), "uuid"))
	view["signingSecret"] = val(str("whsec_…; in the create response only"))
	view["isActive"] = val(typed("boolean"))
	view["createdAt"] = val(withFormat(str(""), "date-time"))
	view["updatedAt"] = val(withFormat(str(""), "date-time"))
	view["lastTriggered"] = ts("time of the latest attempt")
	view["successRate"] = val(withDesc(typed("number"), "fraction of attempts answered with a 2xx"))
	reason := nullable(str("why an inactive webhook was disabled"))
	reason.Enum = []any{webhook.DisabledGone, webhook.DisabledFailing, webhook.DisabledByUser, nil}
	view["disabledReason"] = val(reason)
	view["disabledAt"] = ts("when it was disabled")
	view["failingSince"] = ts("first failure of the current unbroken run of failures")
	b.schemas["dds.Webhook"] = val(object(view, "id", "targetUrl", "eventTypes", "entityNames", "schemaName", "isActive", "rateLimit"))
	b.schemas["dds.WebhookList"] = val(object(openapi3.Schemas{"webhooks": val(array(ref("dds.Webhook")))}, "webhooks"))
	scope := func(o string) string { return "webhook:*:" + o }
	id := openapi3.Parameters{pathParam("id", "webhook id")}
	b.item("/api/v1/webhooks").Post = op{id: "createWebhook", summary: "Create a webhook", scope: scope("create"), tag: tag,
		body: jsonBody("The subscription.", ref("dds.WebhookCreate")),
		ok:   map[int]*openapi3.ResponseRef{201: jsonResp("The webhook, with its signingSecret (shown only here).", ref("dds.Webhook"))}}.build()
	b.item("/api/v1/webhooks").Get = op{id: "listWebhooks", summary: "The tenant's webhooks, newest first", scope: scope("read"), tag: tag,
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("The webhooks.", ref("dds.WebhookList"))}}.build()
	b.item("/api/v1/webhooks/{id}").Get = op{id: "getWebhook", summary: "A webhook", scope: scope("read"), tag: tag, params: id,
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("The webhook.", ref("dds.Webhook"))}}.build()
	b.item("/api/v1/webhooks/{id}").Patch = op{id: "updateWebhook", summary: "Change a webhook", scope: scope("update"), tag: tag, params: id,
		body: jsonBody("The members to change; null rateLimit removes the limit.", ref("dds.WebhookPatch")),
		ok:   map[int]*openapi3.ResponseRef{200: jsonResp("The webhook.", ref("dds.Webhook"))}}.build()
	b.deliveries(tag, eventTypeEnum())
}

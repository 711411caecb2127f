package webhooks

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/webhook"
)

// replay starts a durable replay of the webhook's deliveries since a time
// (202 with the replay; its progress at GET .../replays/{replayId}).
func (h *Handler) replay(r *http.Request) (int, any, error) {
	t, err := tenant(r, "update")
	if err != nil {
		return 0, nil, err
	}
	var req struct {
		Since      json.RawMessage `json:"since"`
		Until      json.RawMessage `json:"until"`
		OnlyFailed *bool           `json:"onlyFailed"`
	}
	if err := api.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	var sinceStr string
	if len(req.Since) == 0 || string(req.Since) == "null" {
		return 0, nil, apperr.Field("since", "is required: an RFC 3339 time")
	}
	if err := json.Unmarshal(req.Since, &sinceStr); err != nil {
		return 0, nil, apperr.Field("since", "must be an RFC 3339 time string")
	}
	since, err := time.Parse(time.RFC3339Nano, sinceStr)
	if err != nil {
		return 0, nil, apperr.Field("since", "must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
	}
	if since.After(time.Now()) {
		return 0, nil, apperr.Field("since", "must not be in the future")
	}
	var until *time.Time
	if len(req.Until) > 0 && string(req.Until) != "null" {
		var s string
		if err := json.Unmarshal(req.Until, &s); err != nil {
			return 0, nil, apperr.Field("until", "must be an RFC 3339 time string")
		}
		u, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, nil, apperr.Field("until", "must be an RFC 3339 time, e.g. 2026-01-02T15:04:05Z")
		}
		if !u.After(since) {
			return 0, nil, apperr.Field("until", "must be after since")
		}
		until = &u
	}
	ctx := r.Context()
	wh, err := h.store.Get(ctx, t, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if !wh.IsActive {
		return 0, nil, apperr.New(apperr.Conflict, "webhook %s is inactive; activate it to replay deliveries", wh.ID)
	}
	if h.temporal == nil {
		return 0, nil, apperr.New(apperr.Unavailable, "replay needs the Temporal service, which is not configured")
	}
	in := webhook.ReplayInput{TenantID: t, WebhookID: wh.ID, Since: since, Until: until, OnlyFailed: req.OnlyFailed != nil && *req.OnlyFailed}
	id, err := webhook.StartReplay(ctx, h.temporal, h.taskQueue, in)
	if err != nil {
		return 0, nil, apperr.Wrap(err, "start replay")
	}
	return http.StatusAccepted, map[string]any{"id": id, "webhookId": wh.ID, "status": "running",
		"since": since, "until": until, "onlyFailed": in.OnlyFailed}, nil
}

// getReplay answers a replay's status and progress.
func (h *Handler) getReplay(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	wh, err := h.store.Get(ctx, t, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	if h.temporal == nil {
		return 0, nil, apperr.New(apperr.Unavailable, "replays need the Temporal service, which is not configured")
	}
	st, err := webhook.GetReplay(ctx, h.temporal, wh.ID, r.PathValue("replayId"))
	return http.StatusOK, st, err
}

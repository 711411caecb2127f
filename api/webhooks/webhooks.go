// Package webhooks is the HTTP surface of webhook management (docs/webhooks.md):
// create, list, get, update and delete webhooks, plus the delivery log of a
// webhook and manual replay of one delivery. Scopes: webhook:*:<op>.
package webhooks

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/obs"
	"github.com/dds-project/dds/webhook"
)

// Handler serves the webhook API.
type Handler struct {
	store        *webhook.Store
	temporal     client.Client // for manual replay; may be nil (replay answers 503)
	taskQueue    string
	allowPrivate bool
}

// New returns the handler. allowPrivate mirrors DDS_WEBHOOK_ALLOW_PRIVATE:
// without it a target naming a loopback/private IP literal is refused at
// create time (names are checked again on every dial).
func New(store *webhook.Store, tc client.Client, taskQueue string, allowPrivate bool) *Handler {
	return &Handler{store: store, temporal: tc, taskQueue: taskQueue, allowPrivate: allowPrivate}
}

// Routes registers the webhook API.
func (h *Handler) Routes(r *api.Router) {
	r.Handle("POST /api/v1/webhooks", api.Func(h.create))
	r.Handle("GET /api/v1/webhooks", api.Func(h.list))
	r.Handle("GET /api/v1/webhooks/{id}", api.Func(h.get))
	r.Handle("PATCH /api/v1/webhooks/{id}", api.Func(h.update))
	r.Handle("DELETE /api/v1/webhooks/{id}", api.Func(h.delete))
	r.Handle("GET /api/v1/webhooks/{id}/deliveries", api.Func(h.deliveries))
	r.Handle("POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/retry", api.Func(h.retry))
	r.Handle("POST /api/v1/webhooks/{id}/replay", api.Func(h.replay))
	r.Handle("GET /api/v1/webhooks/{id}/replays/{replayId}", api.Func(h.getReplay))
}

// tenant checks the scope webhook:*:op and returns the caller's tenant.
func tenant(r *http.Request, op string) (string, error) {
	p, err := api.Authorize(r, "webhook", op)
	return p.TenantID, err
}

// view is a webhook as the API shows it; the signing secret only in the
// create response.
type view struct {
	ID            string     `json:"id"`
	TargetURL     string     `json:"targetUrl"`
	EventTypes    []string   `json:"eventTypes"`
	EntityNames   []string   `json:"entityNames"` // null: every entity
	SchemaName    *string    `json:"schemaName"`  // null: every schema
	SigningSecret string     `json:"signingSecret,omitempty"`
	IsActive      bool       `json:"isActive"`
	CreatedAt     time.Time  `json:"createdAt"`
	UpdatedAt     time.Time  `json:"updatedAt"`
	LastTriggered *time.Time `json:"lastTriggered"`
	SuccessRate   float64    `json:"successRate"`
	// Why and when an inactive webhook was disabled: "gone" (the receiver
	// answered 410), "failing" (five days of failures) or "user".
	DisabledReason *string    `json:"disabledReason"`
	DisabledAt     *time.Time `json:"disabledAt"`
	// FailingSince is the first failure of the current unbroken run.
	FailingSince *time.Time `json:"failingSince"`
	// RateLimit is the most deliveries per second; null: unlimited.
	RateLimit *int `json:"rateLimit"`
}

func toView(wh *webhook.Webhook) view {
	v := view{ID: wh.ID, TargetURL: wh.TargetURL, EventTypes: wh.EventTypes, IsActive: wh.IsActive,
		CreatedAt: wh.CreatedAt, UpdatedAt: wh.UpdatedAt, LastTriggered: wh.LastTriggered, SuccessRate: wh.SuccessRate(),
		DisabledReason: wh.DisabledReason, DisabledAt: wh.DisabledAt, FailingSince: wh.FailingSince, RateLimit: wh.RateLimit}
	if wh.EntityNames != nil {
		v.EntityNames = wh.EntityNames
	}
	if wh.SchemaName != "" {
		v.SchemaName = &wh.SchemaName
	}
	return v
}

type createRequest struct {
	TargetURL   string   `json:"targetUrl"`
	EventTypes  []string `json:"eventTypes"`
	EntityNames []string `json:"entityNames"`
	SchemaName  string   `json:"schemaName"`
	// RateLimit is parsed by rateLimit: a wrong type must be a 400 naming it.
	RateLimit json.RawMessage `json:"rateLimit"`
}

// rateLimit parses a rateLimit member: null (or absent) is unlimited,
// otherwise an integer within webhook.ValidateRateLimit's range.
func rateLimit(raw json.RawMessage) (*int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != math.Trunc(f) || f < math.MinInt32 || f > math.MaxInt32 {
		return nil, apperr.Fields([]apperr.FieldError{*webhook.ValidateRateLimit(new(int))})
	}
	n := int(f)
	if fe := webhook.ValidateRateLimit(&n); fe != nil {
		return nil, apperr.Fields([]apperr.FieldError{*fe})
	}
	return &n, nil
}

func (h *Handler) create(r *http.Request) (int, any, error) {
	t, err := tenant(r, "create")
	if err != nil {
		return 0, nil, err
	}
	var req createRequest
	if err := api.DecodeJSON(r, &req); err != nil {
		return 0, nil, err
	}
	if req.TargetURL == "" {
		return 0, nil, apperr.Field("targetUrl", "is required")
	}
	rate, err := rateLimit(req.RateLimit)
	if err != nil {
		return 0, nil, err
	}
	wh, err := h.store.Create(r.Context(), t, webhook.CreateInput{TargetURL: req.TargetURL, EventTypes: req.EventTypes,
		EntityNames: req.EntityNames, SchemaName: req.SchemaName, RateLimit: rate}, h.allowPrivate)
	if err != nil {
		return 0, nil, err
	}
	v := toView(wh)
	v.SigningSecret = wh.SigningSecret
	return http.StatusCreated, v, nil
}

func (h *Handler) list(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	hooks, err := h.store.List(r.Context(), t)
	if err != nil {
		return 0, nil, err
	}
	out := make([]view, len(hooks))
	for i := range hooks {
		out[i] = toView(&hooks[i])
	}
	return http.StatusOK, map[string]any{"webhooks": out}, nil
}

func (h *Handler) get(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	return viewOf(h.store.Get(r.Context(), t, r.PathValue("id")))
}

// viewOf renders a webhook the store returned, or its error.
func viewOf(wh *webhook.Webhook, err error) (int, any, error) {
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, toView(wh), nil
}

func (h *Handler) update(r *http.Request) (int, any, error) {
	t, err := tenant(r, "update")
	if err != nil {
		return 0, nil, err
	}
	var raw map[string]json.RawMessage
	if err := api.DecodeJSON(r, &raw); err != nil {
		return 0, nil, err
	}
	if err := api.UnknownMembers(raw, "targetUrl", "eventTypes", "entityNames", "schemaName", "isActive", "rateLimit"); err != nil {
		return 0, nil, err
	}
	var p webhook.Patch
	var errs []apperr.FieldError
	field := func(name string, dst any, kind string) bool {
		v, ok := raw[name]
		if !ok {
			return false
		}
		if err := json.Unmarshal(v, dst); err != nil || string(v) == "null" && kind != "list" {
			errs = append(errs, apperr.FieldError{Field: name, Message: "must be " + kind})
			return false
		}
		return true
	}
	var target, schemaName string
	var active bool
	var types, names []string
	if field("targetUrl", &target, "a string") {
		p.TargetURL = &target
	}
	if field("eventTypes", &types, "an array of strings") {
		p.EventTypes = &types
	}
	if field("entityNames", &names, "list") { // null or [] clears the filter
		p.EntityNames = &names
	}
	if field("schemaName", &schemaName, "a string") {
		p.SchemaName = &schemaName
	}
	if field("isActive", &active, "a boolean") {
		p.IsActive = &active
	}
	if v, ok := raw["rateLimit"]; ok {
		rate, err := rateLimit(v)
		if err != nil {
			errs = append(errs, apperr.As(err).Details...)
		}
		p.SetRateLimit, p.RateLimit = err == nil, rate
	}
	if err := apperr.Fields(errs); err != nil {
		return 0, nil, err
	}
	return viewOf(h.store.Update(r.Context(), t, r.PathValue("id"), p, h.allowPrivate))
}

func (h *Handler) delete(r *http.Request) (int, any, error) {
	t, err := tenant(r, "delete")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, h.store.Delete(r.Context(), t, r.PathValue("id"))
}

func (h *Handler) deliveries(r *http.Request) (int, any, error) {
	t, err := tenant(r, "read")
	if err != nil {
		return 0, nil, err
	}
	limit := 50
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			return 0, nil, apperr.Field("limit", "must be an integer from 1 to 500")
		}
		limit = n
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", webhook.StatusPending, webhook.StatusQueued, webhook.StatusSucceeded, webhook.StatusRetrying, webhook.StatusFailed, webhook.StatusCancelled:
	default:
		return 0, nil, apperr.Field("status", "must be one of pending, queued, succeeded, retrying, failed, cancelled")
	}
	ds, err := h.store.Deliveries(r.Context(), t, r.PathValue("id"), limit, status)
	return http.StatusOK, map[string]any{"deliveries": ds}, err
}

func (h *Handler) retry(r *http.Request) (int, any, error) {
	t, err := tenant(r, "update")
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	wh, err := h.store.Get(ctx, t, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	d, err := h.store.GetDelivery(ctx, t, wh.ID, r.PathValue("deliveryId"))
	if err != nil {
		return 0, nil, err
	}
	if !wh.IsActive {
		return 0, nil, apperr.New(apperr.Conflict, "webhook %s is inactive; activate it to replay deliveries", wh.ID)
	}
	if d.Status == webhook.StatusPending {
		return 0, nil, apperr.New(apperr.Conflict, "delivery %s is being attempted right now", d.ID)
	}
	if d.Status == webhook.StatusQueued {
		return 0, nil, apperr.New(apperr.Conflict, "delivery %s is queued behind the webhook's rate limit and has not been attempted yet", d.ID)
	}
	if h.temporal == nil {
		return 0, nil, apperr.New(apperr.Unavailable, "replay needs the Temporal service, which is not configured")
	}
	reopened, err := h.store.Reopen(ctx, d.ID)
	if err != nil {
		return 0, nil, err
	}
	if err := webhook.ReplayDelivery(ctx, h.temporal, h.taskQueue, webhook.DeliveryInput{DeliveryID: d.ID,
		WebhookID: wh.ID, EventID: d.EventID, TenantID: t, EventType: d.EventType}); err != nil {
		if reopened { // no workflow owns it: put the old state back
			if rerr := h.store.SetStatus(context.WithoutCancel(ctx), d.ID, d.Status); rerr != nil {
				obs.LoggerFrom(ctx).Error("replay: restore delivery status; it stays retrying without a workflow",
					"delivery", d.ID, "status", d.Status, "err", rerr)
			}
		}
		return 0, nil, apperr.Wrap(err, "start replay")
	}
	d, err = h.store.GetDelivery(ctx, t, wh.ID, d.ID)
	return http.StatusAccepted, d, err
}

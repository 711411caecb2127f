// Package webhooks is the HTTP surface of webhook management (spec §4.7):
// create, list, get, update and delete webhooks, plus the delivery log of a
// webhook and manual replay of one delivery. Scopes: webhook:*:<op>.
package webhooks

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/workflows"
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
	r.HandleFunc("POST /api/v1/webhooks", h.create)
	r.HandleFunc("GET /api/v1/webhooks", h.list)
	r.HandleFunc("GET /api/v1/webhooks/{id}", h.get)
	r.HandleFunc("PATCH /api/v1/webhooks/{id}", h.update)
	r.HandleFunc("DELETE /api/v1/webhooks/{id}", h.delete)
	r.HandleFunc("GET /api/v1/webhooks/{id}/deliveries", h.deliveries)
	r.HandleFunc("POST /api/v1/webhooks/{id}/deliveries/{deliveryId}/retry", h.retry)
}

func tenant(w http.ResponseWriter, r *http.Request, op string) (string, bool) {
	p := api.Principal(r)
	if err := p.Require("webhook", "*", op); err != nil {
		api.WriteError(w, r, err)
		return "", false
	}
	return p.TenantID, true
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
}

func toView(wh *webhook.Webhook) view {
	v := view{ID: wh.ID, TargetURL: wh.TargetURL, EventTypes: wh.EventTypes, IsActive: wh.IsActive,
		CreatedAt: wh.CreatedAt, UpdatedAt: wh.UpdatedAt, LastTriggered: wh.LastTriggered, SuccessRate: wh.SuccessRate()}
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
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "create")
	if !ok {
		return
	}
	var req createRequest
	if err := api.DecodeJSON(r, &req); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if req.TargetURL == "" {
		api.WriteError(w, r, apperr.Field("targetUrl", "is required"))
		return
	}
	wh, err := h.store.Create(r.Context(), t, webhook.CreateInput{TargetURL: req.TargetURL, EventTypes: req.EventTypes,
		EntityNames: req.EntityNames, SchemaName: req.SchemaName}, h.allowPrivate)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	v := toView(wh)
	v.SigningSecret = wh.SigningSecret
	api.WriteJSON(w, http.StatusCreated, v)
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "read")
	if !ok {
		return
	}
	hooks, err := h.store.List(r.Context(), t)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	out := make([]view, len(hooks))
	for i := range hooks {
		out[i] = toView(&hooks[i])
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"webhooks": out})
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "read")
	if !ok {
		return
	}
	wh, err := h.store.Get(r.Context(), t, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, toView(wh))
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "update")
	if !ok {
		return
	}
	var raw map[string]json.RawMessage
	if err := api.DecodeJSON(r, &raw); err != nil {
		api.WriteError(w, r, err)
		return
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
	if err := apperr.Fields(errs); err != nil {
		api.WriteError(w, r, err)
		return
	}
	wh, err := h.store.Update(r.Context(), t, r.PathValue("id"), p, h.allowPrivate)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, toView(wh))
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "delete")
	if !ok {
		return
	}
	if err := h.store.Delete(r.Context(), t, r.PathValue("id")); err != nil {
		api.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) deliveries(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "read")
	if !ok {
		return
	}
	limit := 50
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			api.WriteError(w, r, apperr.Field("limit", "must be an integer from 1 to 500"))
			return
		}
		limit = n
	}
	status := r.URL.Query().Get("status")
	switch status {
	case "", webhook.StatusPending, webhook.StatusSucceeded, webhook.StatusRetrying, webhook.StatusFailed, webhook.StatusCancelled:
	default:
		api.WriteError(w, r, apperr.Field("status", "must be one of pending, succeeded, retrying, failed, cancelled"))
		return
	}
	ds, err := h.store.Deliveries(r.Context(), t, r.PathValue("id"), limit, status)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"deliveries": ds})
}

func (h *Handler) retry(w http.ResponseWriter, r *http.Request) {
	t, ok := tenant(w, r, "update")
	if !ok {
		return
	}
	ctx := r.Context()
	wh, err := h.store.Get(ctx, t, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	d, err := h.store.GetDelivery(ctx, t, wh.ID, r.PathValue("deliveryId"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if !wh.IsActive {
		api.WriteError(w, r, apperr.New(apperr.Conflict, "webhook %s is inactive; activate it to replay deliveries", wh.ID))
		return
	}
	if d.Status == webhook.StatusPending {
		api.WriteError(w, r, apperr.New(apperr.Conflict, "delivery %s is being attempted right now", d.ID))
		return
	}
	if h.temporal == nil {
		api.WriteError(w, r, apperr.New(apperr.Unavailable, "replay needs the Temporal service, which is not configured"))
		return
	}
	reopened, err := h.store.Reopen(ctx, d.ID)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := workflows.ReplayDelivery(ctx, h.temporal, h.taskQueue, workflows.DeliveryInput{DeliveryID: d.ID,
		WebhookID: wh.ID, EventID: d.EventID, TenantID: t, EventType: d.EventType}); err != nil {
		if reopened { // no workflow owns it: put the old state back
			_ = h.store.SetStatus(context.WithoutCancel(ctx), d.ID, d.Status)
		}
		api.WriteError(w, r, apperr.Wrap(err, "start replay"))
		return
	}
	d, err = h.store.GetDelivery(ctx, t, wh.ID, d.ID)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusAccepted, d)
}

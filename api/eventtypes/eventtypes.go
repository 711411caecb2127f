// Package eventtypes serves GET /api/v1/event-types: every event type the
// caller's tenant can receive, with the JSON Schema of its payload
// generated from the tenant's active schema (docs/webhooks.md, "Event
// types"). Scope: webhook:*:read.
package eventtypes

import (
	"context"
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/openapi"
	"github.com/dds-project/dds/schema"
)

// Schemas finds a tenant's active schema.
type Schemas interface {
	ActiveFor(ctx context.Context, tenantID string) (*schema.Active, error)
}

// Handler serves the event type list.
type Handler struct{ schemas Schemas }

// New returns the handler.
func New(s Schemas) *Handler { return &Handler{schemas: s} }

// Routes registers the route.
func (h *Handler) Routes(r *api.Router) {
	r.Handle("GET /api/v1/event-types", api.Func(h.list))
}

func (h *Handler) list(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "webhook", "read")
	if err != nil {
		return 0, nil, err
	}
	var def *schema.Definition
	a, err := h.schemas.ActiveFor(r.Context(), p.TenantID)
	switch {
	case apperr.Is(err, apperr.NotFound): // no schema yet: the types without fields
	case err != nil:
		return 0, nil, err
	default:
		def = a.Def
	}
	return http.StatusOK, map[string]any{"eventTypes": openapi.EventTypes(def)}, nil
}

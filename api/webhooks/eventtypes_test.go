package webhooks_test

import (
	"net/http"
	"slices"
	"testing"
)

// TestEventTypesList: GET /api/v1/event-types lists every type a webhook
// may subscribe to, each with a payload schema naming the tenant's
// entities; before any schema exists the types are listed without them.
func TestEventTypesList(t *testing.T) {
	t.Parallel()
	app := server(t, true)
	_, key := app.Tenant(t)
	type listing struct {
		EventTypes []struct {
			Type   string `json:"type"`
			Schema struct {
				Properties struct {
					Data struct {
						Properties map[string]struct {
							Enum []any `json:"enum"`
						} `json:"properties"`
					} `json:"data"`
				} `json:"properties"`
			} `json:"schema"`
		} `json:"eventTypes"`
	}
	var l listing
	app.Must(t, http.StatusOK, "GET", "/api/v1/event-types", key, nil).Decode(t, &l)
	if len(l.EventTypes) != 8 || l.EventTypes[0].Type != "entity.created" {
		t.Fatalf("without a schema: %+v", l)
	}
	app.Schema(t, key, shop)
	app.Must(t, http.StatusOK, "GET", "/api/v1/event-types", key, nil).Decode(t, &l)
	var types []string
	for _, et := range l.EventTypes {
		types = append(types, et.Type)
	}
	want := []string{"entity.created", "entity.updated", "entity.deleted", "relationship.created", "relationship.updated", "relationship.deleted",
		"webhook.disabled", "delivery.exhausted"}
	if !slices.Equal(types, want) {
		t.Fatalf("types %v, want %v", types, want)
	}
	names := l.EventTypes[0].Schema.Properties.Data.Properties["entityName"].Enum
	if !slices.Contains(names, any("Product")) || !slices.Contains(names, any("Order")) {
		t.Fatalf("entity.created entityName enum %v", names)
	}
	app.Must(t, http.StatusUnauthorized, "GET", "/api/v1/event-types", "", nil)
}

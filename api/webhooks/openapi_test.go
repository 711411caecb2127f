package webhooks_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// TestDeliveryRoutesConformToTheOpenAPIDocument: what the delivery log,
// a retry, a replay, its progress and the event types answer is what the
// tenant's OpenAPI document says they answer, so a client generated from
// the document reads them (and sends a replay the server accepts).
func TestDeliveryRoutesConformToTheOpenAPIDocument(t *testing.T) {
	t.Parallel()
	app := server(t, true)
	_, key := app.Tenant(t)
	id := app.Schema(t, key, shop)["id"].(string)
	doc, err := openapi3.NewLoader().LoadFromData(app.Must(t, http.StatusOK, "GET", "/api/v1/schemas/"+id+"/openapi.json", key, nil).Body)
	if err != nil {
		t.Fatal(err)
	}
	conform := func(component string, body []byte) {
		t.Helper()
		s := doc.Components.Schemas[component]
		if s == nil {
			t.Fatalf("component %s missing", component)
		}
		var v any
		if err := json.Unmarshal(body, &v); err != nil {
			t.Fatalf("%s: not JSON: %s", component, body)
		}
		if err := s.Value.VisitJSON(v, openapi3.EnableFormatValidation()); err != nil {
			t.Errorf("does not match %s: %v\n%s", component, err, body)
		}
	}
	rc := webhooktest.NewReceiver(t, func(webhooktest.Request) int { return http.StatusOK })
	var hook hookView
	app.Must(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": rc.URL + "/r", "eventTypes": []string{"entity.created"}}).Decode(t, &hook)
	since := time.Now().Add(-time.Second).UTC().Format(time.RFC3339Nano)
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "lamp"})

	var list struct {
		Deliveries []struct{ ID, Status string } `json:"deliveries"`
	}
	var res *testenv.Response
	webhooktest.Eventually(t, 60*time.Second, "the delivery succeeds", func() bool {
		res = app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID+"/deliveries", key, nil)
		res.Decode(t, &list)
		return len(list.Deliveries) == 1 && list.Deliveries[0].Status == "succeeded"
	})
	conform("dds.WebhookDeliveryList", res.Body)
	conform("dds.WebhookDelivery", app.Must(t, http.StatusAccepted, "POST",
		"/api/v1/webhooks/"+hook.ID+"/deliveries/"+list.Deliveries[0].ID+"/retry", key, nil).Body)

	req := map[string]any{"since": since, "until": time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano), "onlyFailed": false}
	conform("dds.WebhookReplayRequest", mustJSON(t, req))
	started := app.Must(t, http.StatusAccepted, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key, req)
	conform("dds.WebhookReplay", started.Body)
	replay := started.JSON(t)["id"].(string)
	webhooktest.Eventually(t, 60*time.Second, "the replay completes", func() bool {
		res = app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks/"+hook.ID+"/replays/"+replay, key, nil)
		return res.JSON(t)["status"] == "completed"
	})
	conform("dds.WebhookReplayStatus", res.Body)
	conform("dds.EventTypeList", app.Must(t, http.StatusOK, "GET", "/api/v1/event-types", key, nil).Body)
	// What the document refuses, the server refuses: since is required.
	conform("dds.Error", app.Must(t, http.StatusBadRequest, "POST", "/api/v1/webhooks/"+hook.ID+"/replay", key, map[string]any{"onlyFailed": true}).Body)
	if doc.Components.Schemas["dds.WebhookReplayRequest"].Value.VisitJSON(map[string]any{"onlyFailed": true}) == nil {
		t.Error("the document accepts a replay without since")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

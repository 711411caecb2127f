package api_test

import (
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/dds-project/dds/internal/testenv"
)

// TestSocketThroughMiddleware opens the GraphQL subscription socket through
// the composed server: the middleware's response writer must let the
// upgrader hijack the connection.
func TestSocketThroughMiddleware(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, resp, err := d.Dial("ws"+strings.TrimPrefix(app.URL, "http")+"/api/v1/dynamic-gql/ws", nil)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		t.Fatalf("dial: %v (HTTP %d)", err, status)
	}
	defer c.Close()
	if err := c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + key}}); err != nil {
		t.Fatal(err)
	}
	var msg struct{ Type string }
	if err := c.ReadJSON(&msg); err != nil || msg.Type != "connection_ack" {
		t.Fatalf("got %+v, %v; want connection_ack", msg, err)
	}
}

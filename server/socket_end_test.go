package server_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/dds-project/dds/internal/testenv"
)

// openSocket opens a graphql-transport-ws socket on app with credential
// and waits for its connection_ack.
func openSocket(t *testing.T, app *testenv.App, credential string) *websocket.Conn {
	t.Helper()
	d := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}}
	c, _, err := d.Dial("ws"+strings.TrimPrefix(app.URL, "http")+"/api/v1/dynamic-gql/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + credential}}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := c.ReadJSON(&m); err != nil || m["type"] != "connection_ack" {
		t.Fatalf("connection_init: %v %v", m, err)
	}
	return c
}

// closedWith waits (up to 10 s) for the server to close c, and returns the
// close frame's code and reason.
func closedWith(t *testing.T, c *websocket.Conn) (int, string) {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Text
			}
			t.Fatalf("the socket was not closed by the server: %v", err)
		}
	}
}

// A subscription socket ends with the credential it was opened with: a key
// revoked on another server, or an access token that expires, closes it
// with 4403 instead of letting its events outlive the credential.
func TestSocketEndsWithItsCredential(t *testing.T) {
	t.Parallel()
	a := testenv.Server(t)
	b := testenv.NewServer(t, testenv.Config(t))
	_, admin := a.Tenant(t)

	t.Run("key revoked on another server", func(t *testing.T) {
		k := a.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "k", "scopes": []string{"entity:*:read"}}).JSON(t)
		c := openSocket(t, b, k["key"].(string))
		a.Must(t, 204, "DELETE", "/api/v1/api-keys/"+k["id"].(string), admin, nil)
		if code, reason := closedWith(t, c); code != 4403 || !strings.Contains(reason, "revoked") {
			t.Fatalf("closed with %d %q, want 4403 naming the revocation", code, reason)
		}
	})
	t.Run("token expires", func(t *testing.T) {
		// Two seconds, not one: exp is in whole seconds, so a token of one
		// second minted late in a second expires within milliseconds, before
		// the socket's connection_init.
		tok := a.Must(t, 201, "POST", "/api/v1/auth/token", admin, map[string]any{"scopes": []string{"entity:*:read"}, "expiresIn": 2}).JSON(t)
		c := openSocket(t, b, tok["accessToken"].(string))
		if code, reason := closedWith(t, c); code != 4403 || !strings.Contains(reason, "expired") {
			t.Fatalf("closed with %d %q, want 4403 naming the expiry", code, reason)
		}
	})
	t.Run("the key that minted a token revoked", func(t *testing.T) {
		k := a.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "m", "scopes": []string{"entity:*:read"}}).JSON(t)
		tok := a.Must(t, 201, "POST", "/api/v1/auth/token", k["key"].(string), map[string]any{"scopes": []string{"entity:*:read"}, "expiresIn": 3600}).JSON(t)
		c := openSocket(t, b, tok["accessToken"].(string))
		a.Must(t, 204, "DELETE", "/api/v1/api-keys/"+k["id"].(string), admin, nil)
		if code, _ := closedWith(t, c); code != 4403 {
			t.Fatalf("closed with %d, want 4403", code)
		}
	})
}

package graphql

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dds-project/dds/api"
)

// A failed WebSocket upgrade is answered by the upgrader; it must also be
// logged, or a 500 on every subscription leaves no trace on the server.
func TestUpgradeFailureIsLogged(t *testing.T) {
	var logs bytes.Buffer
	s := NewSocket(nil, nil, nil, nil) // the upgrade fails before anything else is reached
	h := api.Middleware(s, slog.New(slog.NewTextHandler(&logs, nil)), api.Limits{})
	r := httptest.NewRequest(http.MethodGet, "/api/v1/dynamic-gql/ws", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Sec-WebSocket-Version", "13")
	r.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	w := httptest.NewRecorder() // cannot be hijacked: the upgrade fails with 500
	h.ServeHTTP(w, r)
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	if !strings.Contains(logs.String(), "websocket upgrade failed") {
		t.Fatalf("the failure is not logged with its cause; log: %q", logs.String())
	}
}

package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"testing"

	"connectrpc.com/connect"

	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/internal/tcpproxy"
	"github.com/dds-project/dds/internal/testenv"
	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
)

const notes = `{"name": "notes", "entities": [{"name": "Note", "fields": [{"name": "title", "type": "STRING"}]}]}`

// proxiedConfig is a test configuration whose Postgres connections all pass
// through a proxy the test can cut.
func proxiedConfig(t *testing.T) (*config.Config, *tcpproxy.Proxy) {
	t.Helper()
	cfg := testenv.Config(t)
	u, err := url.Parse(cfg.DatabaseURL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := tcpproxy.Start(t, u.Host)
	u.Host = proxy.Addr()
	cfg.DatabaseURL = u.String()
	return cfg, proxy
}

// serverBehindProxy starts a server on a proxiedConfig.
func serverBehindProxy(t *testing.T) (*testenv.App, *tcpproxy.Proxy) {
	t.Helper()
	cfg, proxy := proxiedConfig(t)
	return testenv.NewServer(t, cfg), proxy
}

// Postgres going away must read as "retry later" (503 with Retry-After) on
// every surface, not as a server bug (500).
func TestPostgresDownIs503WithRetryAfter(t *testing.T) {
	app, proxy := serverBehindProxy(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, notes)
	id := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "a"}).JSON(t)["id"].(string)
	app.Must(t, http.StatusOK, "GET", "/readyz", "", nil)

	proxy.Close()

	want503 := func(t *testing.T, r *testenv.Response) {
		t.Helper()
		if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
			t.Fatalf("status %d, Retry-After %q, want 503 with Retry-After: %s", r.Status, r.Header.Get("Retry-After"), r.Body)
		}
	}
	t.Run("REST", func(t *testing.T) {
		r := app.Do(t, "GET", "/api/v1/dynamic/Note/"+id, key, nil)
		want503(t, r)
		if code := r.JSON(t)["error"].(map[string]any)["code"]; code != "UNAVAILABLE" {
			t.Errorf("code %v, want UNAVAILABLE", code)
		}
		want503(t, app.Do(t, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "b"}))
	})
	t.Run("GraphQL", func(t *testing.T) {
		want503(t, app.Do(t, "POST", "/api/v1/dynamic-gql/"+tenantID, key, map[string]any{"query": "{ notes { title } }"}))
	})
	t.Run("Connect", func(t *testing.T) {
		c := ddsv1connect.NewRecordServiceClient(app.Client, app.URL)
		req := connect.NewRequest(&ddsv1.GetRequest{Entity: "Note", Id: id})
		req.Header().Set("Authorization", "Bearer "+key)
		_, err := c.Get(context.Background(), req)
		var ce *connect.Error
		if !errors.As(err, &ce) || ce.Code() != connect.CodeUnavailable || ce.Meta().Get("Retry-After") == "" {
			t.Fatalf("err %v, want unavailable with Retry-After", err)
		}
	})
	t.Run("probes", func(t *testing.T) {
		want := map[string]int{"/livez": http.StatusOK, "/readyz": http.StatusServiceUnavailable, "/healthz": http.StatusServiceUnavailable}
		for path, status := range want {
			if r := app.Do(t, "GET", path, "", nil); r.Status != status {
				t.Errorf("%s: %d, want %d", path, r.Status, status)
			}
		}
	})
}

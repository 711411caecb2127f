package api_test

import (
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

// TestCORS drives preflights and simple requests through the composed
// server for each DDS_CORS_ORIGINS setting.
func TestCORS(t *testing.T) {
	t.Parallel()
	const app1 = "https://app.example.com"
	servers := map[string]*testenv.App{}
	for name, origins := range map[string][]string{"off": nil, "one": {app1, "http://localhost:5173"}, "any": {"*"}} {
		cfg := testenv.Config(t)
		cfg.CORSOrigins = origins
		cfg.RateGlobal = 1000 // so the rate-limit headers are there to expose
		servers[name] = testenv.NewServer(t, cfg)
	}
	_, key := servers["one"].Tenant(t)
	preflight := []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "authorization,content-type"}
	cases := []struct {
		name, server, method, origin string
		headers                      []string
		status                       int
		allowOrigin                  string // "" = no CORS headers at all
	}{
		{"preflight from an allowed origin", "one", "OPTIONS", app1, preflight, 204, app1},
		{"preflight from another allowed origin", "one", "OPTIONS", "http://localhost:5173", preflight, 204, "http://localhost:5173"},
		{"preflight from a stranger", "one", "OPTIONS", "https://evil.example", preflight, 204, ""},
		{"preflight asking for a header not allowed", "one", "OPTIONS", app1, []string{"Access-Control-Request-Method", "POST", "Access-Control-Request-Headers", "x-secret"}, 204, ""},
		{"request from an allowed origin", "one", "GET", app1, nil, 200, app1},
		{"request from a stranger: served, not readable", "one", "GET", "https://evil.example", nil, 200, ""},
		{"wildcard preflight", "any", "OPTIONS", "https://anyone.example", preflight, 204, "*"},
		{"wildcard request", "any", "GET", "https://anyone.example", nil, 200, "*"},
		{"off: no preflight answer", "off", "OPTIONS", app1, preflight, 404, ""},
		{"off: no headers", "off", "GET", app1, nil, 200, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			app := servers[c.server]
			_, k := app.Tenant(t)
			if c.server == "one" {
				k = key
			}
			hdr := append([]string{"Origin", c.origin}, c.headers...)
			r := app.Do(t, c.method, "/api/v1/auth/whoami", k, nil, hdr...)
			h := r.Header
			if r.Status != c.status || h.Get("Access-Control-Allow-Origin") != c.allowOrigin {
				t.Fatalf("got %d, Allow-Origin %q; want %d, %q (%v)", r.Status, h.Get("Access-Control-Allow-Origin"), c.status, c.allowOrigin, h)
			}
			if c.allowOrigin == "" {
				return
			}
			if h.Get("Access-Control-Allow-Credentials") != "" {
				t.Errorf("credentialed CORS must stay off: %v", h)
			}
			if c.method == "OPTIONS" {
				methods, headers := h.Get("Access-Control-Allow-Methods"), strings.ToLower(h.Get("Access-Control-Allow-Headers"))
				if !strings.Contains(methods, "POST") || !strings.Contains(headers, "authorization") || !strings.Contains(headers, "content-type") || h.Get("Access-Control-Max-Age") != "600" {
					t.Errorf("preflight headers: %v", h)
				}
				return
			}
			exposed := h.Get("Access-Control-Expose-Headers")
			for _, want := range []string{"X-Request-Id", "X-Ratelimit-Limit", "X-Ratelimit-Remaining", "X-Ratelimit-Reset"} {
				if !strings.Contains(strings.ToLower(exposed), strings.ToLower(want)) {
					t.Errorf("Expose-Headers %q lacks %s", exposed, want)
				}
			}
			if h.Get("X-Request-Id") == "" || h.Get("X-RateLimit-Limit") == "" {
				t.Errorf("the exposed headers must be sent: %v", h)
			}
			if !strings.Contains(h.Get("Vary"), "Origin") {
				t.Errorf("Vary: Origin missing: %v", h)
			}
		})
	}
}

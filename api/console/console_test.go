package console_test

import (
	"net/http"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/api/console"
	"github.com/dds-project/dds/internal/testenv"
)

// noRedirect returns responses as they are, so redirects can be asserted.
func noRedirect(app *testenv.App) *http.Client {
	c := *app.Client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

func get(t *testing.T, c *http.Client, url string, headers ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestServedByTheServer checks the composed server: / and /console redirect
// to the console, which is index.html on any client route.
func TestServedByTheServer(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	c := noRedirect(app)
	for _, p := range []string{"/", "/console"} {
		resp := get(t, c, app.URL+p)
		if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/console/" {
			t.Errorf("GET %s: %d to %q, want 302 to /console/", p, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, p := range []string{"/console/", "/console/records/Product"} {
		resp := get(t, c, app.URL+p)
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || resp.Header.Get("Cache-Control") != "no-cache" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("GET %s: %d %v", p, resp.StatusCode, resp.Header)
		}
	}
	if resp := get(t, c, app.URL+"/nope"); resp.StatusCode != 404 {
		t.Errorf("GET /nope: %d, want 404", resp.StatusCode)
	}
}

// TestServing checks assets, caching and the SPA fallback on a known tree.
func TestServing(t *testing.T) {
	t.Parallel()
	dist := fstest.MapFS{
		"index.html":          {Data: []byte("<html>app</html>")},
		"assets/app-1a2b.js":  {Data: []byte("console.log(1)")},
		"assets/app-1a2b.css": {Data: []byte("body{}")},
		"favicon.svg":         {Data: []byte("<svg/>")},
	}
	h, err := console.New(dist)
	if err != nil {
		t.Fatal(err)
	}
	router := api.NewRouter(nil, nil, 1<<20)
	h.Routes(router)
	cases := []struct {
		path, status, ctype, cache, body string
	}{
		{"/console/", "200", "text/html", "no-cache", "<html>app</html>"},
		{"/console/schemas/shop", "200", "text/html", "no-cache", "<html>app</html>"},
		{"/console/assets/app-1a2b.js", "200", "text/javascript", "public, max-age=31536000, immutable", "console.log(1)"},
		{"/console/assets/app-1a2b.css", "200", "text/css", "public, max-age=31536000, immutable", "body{}"},
		{"/console/favicon.svg", "200", "image/svg+xml", "no-cache", "<svg/>"},
		{"/console/assets/gone-9z.js", "404", "application/json", "", "NOT_FOUND"},
		{"/console/config.json", "404", "application/json", "", "NOT_FOUND"},
	}
	for _, c := range cases {
		rec := record(router, c.path)
		if got := rec.status; got != c.status || !strings.HasPrefix(rec.ctype, c.ctype) || rec.cache != c.cache || !strings.Contains(rec.body, c.body) {
			t.Errorf("GET %s: got %s %q %q %q, want %s %q %q %q", c.path, got, rec.ctype, rec.cache, rec.body, c.status, c.ctype, c.cache, c.body)
		}
	}
}

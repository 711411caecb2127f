// Package console serves the web console: the built single-page app under
// /console/, with index.html for every path that is not an asset (the app
// routes on the client), and GET / redirecting to it. The app talks to the
// public API only; this package serves files and nothing else.
package console

import (
	"bytes"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
)

// Prefix is where the console is served.
const Prefix = "/console/"

// Handler serves a built console.
type Handler struct {
	files http.Handler
	dist  fs.FS
	index []byte
}

// New returns the handler for dist, which holds index.html and assets/.
func New(dist fs.FS) (*Handler, error) {
	index, err := fs.ReadFile(dist, "index.html")
	if err != nil {
		return nil, err
	}
	return &Handler{files: http.FileServerFS(dist), dist: dist, index: index}, nil
}

// Routes registers the console, its redirects, and GET / on r (all public:
// the app signs in against the API itself).
func (h *Handler) Routes(r *api.Router) {
	redirect := http.RedirectHandler(Prefix, http.StatusFound)
	r.Public("GET /{$}", redirect)
	r.Public("GET /console", redirect)
	r.Public("GET "+Prefix, h)
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(path.Clean(r.URL.Path), strings.TrimSuffix(Prefix, "/"))
	name = strings.TrimPrefix(name, "/")
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	if name != "" && name != "index.html" {
		if st, err := fs.Stat(h.dist, name); err == nil && !st.IsDir() {
			if strings.HasPrefix(name, "assets/") { // content-hashed names: never change
				hd.Set("Cache-Control", "public, max-age=31536000, immutable")
			} else {
				hd.Set("Cache-Control", "no-cache")
			}
			r2 := r.Clone(r.Context())
			r2.URL.Path = "/" + name
			h.files.ServeHTTP(w, r2)
			return
		}
		if strings.HasPrefix(name, "assets/") || path.Ext(name) != "" {
			api.WriteError(w, r, apperr.New(apperr.NotFound, "no console asset %s", r.URL.Path))
			return
		}
	}
	// The app's own routes (/console/records/Product …) get index.html,
	// revalidated on every load so a new binary's assets are picked up.
	hd.Set("Cache-Control", "no-cache")
	hd.Set("Content-Security-Policy", csp)
	hd.Set("X-Frame-Options", "DENY")
	http.ServeContent(w, r, "index.html", time.Time{}, bytes.NewReader(h.index))
}

// csp keeps the console's code to its own origin: scripts, styles and fonts
// come from this server only, and it cannot be framed. connect-src is wider
// because uploads and downloads go to the presigned URLs the API hands out,
// which are on the storage's origin when the S3 driver is used.
const csp = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self' http: https: ws: wss:; worker-src 'self' blob:; frame-ancestors 'none'; base-uri 'self'; form-action 'self'"

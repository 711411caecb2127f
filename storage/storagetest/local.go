package storagetest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/storage"
)

// Render adapts a local-driver route to a handler that renders its errors
// with api.WriteError, as the DDS server does.
func Render(serve func(http.ResponseWriter, *http.Request) error) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := serve(w, r); err != nil {
			api.WriteError(w, r, err)
		}
	}
}

// Local returns a local driver over a temporary directory whose presigned
// upload URLs are served by a test HTTP server, as the DDS server serves
// them; both go away when the test ends.
func Local(t testing.TB) *storage.Local {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l, err := storage.NewLocal(t.TempDir(), "", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	mux.HandleFunc("PUT "+storage.LocalRoute+"{token}", Render(l.ServeUpload))
	return l
}

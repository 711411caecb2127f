package storagetest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dds-project/dds/storage"
)

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
	mux.HandleFunc("PUT "+storage.LocalRoute+"{token}", l.ServeUpload)
	return l
}

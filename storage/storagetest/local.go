package storagetest

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/dds-project/dds/storage"
)

// Local returns a local driver over a temporary directory whose presigned
// URLs are served by a test HTTP server (storage.Local.Routes, errors as
// plain text with the statuses the DDS server gives them); both go away
// when the test ends.
func Local(t testing.TB) *storage.Local {
	t.Helper()
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	l, err := storage.NewLocal(t.TempDir(), "", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	l.Routes(mux.Handle, nil)
	return l
}

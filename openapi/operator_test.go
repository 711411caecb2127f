package openapi_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/dds-project/dds/openapi"
)

// The operator API's document is valid OpenAPI and equals its golden file.
func TestOperatorGolden(t *testing.T) {
	got, err := openapi.New("http://localhost:8080").Operator()
	if err != nil {
		t.Fatal(err)
	}
	doc := load(t, got)
	for _, p := range []string{"/api/v1/tenants", "/api/v1/tenants/{id}", "/api/v1/tenants/{id}/export", "/api/v1/tenants/import", "/api/v1/tenant-archives", "/api/v1/tenant-jobs", "/api/v1/tenant-jobs/{id}"} {
		if doc.Paths.Value(p) == nil {
			t.Errorf("no path %s", p)
		}
	}
	path := filepath.Join("testdata", "operator.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./openapi -run TestOperatorGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("generated document differs from %s; if the change is intended, run with -update", path)
	}
}

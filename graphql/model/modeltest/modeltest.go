// Package modeltest reads the fixture schemas of the GraphQL model's tests
// (graphql/model/testdata), which the engine's and its transports' tests
// share.
package modeltest

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/dds-project/dds/schema"
)

// Def reads and validates fixture schema name (e.g. "shop.json").
func Def(t testing.TB, name string) *schema.Definition {
	t.Helper()
	_, here, _, _ := runtime.Caller(0)
	b, err := fs.ReadFile(os.DirFS(filepath.Join(filepath.Dir(here), "..", "testdata")), name)
	if err != nil {
		t.Fatal(err)
	}
	var d schema.Definition
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(&d); err != nil {
		t.Fatalf("fixture schema invalid: %v", err)
	}
	return &d
}

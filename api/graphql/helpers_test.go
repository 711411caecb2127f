package graphql

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/schema"
)

// Location is where an error points in the query (env_test.go reads the
// errors' locations).
type Location = protocol.Location

// loadDef reads a fixture schema of the model's tests.
func loadDef(t testing.TB, name string) *schema.Definition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "graphql", "model", "testdata", name))
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

package operation

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/schema"
)

// loadDef reads a fixture schema of the model's tests.
func loadDef(t testing.TB, name string) *schema.Definition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "model", "testdata", name))
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

func principal(t *testing.T, scopes ...string) *auth.Principal {
	t.Helper()
	ss, err := auth.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	return &auth.Principal{TenantID: "t", Scopes: ss}
}

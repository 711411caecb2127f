package e2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A tenant with no roles, against a running `dds serve`: pull writes
// `roles: {}` (JSON and YAML), so the file says "no roles" rather than
// nothing about roles; diff of it is clean, and once a role exists diff
// lists it as removed and push deletes it. A file without `roles` still
// leaves the roles alone.
func TestSchemaFileNoRoles(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)
	dir := t.TempDir()
	cli := schemaCLI(t, d, key)
	jsonFile, yamlFile := filepath.Join(dir, "schema.json"), filepath.Join(dir, "schema.yaml")
	if out := cli(true, "schema", "pull", "--file", jsonFile); !strings.Contains(out, "and 0 roles") {
		t.Fatalf("pull: %s", out)
	}
	cli(true, "schema", "pull", "--file", yamlFile)
	j, _ := os.ReadFile(jsonFile)
	y, _ := os.ReadFile(yamlFile)
	if !strings.Contains(string(j), `"roles": {}`) || !strings.Contains(string(y), "\nroles: {}\n") {
		t.Fatalf("a tenant without roles pulled no empty roles:\n%s\n%s", j, y)
	}
	for _, f := range []string{jsonFile, yamlFile} {
		if out := cli(true, "schema", "diff", "--file", f); !strings.Contains(out, "roles: no changes (0 roles)") {
			t.Fatalf("diff of the pulled %s: %s", filepath.Base(f), out)
		}
	}

	// A role made since: the pulled file removes it.
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/reader", key, map[string]any{"scopes": []any{"entity:Note:read"}})
	if out := cli(true, "schema", "diff", "--file", yamlFile); !strings.Contains(out, "- role reader (removed") {
		t.Fatalf("diff with a role the file lacks: %s", out)
	}
	// A schema-only file (no roles member) leaves it alone.
	only := filepath.Join(dir, "only.yaml")
	kept := strings.Replace(string(y), "\nroles: {}\n", "\n", 1)
	if err := os.WriteFile(only, []byte(kept), 0o600); err != nil {
		t.Fatal(err)
	}
	cli(true, "schema", "push", "--file", only)
	d.do(t, http.StatusOK, "GET", "/api/v1/roles/reader", key, nil)
	// The file with roles: {} deletes it.
	if out := cli(true, "schema", "push", "--file", yamlFile); !strings.Contains(out, "reader") {
		t.Fatalf("push of roles: {}: %s", out)
	}
	d.do(t, http.StatusNotFound, "GET", "/api/v1/roles/reader", key, nil)
	if out := cli(true, "schema", "diff", "--file", jsonFile); !strings.Contains(out, "roles: no changes (0 roles)") {
		t.Fatalf("diff after the push: %s", out)
	}
}

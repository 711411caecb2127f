package e2e

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Schemas as code against a running `dds serve`: pull writes the active
// schema (JSON and YAML), diff prints the dry-run plan and exits 0 for an
// additive change and non-zero with the destructive steps marked, push
// applies an additive change, refuses a destructive one without
// --allow-data-loss (nothing applied) and applies it with it; a file for a
// schema the tenant does not have is created by push.
func TestSchemaPullDiffPush(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)
	dir := t.TempDir()
	cli := schemaCLI(t, d, key)
	jsonFile, yamlFile := filepath.Join(dir, "schema.json"), filepath.Join(dir, "schema.yaml")
	cli(true, "schema", "pull", "--file", jsonFile)
	cli(true, "schema", "pull", "--file", yamlFile)
	y, _ := os.ReadFile(yamlFile)
	if !strings.Contains(string(y), "name: notes") || !strings.Contains(string(y), "type: STRING") {
		t.Fatalf("pulled YAML:\n%s", y)
	}
	if out := cli(true, "schema", "diff", "--file", yamlFile); !strings.Contains(out, "no changes") {
		t.Fatalf("diff of the pulled schema: %s", out)
	}

	// Additive: a new field, and soft delete switched on.
	add := strings.Replace(string(y), "name: Note\n", "name: Note\n    softDelete: true\n", 1)
	add = strings.Replace(add, "      - name: stars\n", "      - name: color\n        type: STRING\n      - name: stars\n", 1)
	if add == string(y) || !strings.Contains(add, "color") {
		t.Fatalf("could not edit the YAML:\n%s", y)
	}
	if err := os.WriteFile(yamlFile, []byte(add), 0o600); err != nil {
		t.Fatal(err)
	}
	out := cli(true, "schema", "diff", "--file", yamlFile)
	if !strings.Contains(out, "+ add field Note.color") || !strings.Contains(out, "+ turn soft delete on for Note") || strings.Contains(out, "\n! ") {
		t.Fatalf("additive diff:\n%s", out)
	}
	cli(true, "schema", "push", "--file", yamlFile)
	var rec map[string]any
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "t", "color": "red"}).decode(t, &rec)

	// Destructive: a field dropped.
	drop := strings.Replace(add, "      - name: color\n        type: STRING\n", "", 1)
	if err := os.WriteFile(yamlFile, []byte(drop), 0o600); err != nil {
		t.Fatal(err)
	}
	out = cli(false, "schema", "diff", "--file", yamlFile)
	if !strings.Contains(out, "! drop field Note.color and its values") || !strings.Contains(out, "destructive") {
		t.Fatalf("destructive diff:\n%s", out)
	}
	out = cli(false, "schema", "push", "--file", yamlFile)
	if !strings.Contains(out, "! drop field Note.color") || !strings.Contains(out, "--allow-data-loss") {
		t.Fatalf("destructive push without --allow-data-loss:\n%s", out)
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Note/"+rec["id"].(string), key, nil).decode(t, &rec)
	if rec["color"] != "red" {
		t.Fatalf("a refused push changed the data: %v", rec)
	}
	cli(true, "schema", "push", "--file", yamlFile, "--allow-data-loss")
	id := rec["id"].(string)
	rec = nil // a map decoded into keeps its members
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Note/"+id, key, nil).decode(t, &rec)
	if _, has := rec["color"]; has {
		t.Fatalf("the dropped field is still there: %v", rec)
	}
	if out := cli(true, "schema", "diff", "--file", yamlFile); !strings.Contains(out, "no changes") {
		t.Fatalf("diff after push: %s", out)
	}

	// A schema the tenant lacks: diff says push creates it, push does.
	other := `{"name": "other", "entities": [{"name": "Thing", "fields": [{"name": "label", "type": "STRING"}]}]}`
	if err := os.WriteFile(jsonFile, []byte(other), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := cli(true, "schema", "diff", "--file", jsonFile); !strings.Contains(out, "push creates it") {
		t.Fatalf("diff of a new schema: %s", out)
	}
	cli(true, "schema", "push", "--file", jsonFile, "--activate")
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Thing", key, map[string]any{"label": "active now"})

	// Bad files: a clear error naming the problem, nothing sent.
	if err := os.WriteFile(jsonFile, []byte(`{"name": "x", "entites": []}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if out := cli(false, "schema", "push", "--file", jsonFile); !strings.Contains(out, "entites") {
		t.Fatalf("a misspelt member: %s", out)
	}
	if out := cli(false, "schema", "diff", "--file", filepath.Join(dir, "missing.json")); !strings.Contains(out, "missing.json") {
		t.Fatalf("a missing file: %s", out)
	}
}

// schemaCLI runs `dds <args> --url --key` against deployment d as the
// tenant's key and returns its output; it fails t unless the command's
// success is wantOK.
func schemaCLI(t *testing.T, d *deployment, key string) func(wantOK bool, args ...string) string {
	return func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append(args, "--url", d.URL, "--key", key)...)
		cmd.Env = d.env
		out, err := cmd.CombinedOutput()
		if (err == nil) != wantOK {
			t.Fatalf("dds %s: err %v, want ok=%v:\n%s", strings.Join(args, " "), err, wantOK, out)
		}
		return string(out)
	}
}

package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Roles in the schema file, against a running `dds serve`: pull writes the
// tenant's roles with the schema (JSON and YAML), diff lists the roles
// added, removed and changed part by part, push applies schema and roles
// together; a role naming a field the same push removes is refused with
// its path before anything is written, and so is a push whose role
// removal a bound API key forbids (the schema change of that push
// included).
func TestSchemaFileRoles(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)
	editor := map[string]any{
		"scopes": []any{"entity:Note:*"},
		"rules": map[string]any{"Note": map[string]any{
			"read":   map[string]any{"stars": map[string]any{"$gte": 1}},
			"create": map[string]any{"preset": map[string]any{"stars": 1}},
		}},
		"fields": map[string]any{"Note": map[string]any{"write": []any{"title", "stars"}}},
	}
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/editor", key, editor)
	dir := t.TempDir()
	cli := schemaCLI(t, d, key)
	jsonFile, yamlFile := filepath.Join(dir, "schema.json"), filepath.Join(dir, "schema.yaml")
	cli(true, "schema", "pull", "--file", jsonFile)
	cli(true, "schema", "pull", "--file", yamlFile)
	y, _ := os.ReadFile(yamlFile)
	if !strings.Contains(string(y), "roles:\n  editor:\n    scopes:\n      - entity:Note:*") || !strings.Contains(string(y), "$gte: 1") {
		t.Fatalf("pulled YAML has no roles:\n%s", y)
	}
	if out := cli(true, "schema", "diff", "--file", yamlFile); !strings.Contains(out, "no changes (1 roles)") {
		t.Fatalf("diff of the pulled file: %s", out)
	}

	type file struct {
		Name          string           `json:"name"`
		Entities      []map[string]any `json:"entities"`
		Relationships []any            `json:"relationships,omitempty"`
		Roles         map[string]any   `json:"roles"`
	}
	read := func() file {
		t.Helper()
		var f file
		b, err := os.ReadFile(jsonFile)
		if err == nil {
			err = json.Unmarshal(b, &f)
		}
		if err != nil || f.Roles["editor"] == nil {
			t.Fatalf("pulled JSON: %v\n%s", err, b)
		}
		return f
	}
	write := func(f file) {
		t.Helper()
		b, _ := json.MarshalIndent(f, "", "  ")
		if err := os.WriteFile(jsonFile, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	role := func(name string) (int, map[string]any) {
		r := d.send(t, "GET", "/api/v1/roles/"+name, key, nil)
		var m map[string]any
		_ = json.Unmarshal(r.Body, &m)
		return r.Status, m
	}
	noteFields := func() []string {
		var s struct {
			Schemas []struct {
				Entities []struct{ Fields []struct{ Name string } }
			}
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/schemas", key, nil).decode(t, &s)
		var out []string
		for _, f := range s.Schemas[0].Entities[0].Fields {
			out = append(out, f.Name)
		}
		return out
	}

	// A new role, a changed rule and field list, a new field: diff shows
	// each part; push applies them, the role's version grows.
	f := read()
	f.Entities[0]["fields"] = append(f.Entities[0]["fields"].([]any), map[string]any{"name": "color", "type": "STRING"})
	ed := f.Roles["editor"].(map[string]any)
	ed["rules"].(map[string]any)["Note"].(map[string]any)["read"] = map[string]any{"stars": map[string]any{"$gte": 2}}
	ed["fields"].(map[string]any)["Note"].(map[string]any)["write"] = []any{"title", "color"}
	f.Roles["viewer"] = map[string]any{"scopes": []any{"entity:Note:read"}, "fields": map[string]any{"Note": map[string]any{"read": []any{"title"}}}}
	write(f)
	out := cli(true, "schema", "diff", "--file", jsonFile)
	for _, want := range []string{
		"+ add field Note.color",
		"~ role editor\n",
		`    ~ rules.Note.read: {"stars":{"$gte":1}} -> {"stars":{"$gte":2}}`,
		"    ~ fields.Note.write: +color -stars",
		"+ role viewer (new)",
		"    + fields.Note.read: [title]",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("diff lacks %q:\n%s", want, out)
		}
	}
	_, before := role("editor")
	out = cli(true, "schema", "push", "--file", jsonFile)
	if !strings.Contains(out, "role editor updated") || !strings.Contains(out, "role viewer created") {
		t.Fatalf("push: %s", out)
	}
	_, after := role("editor")
	if after["version"].(float64) != before["version"].(float64)+1 || !strings.Contains(mustJSON(t, after["rules"]), `"$gte":2`) {
		t.Fatalf("editor after push: %v (before %v)", after, before)
	}
	if st, v := role("viewer"); st != http.StatusOK || !strings.Contains(mustJSON(t, v["fields"]), `"read":["title"]`) {
		t.Fatalf("viewer after push: %d %v", st, v)
	}
	if out := cli(true, "schema", "diff", "--file", jsonFile); !strings.Contains(out, "no changes (2 roles)") || !strings.Contains(out, "schema notes (version 2): no changes") {
		t.Fatalf("diff after push: %s", out)
	}

	// The push drops stars while editor's read rule still names it:
	// refused with the rule's path, neither the schema nor a role written
	// (diff says so too, before anything is tried).
	f = read()
	var kept []any
	for _, fl := range f.Entities[0]["fields"].([]any) {
		if fl.(map[string]any)["name"] != "stars" {
			kept = append(kept, fl)
		}
	}
	f.Entities[0]["fields"] = kept
	f.Roles["viewer"].(map[string]any)["fields"].(map[string]any)["Note"].(map[string]any)["read"] = []any{"title", "color"}
	write(f)
	for _, args := range [][]string{{"diff"}, {"push", "--allow-data-loss"}} {
		out = cli(false, append(append([]string{"schema"}, args...), "--file", jsonFile)...)
		if !strings.Contains(out, "roles.editor.rules.Note.read.stars") {
			t.Fatalf("%s with a role naming a removed field: %s", args[0], out)
		}
	}
	if !strings.Contains(strings.Join(noteFields(), ","), "stars") {
		t.Fatalf("a refused push dropped the field: %v", noteFields())
	}
	if _, v := role("viewer"); strings.Contains(mustJSON(t, v["fields"]), "color") {
		t.Fatalf("a refused push changed a role: %v", v)
	}
	// The same through the API: 400 naming the path.
	r := d.send(t, "POST", "/api/v1/schemas/push?allowDataLoss=true", key, map[string]any{"schema": map[string]any{"name": f.Name, "entities": f.Entities}, "roles": f.Roles})
	if code, fields := errorCode(t, r); r.Status != http.StatusBadRequest || code != "VALIDATION_ERROR" || len(fields) != 1 || fields[0] != "roles.editor.rules.Note.read.stars" {
		t.Fatalf("API push with a role naming a removed field: %d %s", r.Status, r.Body)
	}

	// Fixed in the file: the field and the rule go together.
	ed = f.Roles["editor"].(map[string]any)
	ed["rules"] = map[string]any{"Note": map[string]any{"read": map[string]any{"color": "red"}}}
	write(f)
	out = cli(false, "schema", "diff", "--file", jsonFile) // destructive: drops stars
	if !strings.Contains(out, "! drop field Note.stars") || !strings.Contains(out, "- rules.Note.create.preset") {
		t.Fatalf("diff dropping stars: %s", out)
	}
	cli(true, "schema", "push", "--file", jsonFile, "--allow-data-loss")
	if strings.Contains(strings.Join(noteFields(), ","), "stars") {
		t.Fatalf("the push did not drop stars: %v", noteFields())
	}
	if _, v := role("editor"); strings.Contains(mustJSON(t, v), "stars") {
		t.Fatalf("editor still names stars: %v", v)
	}

	// Removing a role that an API key is bound to: refused, and the
	// schema change of the same push is not applied either.
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "bound", "scopes": []any{"entity:Note:read"}, "role": "viewer"})
	f = read()
	delete(f.Roles, "viewer")
	f.Entities[0]["fields"] = append(f.Entities[0]["fields"].([]any), map[string]any{"name": "size", "type": "INTEGER"})
	write(f)
	if out := cli(false, "schema", "diff", "--file", jsonFile); !strings.Contains(out, "- role viewer (removed") || !strings.Contains(out, "bound") {
		t.Fatalf("diff removing viewer: %s", out)
	}
	out = cli(false, "schema", "push", "--file", jsonFile)
	if !strings.Contains(out, "viewer") || !strings.Contains(out, "bound") || !strings.Contains(out, "nothing was applied") {
		t.Fatalf("push removing a bound role: %s", out)
	}
	if st, _ := role("viewer"); st != http.StatusOK || strings.Contains(strings.Join(noteFields(), ","), "size") {
		t.Fatalf("a refused push wrote something: viewer %d, fields %v", st, noteFields())
	}

	// Bad role names and definitions in the file: a 400 naming the path.
	f = read()
	f.Roles["bad name"] = map[string]any{"scopes": []any{"entity:Note:read"}}
	write(f)
	if out := cli(false, "schema", "push", "--file", jsonFile); !strings.Contains(out, "roles.bad name") {
		t.Fatalf("push of a bad role name: %s", out)
	}
	delete(f.Roles, "bad name")
	f.Roles["odd"] = map[string]any{"scopes": []any{"entity:Note:frobnicate"}}
	write(f)
	if out := cli(false, "schema", "push", "--file", jsonFile); !strings.Contains(out, "roles.odd.scopes[0]") {
		t.Fatalf("push of a bad scope: %s", out)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

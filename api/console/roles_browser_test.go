package console_test

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// TestRolesConsoleInBrowser drives the Roles screen and "view as user" in
// headless Chromium through a real server (testdata/roles.mjs): write a role
// in the JSON editor (a skeleton inserted from the schema reference, a rule
// naming a missing field refused at its path, then an owner rule saved),
// view the records as alice (only hers) and leave the view (all again), see
// a view whose token the API refuses (401, as when it expires) end by itself
// with a notice, back in the admin's view, meet
// the 403 of a key that may not mint user tokens, and delete the role.
// Screenshots go to test-output/console-roles/.
func TestRolesConsoleInBrowser(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	npmDir := filepath.Join(root, "deploy", "npm")
	for _, need := range []string{chromium, filepath.Join(npmDir, "node_modules", "playwright-core")} {
		if _, err := os.Stat(need); err != nil {
			teststack.Missing(t, need+" is missing") // deploy/install.sh installs Chromium and deploy/npm
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		teststack.Missing(t, "node is not on PATH")
	}
	teststack.Need(t, "DATABASE_URL")

	app := testenv.Server(t)
	_, admin := app.Tenant(t)
	app.Schema(t, admin, map[string]any{"name": "todos", "entities": []any{
		map[string]any{"name": "Todo", "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "required": true},
			map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
		}},
	}})
	for _, td := range [][2]string{{"alice-1", "alice"}, {"alice-2", "alice"}, {"bob-1", "bob"}} {
		app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", admin, map[string]any{"title": td[0], "ownerId": td[1]})
	}
	// A key that may read roles and records but not mint user tokens.
	narrow := app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", admin,
		map[string]any{"name": "no-users", "scopes": []string{"role:*:read", "entity:Todo:*"}}).JSON(t)["key"].(string)

	out := filepath.Join(root, "test-output", "console-roles")
	if err := os.RemoveAll(out); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), 4*time.Minute)
	defer stop()
	cmd := exec.CommandContext(ctx, node, "testdata/roles.mjs")
	cmd.Env = append(os.Environ(),
		"DDS_URL="+app.URL, "DDS_KEY="+admin, "DDS_NARROW_KEY="+narrow, "OUT_DIR="+out, "NPM_DIR="+npmDir,
		"CHROMIUM="+chromium, "USER_DATA_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser script: %v (screenshots and the failing step in %s)", err, out)
	}

	// The role the browser deleted is gone from the API too.
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/roles/member", admin, nil)
}

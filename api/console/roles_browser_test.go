package console_test

import (
	"net/http"
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
	b := needBrowser(t)
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

	b.run(t, "roles.mjs", "console-roles", 4*time.Minute, "DDS_URL="+app.URL, "DDS_KEY="+admin, "DDS_NARROW_KEY="+narrow)

	// The role the browser deleted is gone from the API too.
	app.Must(t, http.StatusNotFound, "GET", "/api/v1/roles/member", admin, nil)
}

package console_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// TestAggregateConsoleInBrowser drives the records page's Aggregate view in
// headless Chromium through a real server (testdata/aggregate.mjs): group
// products by status with count, sum and avg of price, narrow with a having
// and the records view's filter, order by an aggregate, run the GraphQL
// form the view shows and get the same groups, and meet the API's 400s (a
// sum over a JSON field, a having on an unknown alias) beside the row they
// name. The numbers it checks follow from the products seeded
// here. Screenshots go to test-output/console-aggregate/.
func TestAggregateConsoleInBrowser(t *testing.T) {
	b := needBrowser(t)
	teststack.Need(t, "DATABASE_URL")

	app := testenv.Server(t)
	tenant, admin := app.Tenant(t)
	app.Schema(t, admin, map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "status", "type": "ENUM", "values": []string{"draft", "live", "archived"}},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "stock", "type": "INTEGER"},
			map[string]any{"name": "meta", "type": "JSON"},
		}},
	}})
	// live: 10, 20, 30 (count 3, sum 60, avg 20); draft: 5, 15 (2, 20, 10);
	// archived: 100 (1, 100, 100). aggregate.mjs checks these numbers.
	for _, p := range []struct {
		name, status string
		price        float64
	}{{"l1", "live", 10}, {"l2", "live", 20}, {"l3", "live", 30}, {"d1", "draft", 5}, {"d2", "draft", 15}, {"a1", "archived", 100}} {
		app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", admin,
			map[string]any{"name": p.name, "status": p.status, "price": p.price, "stock": 1, "meta": map[string]any{"k": 1}})
	}

	b.run(t, "aggregate.mjs", "console-aggregate", 4*time.Minute, "DDS_URL="+app.URL, "DDS_KEY="+admin, "DDS_TENANT="+tenant)
}

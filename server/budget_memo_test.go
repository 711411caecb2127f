package server_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/schema"
)

// The budget remembers a cheap statement's estimate (so a repeated cheap
// aggregate is not explained again), keyed by the statement text: a cheap
// shape remembered first must not lend its estimate to an expensive one
// asked next, through REST or GraphQL.
func TestCostBudgetMemoDoesNotShareEstimates(t *testing.T) {
	t.Parallel()
	app, tenantID, key, table := budgetedCatalog(t, 5*time.Second)
	var id string
	if err := testenv.DB(t).Get(&id, `SELECT id::text FROM `+table+` LIMIT 1`); err != nil {
		t.Fatal(err)
	}
	agg := "/api/v1/dynamic/Product/aggregate"
	cheap := map[string]any{"where": map[string]any{"id": id}, "aggregates": map[string]any{"n": map[string]any{"count": "*"}}}
	for range 3 { // estimated at one row: remembered after the first
		if g := app.Must(t, 200, "POST", agg, key, cheap).JSON(t)["groups"].([]any); len(g) != 1 {
			t.Fatalf("cheap aggregate: %v", g)
		}
	}
	gql := "/api/v1/dynamic-gql/" + tenantID
	cheapQ := `{ productsAggregate(where: {id: {in: ["` + id + `"]}}) { count } }`
	for range 3 {
		if b := app.Must(t, 200, "POST", gql, key, map[string]any{"query": cheapQ}).Body; strings.Contains(string(b), "error") {
			t.Fatalf("cheap GraphQL aggregate: %s", b)
		}
	}
	// Every row grouped by price: the same entity and measure, another
	// statement; its own estimate (3,000 rows) is over the budget.
	for range 2 {
		r := app.Do(t, "POST", agg, key, map[string]any{"groupBy": []string{"price"}, "aggregates": map[string]any{"n": map[string]any{"count": "*"}}, "orderBy": "n"})
		e, _ := r.JSON(t)["error"].(map[string]any)
		if r.Status != 400 || e["code"] != "QUERY_TOO_EXPENSIVE" {
			t.Errorf("expensive aggregate after a cheap one: %d %s", r.Status, r.Body)
		}
		g := app.Must(t, 200, "POST", gql, key, map[string]any{"query": `{ productsAggregate(groupBy: ["price"]) { groups(orderBy: [{field: "count"}]) { count } } }`})
		if !strings.Contains(string(g.Body), "QUERY_TOO_EXPENSIVE") {
			t.Errorf("expensive GraphQL groups after a cheap aggregate: %.300s", g.Body)
		}
	}
}

// budgetedCatalog is a server with the statement timeout given and a row
// budget of 1,000, and a tenant with the catalog whose Product table holds
// 3,000 rows, written directly (what the budget tests measure is reading
// them), analysed. It returns the tenant, its key and the table's name.
func budgetedCatalog(t *testing.T, statementTimeout time.Duration) (app *testenv.App, tenantID, key, table string) {
	t.Helper()
	cfg := testenv.Config(t)
	cfg.StatementTimeout, cfg.QueryRowBudget = statementTimeout, 1000
	app = testenv.NewServer(t, cfg)
	tenantID, key = app.Tenant(t)
	app.Schema(t, key, catalog)
	active, err := app.Server.Schemas.ActiveFor(context.Background(), tenantID)
	if err != nil {
		t.Fatal(err)
	}
	table = schema.QualifiedIdent(active.PgSchema, "Product")
	testenv.DB(t).MustExec(`INSERT INTO ` + table + ` (id, name, price) SELECT gen_random_uuid(), 'p' || i, i % 50 FROM generate_series(1, 3000) i`)
	testenv.DB(t).MustExec(`ANALYZE ` + table)
	return app, tenantID, key, table
}

package records_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// The row budget's estimate of a ruled statement near the budget is taken
// once for every user Postgres estimates alike: of six users of the same
// ruled count, as many todos each, half among the owner column's most
// common values (at one frequency) and half not, two estimates are taken
// (keyed by the user id, each user took one); a user owning far more than
// the others is estimated on its own after them, and refused.
func TestBudgetEstimatesAUserAsPostgresDoes(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant, active := budgetTodos(t)
	table := schema.QualifiedIdent(active.PgSchema, "Todo")
	// 200 users with 100 todos each: Postgres keeps 100 of them as the
	// most common values (each at 0.005) and estimates 100 rows for any.
	d.MustExec(`INSERT INTO ` + table + ` (id, title, "ownerId") SELECT gen_random_uuid(), 't' || i, 'u' || (i % 200) FROM generate_series(1, 20000) i`)
	d.MustExec(`ANALYZE ` + table)
	member := query.RoleRules{Name: "member", Entities: map[string]*query.EntityRules{"Todo": {
		Read: query.Cond{Field: "ownerId", Op: query.Eq, Value: query.VarUserID},
	}}}
	// Budget 900: a user's count, estimated at 100 rows, is near it.
	s := records.NewStore(d, schemas, nil, records.WithRuleSource(fixedRules{member}), records.WithRowBudget(900))
	user := func(id string) *records.Scope {
		sc, err := s.Scope(ctx, &auth.Principal{TenantID: tenant, UserID: id, Roles: []string{"member"}, RoleSet: "member@1",
			Scopes: auth.Scopes{{Kind: "*", Name: "*", Op: "*"}}})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	count := func(sc *records.Scope) (int, error) {
		out, err := s.Count(ctx, sc, "Todo", nil, "")
		if err != nil {
			return 0, err
		}
		var n int
		return n, json.Unmarshal(out, &n)
	}
	var common []string
	if err := d.Select(&common, `SELECT unnest(most_common_vals::text::text[]) FROM pg_stats WHERE schemaname = $1 AND tablename = 'Todo' AND attname = 'ownerId'`, active.PgSchema); err != nil {
		t.Fatal(err)
	}
	isCommon := map[string]bool{}
	for _, v := range common {
		isCommon[v] = true
	}
	var users []string
	for i, want := 0, map[bool]int{true: 3, false: 3}; i < 200 && want[true]+want[false] > 0; i++ {
		u := fmt.Sprintf("u%d", i)
		if want[isCommon[u]] > 0 {
			want[isCommon[u]]--
			users = append(users, u)
		}
	}
	if len(users) != 6 {
		t.Fatalf("statistics with %d most common values of 200: no three users on each side", len(common))
	}
	var sc *records.Scope
	for _, u := range append(users, users[0]) {
		sc = user(u)
		if n, err := count(sc); err != nil || n != 100 {
			t.Fatalf("%s counts %d (%v), want 100", u, n, err)
		}
	}
	if got := records.Explained(s, sc); got != 2 {
		t.Errorf("%d estimates taken for %v and %s again, want 2 (common, not)", got, users, users[0])
	}
	// A user owning 5,000 todos: a most common value, estimated at its own
	// count, above the budget.
	d.MustExec(`INSERT INTO ` + table + ` (id, title, "ownerId") SELECT gen_random_uuid(), 'w' || i, 'whale' FROM generate_series(1, 5000) i`)
	d.MustExec(`ANALYZE ` + table)
	whale := user("whale")
	records.ForgetCommonValues(s, whale) // the statistics are read again after a minute; the test does not wait
	before := records.Explained(s, whale)
	if _, err := count(whale); !apperr.Is(err, apperr.QueryTooExpensive) {
		t.Errorf("the whale's count: %v, want QUERY_TOO_EXPENSIVE", err)
	}
	if got := records.Explained(s, whale); got != before+1 {
		t.Errorf("the whale's count took %d estimates, want 1", got-before)
	}
}

// A text that was cheap and has grown over the budget is refused from its
// first new estimate on, also for the requests that arrive while another
// takes the next one: the estimate over the budget ends the text's entry,
// which those requests would otherwise still pass on. While the entry
// stands and another request renews it, a request passes unexplained.
func TestBudgetTextGrownExpensiveIsRefusedAtOnce(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant, active := budgetTodos(t)
	table := schema.QualifiedIdent(active.PgSchema, "Todo")
	d.MustExec(`INSERT INTO ` + table + ` (id, title) SELECT gen_random_uuid(), 't' || i FROM generate_series(1, 5) i`)
	d.MustExec(`ANALYZE ` + table)
	s := records.NewStore(d, schemas, nil, records.WithRowBudget(900))
	sc, err := s.Scope(ctx, records.SystemPrincipal(tenant))
	if err != nil {
		t.Fatal(err)
	}
	count := func() error { _, err := s.Count(ctx, sc, "Todo", nil, ""); return err }
	refused := func(step string) {
		t.Helper()
		if err := count(); !apperr.Is(err, apperr.QueryTooExpensive) {
			t.Fatalf("%s: got %v, want QUERY_TOO_EXPENSIVE", step, err)
		}
	}
	if err := count(); err != nil || records.Explained(s, sc) != 1 {
		t.Fatalf("5 rows: %v, %d estimates", err, records.Explained(s, sc))
	}
	d.MustExec(`INSERT INTO ` + table + ` (id, title) SELECT gen_random_uuid(), 't' || i FROM generate_series(1, 5000) i`)
	d.MustExec(`ANALYZE ` + table)
	records.ExpireBudgetTexts(s, sc)
	records.RenewBudgetTextsElsewhere(s, sc)
	if err := count(); err != nil || records.Explained(s, sc) != 1 {
		t.Fatalf("while another request renews the estimate: %v, %d estimates, want a pass on the old one", err, records.Explained(s, sc))
	}
	records.ExpireBudgetTexts(s, sc)
	refused("the first request after expiry")
	records.RenewBudgetTextsElsewhere(s, sc)
	refused("a request while another takes the next estimate")
	if n := records.Explained(s, sc); n != 3 {
		t.Fatalf("%d estimates, want 3", n)
	}
}

// budgetTodos creates, in a tenant of its own, a schema with one entity
// Todo (title, ownerId indexed) and returns the database, the schema
// service, the tenant and its active schema.
func budgetTodos(t *testing.T) (*sqlx.DB, *schema.Service, string, *schema.Active) {
	t.Helper()
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "budget", Entities: []schema.Entity{{Name: "Todo", Fields: []schema.Field{
		{Name: "title", Type: schema.String},
		{Name: "ownerId", Type: schema.String, Indexed: true},
	}}}})
	active, err := schemas.ActiveFor(ctx, tenant)
	if err != nil {
		t.Fatal(err)
	}
	return d, schemas, tenant, active
}

package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/roles"
)

// The rules section's GraphQL list in-process, for a CPU profile of what
// a user token costs the server (the rules section prints the ratios):
//
//	go test ./bench/cmd/ddsbench -run '^$' -bench 'GraphQLList(Admin|RoleSchema|OwnerRule)' -benchtime 20000x -cpuprofile /tmp/cpu.out
//
// BenchmarkGraphQLListAdmin is the list by the admin key (the shared
// model, no rules), the others the same list by u1's user tokens.
func BenchmarkGraphQLListAdmin(b *testing.B) {
	benchRuleList(b, func(_ *ruleSetup, key string) string { return key })
}

// BenchmarkGraphQLListRoleSchema: a role with a field list (its own model).
func BenchmarkGraphQLListRoleSchema(b *testing.B) {
	benchRuleList(b, func(rs *ruleSetup, _ string) string { return rs.fielded })
}

// BenchmarkGraphQLListOwnerRule: a role with the owner rule.
func BenchmarkGraphQLListOwnerRule(b *testing.B) {
	benchRuleList(b, func(rs *ruleSetup, _ string) string { return rs.ruled })
}

// BenchmarkGraphQLListOpenRole: a role with neither (a user token's own cost).
func BenchmarkGraphQLListOpenRole(b *testing.B) {
	benchRuleList(b, func(rs *ruleSetup, _ string) string { return rs.open })
}

func benchRuleList(b *testing.B, cred func(rs *ruleSetup, key string) string) {
	f := newFixture(b, 1)
	rs, err := enableRules(context.Background(), f.b, f.app.URL, f.b.scope.TenantID, f.key)
	if err != nil {
		b.Fatal(err)
	}
	url := f.app.URL + "/api/v1/dynamic-gql/" + f.b.scope.TenantID
	bodies := make([][]byte, 11)
	for i := range bodies {
		bodies[i] = gqlBody(ruleGQLList, map[string]any{"n": 10 + i})
	}
	benchPost(b, cred(rs, f.key), url, func() []byte { return bodies[rand.IntN(len(bodies))] })
}

// TestRulesNestedRunsOneStatement guards the rules section's nested list,
// get by id, list and GraphQL list: by the user token (each end under its owner rule), the
// open role and the admin key, DDS runs one statement, the rules inside it.
// With -v it logs each statement's plan (EXPLAIN ANALYZE, buffers) and
// fastest execution, to compare what the rules cost Postgres (a user's
// query must not cost far more than the admin's).
func TestRulesNestedRunsOneStatement(t *testing.T) {
	f := newFixture(t, 1)
	ctx := context.Background()
	tenantID := f.b.scope.TenantID
	rs, err := enableRules(ctx, f.b, f.app.URL, tenantID, f.key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := testenv.Config(t)
	authn := auth.NewAuthenticator(f.app.Server.DB, cfg.Env, []byte(cfg.JWTSecret), time.Minute, slog.New(slog.DiscardHandler),
		auth.WithRoles(roles.NewStore(f.app.Server.DB, f.app.Server.Schemas)))
	o := observeWith(t, f, authn)
	for _, c := range []struct{ name, q, cred, owner string }{
		{"nested, owner rule", ruleGQLNestedOwn, rs.ruled, "u1"}, {"nested, no rule", ruleGQLNestedOwn, rs.open, ""},
		{"nested mixed owners, owner rule", ruleGQLNested, rs.ruled, "u1"}, {"nested mixed owners, no rule", ruleGQLNested, rs.open, ""},
		{"nested mixed owners, admin key", ruleGQLNested, f.key, ""},
	} {
		o.take()
		tree, err := ruleNestedFromDDS(ctx, o.url+"/api/v1/dynamic-gql/"+tenantID, c.cred, c.q)
		if err != nil {
			t.Fatal(err)
		}
		if err := tree.check(c.owner, c.q == ruleGQLNestedOwn); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		logPlan(t, f, c.name, o.take())
	}
	for _, c := range []struct{ name, cred string }{{"GET by id, owner rule", rs.ruled}, {"GET by id, no rule", rs.open}} {
		o.take()
		if _, err := load.Call(ctx, load.Client(1), "GET", o.url+"/api/v1/dynamic/"+ruleEntity+"/"+rs.ids[0], c.cred, nil, http.StatusOK, nil); err != nil {
			t.Fatal(err)
		}
		logPlan(t, f, c.name, o.take())
	}
	for _, c := range []struct{ name, cred string }{{"list, owner rule", rs.ruled}, {"list, no rule", rs.open}} {
		o.take()
		if _, err := load.Call(ctx, load.Client(1), "GET", o.url+"/api/v1/dynamic/"+ruleEntity+"?limit=20", c.cred, nil, http.StatusOK, nil); err != nil {
			t.Fatal(err)
		}
		logPlan(t, f, c.name, o.take())
	}
	for _, c := range []struct{ name, cred string }{{"GraphQL list, owner rule", rs.ruled}, {"GraphQL list, no rule", rs.open}} {
		o.take()
		if _, err := load.Call(ctx, load.Client(1), "POST", o.url+"/api/v1/dynamic-gql/"+tenantID, c.cred, gqlBody(ruleGQLList, map[string]any{"n": 20}), http.StatusOK, nil); err != nil {
			t.Fatal(err)
		}
		logPlan(t, f, c.name, o.take())
	}
}

// logPlan fails unless ran is one statement, and logs its plan and its
// fastest execution of 50 (EXPLAIN ANALYZE's execution time, no timing of
// plan nodes) with the rule variables bound for u1.
func logPlan(t *testing.T, f *fixture, name string, ran []query.Statement) {
	t.Helper()
	if len(ran) != 1 {
		t.Fatalf("%s: DDS ran %d statements, want 1", name, len(ran))
	}
	args := query.BindParams(ran[0].Args, func(v query.Var) (any, bool) { return "u1", v == query.VarUserID })
	var plan []string
	if err := f.b.db.Select(&plan, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "+ran[0].SQL, args...); err != nil {
		t.Fatal(err)
	}
	fastest := math.Inf(1)
	for range 50 {
		var lines []string
		if err := f.b.db.Select(&lines, "EXPLAIN (ANALYZE, TIMING OFF, SUMMARY ON) "+ran[0].SQL, args...); err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Execution Time: "); ok {
				ms, err := strconv.ParseFloat(strings.TrimSuffix(v, " ms"), 64)
				if err != nil {
					t.Fatal(err)
				}
				fastest = min(fastest, ms)
			}
		}
	}
	t.Logf("%s (fastest execution of 50: %.3f ms):\n%s\n%s\ngeneric plan (as a prepared statement runs it once Postgres keeps one):\n%s",
		name, fastest, ran[0].SQL, strings.Join(plan, "\n"), genericPlan(t, f, ran[0].SQL, args))
}

// genericPlan is EXPLAIN (ANALYZE, BUFFERS) of sql's generic plan with
// args: the plan DDS's prepared statement runs once Postgres keeps its
// generic plan (EXPLAIN of the text with values shows the plan made for
// them).
func genericPlan(t *testing.T, f *fixture, sql string, args []any) string {
	t.Helper()
	ctx := context.Background()
	conn, err := f.b.db.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	lits := make([]string, len(args))
	for i, v := range args {
		lits[i] = pq.QuoteLiteral(fmt.Sprint(v))
	}
	for _, st := range []string{"PREPARE generic_plan AS " + sql, "SET plan_cache_mode = force_generic_plan"} {
		if _, err := conn.ExecContext(ctx, st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	defer conn.ExecContext(ctx, "DEALLOCATE generic_plan; RESET plan_cache_mode") //nolint:errcheck // the connection goes back clean or not at all
	exec := "EXECUTE generic_plan"
	if len(lits) > 0 {
		exec += "(" + strings.Join(lits, ", ") + ")"
	}
	var lines []string
	if err := conn.SelectContext(ctx, &lines, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) "+exec); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

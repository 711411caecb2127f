package records_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// fixedRules is a RuleSource holding one role, "member", at version 1.
type fixedRules struct{ rules query.RoleRules }

func (f fixedRules) RoleRules(_ context.Context, _ string, _ *schema.Definition, names []string) ([]query.RoleRules, string, error) {
	for _, n := range names {
		if n == "member" {
			return []query.RoleRules{f.rules}, "member@1", nil
		}
	}
	return nil, "", nil
}

// One compiled statement serves every user of a role set: the cached get,
// the kept get and the list bind each user's own id; a claim the token
// lacks denies; Admits agrees with reads; update.check rolls back.
func TestRulesBindPerPrincipal(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "rules", Entities: []schema.Entity{{Name: "Todo", Fields: []schema.Field{
		{Name: "title", Type: schema.String},
		{Name: "ownerId", Type: schema.String, Indexed: true},
		{Name: "org", Type: schema.String},
	}}}})
	member := query.RoleRules{Name: "member", Entities: map[string]*query.EntityRules{"Todo": {
		Read: query.Or{
			query.Cond{Field: "ownerId", Op: query.Eq, Value: query.VarUserID},
			query.Cond{Field: "org", Op: query.Eq, Value: query.Var("$user.claims.team.org")},
		},
		UpdateWhere: query.Cond{Field: "ownerId", Op: query.Eq, Value: query.VarUserID},
		UpdateCheck: query.Cond{Field: "ownerId", Op: query.Eq, Value: query.VarUserID},
	}}}
	s := records.NewStore(d, schemas, nil, records.WithRuleSource(fixedRules{member}))
	sys, err := s.Scope(ctx, records.SystemPrincipal(tenant))
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, r := range []map[string]any{{"title": "a", "ownerId": "alice"}, {"title": "b", "ownerId": "bob"}, {"title": "c", "ownerId": "carol", "org": "acme"}} {
		out, err := s.Create(ctx, sys, "Todo", r)
		if err != nil {
			t.Fatal(err)
		}
		var rec struct{ ID string }
		_ = json.Unmarshal(out, &rec)
		ids[r["title"].(string)] = rec.ID
	}
	user := func(id string, claims map[string]any) *records.Scope {
		sc, err := s.Scope(ctx, &auth.Principal{TenantID: tenant, UserID: id, Roles: []string{"member"}, RoleSet: "member@1", Claims: claims,
			Scopes: auth.Scopes{{Kind: "*", Name: "*", Op: "*"}}})
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	alice, bob := user("alice", nil), user("bob", map[string]any{"team": map[string]any{"org": "acme"}})
	nobody := user("", nil) // no user id, no claim: every variable is missing
	var k records.Kept
	for _, c := range []struct {
		name    string
		sc      *records.Scope
		visible string // titles, in order
	}{{"alice", alice, "a"}, {"bob (own + claim)", bob, "bc"}, {"alice again (the statements are cached now)", alice, "a"}, {"no variables", nobody, ""}} {
		got := ""
		for _, title := range []string{"a", "b", "c"} {
			_, err := s.Get(ctx, c.sc, "Todo", ids[title], query.Selection{})
			kept := false
			ran, kerr := s.GetKeptFunc(ctx, c.sc, &k, "Todo", ids[title], func() query.Selection { return query.Selection{} }, func([]byte) error { kept = true; return nil })
			if !ran || (kerr == nil) != kept {
				t.Fatalf("%s: the kept get did not run (ran %v, %v)", c.name, ran, kerr)
			}
			if (err == nil) != kept {
				t.Fatalf("%s: get and kept get disagree on %s: %v / %v", c.name, title, err, kerr)
			}
			if err == nil {
				got += title
			} else if apperr.As(err).Code != apperr.NotFound {
				t.Fatal(err)
			}
			rec := []byte(`{"id":"` + ids[title] + `","ownerId":"` + map[string]string{"a": "alice", "b": "bob", "c": "carol"}[title] + `","org":` + map[string]string{"a": "null", "b": "null", "c": `"acme"`}[title] + `}`)
			ok, err := s.Admits(ctx, c.sc, "Todo", rec)
			if err != nil || ok != strings.Contains(c.visible, title) {
				t.Fatalf("%s: Admits(%s) = %v %v", c.name, title, ok, err)
			}
			// In Go (the live feed's first try) it agrees, also for a
			// principal lacking the variables.
			fields := map[string]any{}
			if err := json.Unmarshal(rec, &fields); err != nil {
				t.Fatal(err)
			}
			if local, isLocal := c.sc.AdmitsLocally("Todo", fields); !isLocal || local != ok {
				t.Fatalf("%s: AdmitsLocally(%s) = %v (in Go: %v), Postgres says %v", c.name, title, local, isLocal, ok)
			}
		}
		if got != c.visible {
			t.Fatalf("%s sees %q, want %q", c.name, got, c.visible)
		}
		n, err := s.Count(ctx, c.sc, "Todo", nil, "")
		if err != nil || string(n) != string(rune('0'+len(c.visible))) {
			t.Fatalf("%s counts %s (%v), want %d", c.name, n, err, len(c.visible))
		}
	}
	// bob reads carol's todo through the claim but may not update it; his
	// own he may, but not give away.
	if _, err := s.Update(ctx, bob, "Todo", ids["c"], map[string]any{"title": "x"}, records.Patch); apperr.As(err).Code != apperr.NotFound {
		t.Fatalf("bob updating carol's todo: %v", err)
	}
	if _, err := s.Update(ctx, bob, "Todo", ids["b"], map[string]any{"ownerId": "alice"}, records.Patch); apperr.As(err).Code != apperr.Forbidden || !strings.Contains(err.Error(), "rules.Todo.update.check") {
		t.Fatalf("bob giving his todo away: %v", err)
	}
	if out, err := s.Get(ctx, sys, "Todo", ids["b"], query.Selection{Fields: []string{"ownerId"}}); err != nil || !strings.Contains(string(out), `"bob"`) {
		t.Fatalf("the failed check was not rolled back: %s %v", out, err)
	}
	// Batches: every item under the same rules, all or nothing.
	res, err := s.BatchUpdate(ctx, bob, "Todo", []records.BatchUpdateItem{
		{ID: ids["b"], Raw: map[string]any{}, Data: map[string]any{"title": "b2"}},
		{ID: ids["c"], Raw: map[string]any{}, Data: map[string]any{"title": "c2"}},
	})
	if err != nil || res.FailureCount != 1 || res.Failed[0].Index != 1 || res.Failed[0].Error.Code != apperr.NotFound {
		t.Fatalf("bob's batch over carol's todo: %+v %v", res, err)
	}
	res, err = s.BatchUpdate(ctx, bob, "Todo", []records.BatchUpdateItem{{ID: ids["b"], Raw: map[string]any{}, Data: map[string]any{"ownerId": "carol"}}})
	if err != nil || res.FailureCount != 1 || res.Failed[0].Error.Code != apperr.Forbidden || !strings.Contains(res.Failed[0].Error.Message, "rules.Todo.update.check") {
		t.Fatalf("bob's batch giving his todo away: %+v %v", res, err)
	}
	if out, err := s.Get(ctx, sys, "Todo", ids["b"], query.Selection{Fields: []string{"ownerId", "title"}}); err != nil || !strings.Contains(string(out), `"ownerId":"bob"`) || !strings.Contains(string(out), `"title":"b"`) {
		t.Fatalf("a refused batch wrote: %s %v", out, err)
	}
	res, err = s.BatchDelete(ctx, bob, "Todo", []any{ids["a"]})
	if err != nil || res.FailureCount != 1 || res.Failed[0].Error.Code != apperr.NotFound {
		t.Fatalf("bob deleting alice's todo in a batch: %+v %v", res, err)
	}
	res, err = s.BatchDelete(ctx, bob, "Todo", []any{ids["b"]})
	if err != nil || res.SuccessCount != 1 {
		t.Fatalf("bob deleting his own todo in a batch: %+v %v", res, err)
	}
}

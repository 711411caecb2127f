package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/dds-project/dds/bench/load"
)

// The rules section (issue 22): GET by id, a list and a GraphQL list of
// an entity under an owner rule (read: ownerId = $user.id, indexed)
// against the same requests without a rule, both by user tokens of the
// same kind (a role with the rule, a role without), so the ratio is what
// the rule costs. Target: ≥ targetRules of the unruled req/s, Postgres CPU
// per request ≤ targetDBTime×. The entity is added by evolving the schema
// when the section starts, as the history section does.
//
// One more pair measures a schema per role: the GraphQL list by a user
// token whose role has a field list (its own GraphQL model, cached after
// the first request) against the same list by the admin key (the shared
// model); no row rule, so both read the same rows and the ratio is what
// the role's schema costs on the request path.

const (
	ruleEntity  = "Item"
	ruleOwners  = 10   // users owning the records in turn
	ruleRecords = 2000 // records seeded through REST batches
	targetRules = 0.90
	// targetRulesCPU bounds Postgres CPU per request under the rule.
	targetRulesCPU = 1.1
)

// ruleSetup is what the section's requests need.
type ruleSetup struct {
	ruled, open string   // user tokens of user u1: role owner (rule), role open (none)
	fielded     string   // user token of u1 with role fielded (a field list, no rule)
	ids         []string // u1's records
}

// enableRules adds ruleEntity and the two roles, seeds records owned by
// ruleOwners users, and mints u1's tokens.
func enableRules(ctx context.Context, ddsURL, tenantID, key string) (*ruleSetup, error) {
	c := load.Client(1)
	var list struct {
		Schemas []struct{ ID, Name string }
	}
	if _, err := load.Call(ctx, c, "GET", ddsURL+"/api/v1/schemas", key, nil, http.StatusOK, &list); err != nil {
		return nil, err
	}
	id := ""
	for _, s := range list.Schemas {
		if s.Name == schemaDef["name"] {
			id = s.ID
		}
	}
	if id == "" {
		return nil, fmt.Errorf("rules: the bench schema is missing")
	}
	def := map[string]any{}
	for k, v := range schemaDef {
		def[k] = v
	}
	def["entities"] = append(append([]any{}, schemaDef["entities"].([]any)...), map[string]any{"name": ruleEntity, "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER"},
		map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
	}})
	if _, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/schemas/"+id, key, def, http.StatusOK, nil); err != nil {
		return nil, fmt.Errorf("rules: add %s: %w", ruleEntity, err)
	}
	scopes := []any{"entity:" + ruleEntity + ":read"}
	if _, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/roles/owner", key, map[string]any{"scopes": scopes,
		"rules": map[string]any{ruleEntity: map[string]any{"read": map[string]any{"ownerId": "$user.id"}}}}, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	if _, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/roles/open", key, map[string]any{"scopes": scopes}, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	for i := 0; i < ruleRecords; i += 200 {
		items := make([]any, 200)
		for j := range items {
			items[j] = map[string]any{"name": fmt.Sprintf("p%d", i+j), "price": float64(i+j) / 10, "ownerId": fmt.Sprintf("u%d", (i+j)%ruleOwners)}
		}
		if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+ruleEntity+"/batch", key, map[string]any{"items": items}, http.StatusCreated, nil); err != nil {
			return nil, fmt.Errorf("rules: seed: %w", err)
		}
	}
	rs := &ruleSetup{}
	if _, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/roles/fielded", key, map[string]any{"scopes": scopes,
		"fields": map[string]any{ruleEntity: map[string]any{"read": []any{"name", "price"}}}}, http.StatusCreated, nil); err != nil {
		return nil, err
	}
	for role, dst := range map[string]*string{"owner": &rs.ruled, "open": &rs.open, "fielded": &rs.fielded} {
		var tok struct{ AccessToken string }
		if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/auth/token", key, map[string]any{"userId": "u1", "roles": []any{role}, "expiresIn": 3600}, http.StatusCreated, &tok); err != nil {
			return nil, err
		}
		*dst = tok.AccessToken
	}
	// The rule holds: u1 sees its own records only, the open role all.
	var mine, all struct {
		Items []struct{ ID, OwnerID string }
		Count int
	}
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+ruleEntity+"/query", rs.ruled, map[string]any{"limit": 1000, "includeCount": true}, http.StatusOK, &mine); err != nil {
		return nil, err
	}
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+ruleEntity+"/query", rs.open, map[string]any{"limit": 1, "includeCount": true}, http.StatusOK, &all); err != nil {
		return nil, err
	}
	if mine.Count != ruleRecords/ruleOwners || all.Count != ruleRecords {
		return nil, fmt.Errorf("rules: u1 sees %d records under the rule and %d without, want %d and %d", mine.Count, all.Count, ruleRecords/ruleOwners, ruleRecords)
	}
	// The GraphQL list answers records, not errors.
	var g struct {
		Data   struct{ Items []struct{ ID string } }
		Errors []any
	}
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic-gql/"+tenantID, rs.ruled, map[string]any{"query": ruleGQLList, "variables": map[string]any{"n": 10}}, http.StatusOK, &g); err != nil {
		return nil, err
	}
	if len(g.Errors) > 0 || len(g.Data.Items) != 10 {
		return nil, fmt.Errorf("rules: the GraphQL list answered %d items, errors %v", len(g.Data.Items), g.Errors)
	}
	// The field-listed role's schema has no ownerId; its list answers.
	sdl, err := load.Call(ctx, c, "GET", ddsURL+"/api/v1/dynamic-gql/"+tenantID+"/schema.graphql", rs.fielded, nil, http.StatusOK, nil)
	if err != nil {
		return nil, err
	}
	if strings.Contains(string(sdl), "ownerId") {
		return nil, fmt.Errorf("rules: the fielded role's schema shows ownerId")
	}
	g.Data.Items, g.Errors = nil, nil
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic-gql/"+tenantID, rs.fielded, map[string]any{"query": ruleGQLList, "variables": map[string]any{"n": 10}}, http.StatusOK, &g); err != nil {
		return nil, err
	}
	if len(g.Errors) > 0 || len(g.Data.Items) != 10 {
		return nil, fmt.Errorf("rules: the fielded role's GraphQL list answered %d items, errors %v", len(g.Data.Items), g.Errors)
	}
	for _, it := range mine.Items {
		if it.OwnerID != "u1" {
			return nil, fmt.Errorf("rules: u1 sees a record of %s", it.OwnerID)
		}
		rs.ids = append(rs.ids, it.ID)
	}
	return rs, nil
}

const ruleGQLList = `query($n: Int!) { items(limit: $n, where: {price: {gte: 0}}) { id name price } }`

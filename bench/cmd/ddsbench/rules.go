package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/schema"
)

// The rules section (issue 22): GET by id, a list and a GraphQL list of
// an entity under an owner rule (read: ownerId = $user.id, indexed) against
// the same requests without a rule, both by user tokens of the same kind
// (a role with the rule, a role without). Target: ≥ targetRules of the
// unruled req/s, Postgres CPU per request ≤ targetRulesCPU×. The lists and
// the tree run a third time by the unruled token with the rule's condition
// written by the caller (where ownerId = u1): the ruled requests' rows
// without a rule, printed beside them (rulesVerdicts says why). The entity
// is added by evolving the schema when the section starts, as the history
// section does.
//
// One more pair measures a schema per role: the GraphQL list by a user
// token whose role has a field list (its own GraphQL model, cached after
// the first request) against the same list by the admin key (the shared
// model); no row rule, so both read the same rows and the ratio is what
// the role's schema costs on the request path.
//
// The nested shape is projects with their items, each end under its own
// owner rule, in two data sets. The judged one (ruleOwnRel): every project
// links 20 items of its owner, as in a todo app whose lists hold their
// owner's todos, so the rule hides nothing the page would show and the
// ruled and unruled requests read the same number of rows: the ratio is
// what the rule costs, beside the rows it selects. The mixed one
// (ruleRel, labelled "mixed owners", printed, not judged): every project
// links 20 items of its owner and 20 of others, so a user's page of items
// is cut from the links its rule admits, not the first ten links: it
// follows about twice the links of the unruled page, another result set
// (docs/auth.md, "What a rule costs").
// Both run by the ruled token and the unruled one, the mixed one by the
// admin key too.
//
// The peer is PostGraphile 5 with the same rules as Postgres row-level
// security (rulespeer.go) on the same tables, reading the same user token.

const (
	ruleEntity   = "Item"
	ruleProject  = "Project"
	ruleRel      = "IN_PROJECT"     // Item → Project: Item.projects, Project.items (mixed owners)
	ruleOwnRel   = "IN_OWN_PROJECT" // Item → Project: Item.ownProjects, Project.ownItems (the owner's items)
	ruleOwners   = 10               // users owning the records in turn
	ruleRecords  = 2000             // records seeded through REST batches
	ruleProjects = 100              // projects, ruleProjects/ruleOwners per user
	ruleLinks    = 20               // items of its owner (and as many of others) per project
	targetRules  = 0.90
	// targetRulesCPU bounds Postgres CPU per request under the rule.
	targetRulesCPU = 1.1
	// targetRulesPeer: DDS under rules against PostGraphile with RLS.
	targetRulesPeer = 2.0
)

// ruleSetup is what the section's requests need.
type ruleSetup struct {
	ruled, open string   // user tokens of user u1: role owner (rule), role open (none)
	fielded     string   // user token of u1 with role fielded (a field list, no rule)
	ids         []string // u1's records
	other       string   // a record of another user
}

// enableRules adds ruleEntity, ruleProject and ruleRel and the roles,
// seeds records owned by ruleOwners users and the projects they are in, and
// mints u1's tokens.
func enableRules(ctx context.Context, b *bench, ddsURL, tenantID, key string) (*ruleSetup, error) {
	c := load.Client(1)
	entities := []any{map[string]any{"name": ruleEntity, "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER"},
		map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
	}}, map[string]any{"name": ruleProject, "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
	}}}
	rels := []any{map[string]any{"name": ruleRel, "from": ruleEntity, "to": ruleProject, "fromField": "projects", "toField": "items"},
		map[string]any{"name": ruleOwnRel, "from": ruleEntity, "to": ruleProject, "fromField": "ownProjects", "toField": "ownItems"}}
	if err := addToSchema(ctx, ddsURL, key, entities, rels); err != nil {
		return nil, fmt.Errorf("rules: add %s: %w", ruleEntity, err)
	}
	scopes := []any{"entity:" + ruleEntity + ":read", "entity:" + ruleProject + ":read", "relationship:" + ruleRel + ":read", "relationship:" + ruleOwnRel + ":read"}
	mine := map[string]any{"read": map[string]any{"ownerId": "$user.id"}}
	if _, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/roles/owner", key, map[string]any{"scopes": scopes,
		"rules": map[string]any{ruleEntity: mine, ruleProject: mine}}, http.StatusCreated, nil); err != nil {
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
	if err := b.seedProjects(ctx); err != nil {
		return nil, err
	}
	rs := &ruleSetup{}
	if _, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/roles/fielded", key, map[string]any{"scopes": scopes,
		"fields": map[string]any{ruleEntity: map[string]any{"read": []any{"name", "price"}}, ruleProject: map[string]any{"read": []any{"name"}}}}, http.StatusCreated, nil); err != nil {
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
	var own, all struct {
		Items []struct{ ID, OwnerID string }
		Count int
	}
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+ruleEntity+"/query", rs.ruled, map[string]any{"limit": 1000, "includeCount": true}, http.StatusOK, &own); err != nil {
		return nil, err
	}
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+ruleEntity+"/query", rs.open, map[string]any{"limit": 2, "includeCount": true}, http.StatusOK, &all); err != nil {
		return nil, err
	}
	if own.Count != ruleRecords/ruleOwners || all.Count != ruleRecords {
		return nil, fmt.Errorf("rules: u1 sees %d records under the rule and %d without, want %d and %d", own.Count, all.Count, ruleRecords/ruleOwners, ruleRecords)
	}
	for _, it := range all.Items {
		if it.OwnerID != "u1" {
			rs.other = it.ID
		}
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
	// The nested lists: u1's projects with its items only; the admin key's
	// and the open role's, the first projects with any items, each with
	// its owner's items only in the judged shape.
	for _, q := range []string{ruleGQLNested, ruleGQLNestedOwn} {
		for tok, owner := range map[string]string{rs.ruled: "u1", rs.open: "", key: ""} {
			t, err := ruleNestedFromDDS(ctx, ddsURL+"/api/v1/dynamic-gql/"+tenantID, tok, q)
			if err != nil {
				return nil, err
			}
			if err := t.check(owner, q == ruleGQLNestedOwn); err != nil {
				return nil, err
			}
		}
	}
	for _, it := range own.Items {
		if it.OwnerID != "u1" {
			return nil, fmt.Errorf("rules: u1 sees a record of %s", it.OwnerID)
		}
		rs.ids = append(rs.ids, it.ID)
	}
	// The baselines of what a rule costs ask for the ruled requests' rows
	// with the rule's condition written by the caller: the same answers.
	gql := ddsURL + "/api/v1/dynamic-gql/" + tenantID
	for _, p := range []struct{ method, ruled, where string }{
		{"GET", ddsURL + "/api/v1/dynamic/" + ruleEntity + "?limit=20", ddsURL + "/api/v1/dynamic/" + ruleEntity + "?limit=20&where=" + ruleOwnWhere},
		{"POST", ruleGQLList, ruleGQLListWhere},
		{"POST", ruleGQLNestedOwn, ruleGQLNestedOwnWhere},
	} {
		if err := sameAnswers(ctx, c, p.method, gql, p.ruled, p.where, rs.ruled, rs.open); err != nil {
			return nil, err
		}
	}
	return rs, nil
}

// sameAnswers checks that ruled, by the ruled token, and where, by the
// unruled one, answer the same: URLs for a GET, GraphQL queries (with
// $n = 20 where they take it) posted to gql otherwise.
func sameAnswers(ctx context.Context, c *http.Client, method, gql, ruled, where, ruledTok, openTok string) error {
	call := func(q, tok string) (any, error) {
		var out any
		var err error
		if method == "GET" {
			_, err = load.Call(ctx, c, "GET", q, tok, nil, http.StatusOK, &out)
		} else {
			var vars map[string]any
			if strings.Contains(q, "$n") {
				vars = map[string]any{"n": 20}
			}
			_, err = load.Call(ctx, c, "POST", gql, tok, gqlBody(q, vars), http.StatusOK, &out)
		}
		return out, err
	}
	a, err := call(ruled, ruledTok)
	if err != nil {
		return err
	}
	b, err := call(where, openTok)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(a, b) {
		return fmt.Errorf("rules: the caller's filter answers other rows than the rule:\n rule:   %.400v\n filter: %.400v", a, b)
	}
	return nil
}

// ruleOwnWhere is the REST list's where (query-escaped) asking for u1's
// records, the owner rule's condition written by the caller.
var ruleOwnWhere = url.QueryEscape(`{"ownerId":"u1"}`)

const (
	ruleGQLList = `query($n: Int!) { items(limit: $n, where: {price: {gte: 0}}) { id name price } }`
	// ruleGQLListWhere: the same list with the rule's condition written
	// by the caller: the ruled list's rows, asked for without a rule.
	ruleGQLListWhere = `query($n: Int!) { items(limit: $n, where: {price: {gte: 0}, ownerId: {equals: "u1"}}) { id name price } }`
	// ruleGQLNested: 10 projects × 10 items, each end under its rule, of
	// projects linking items of other owners too (mixed owners).
	ruleGQLNested = `{ projects(limit: 10) { id name ownerId items(limit: 10) { id name price ownerId } } }`
	// ruleGQLNestedOwn: the same of projects linking their owner's items
	// only (the judged shape); aliased, so both answer the same tree.
	ruleGQLNestedOwn = `{ projects(limit: 10) { id name ownerId items: ownItems(limit: 10) { id name price ownerId } } }`
	// ruleGQLNestedOwnWhere: the same tree with each end's rule written by
	// the caller: the ruled tree's rows, asked for without a rule.
	ruleGQLNestedOwnWhere = `{ projects(limit: 10, where: {ownerId: {equals: "u1"}}) { id name ownerId items: ownItems(limit: 10, where: {ownerId: {equals: "u1"}}) { id name price ownerId } } }`
)

// seedProjects adds ruleProjects projects, owned by u0 … u9 in turn, and
// links each through ruleRel to ruleLinks items of its owner and as many of
// other users, and through ruleOwnRel to ruleLinks items of its owner, in
// one statement per relationship (so their link ids, random, decide the
// related order as their creation time ties).
func (b *bench) seedProjects(ctx context.Context) error {
	ids := make([]string, ruleProjects)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	pg := b.scope.Schema.PgSchema
	item, project, rel := schema.QualifiedIdent(pg, ruleEntity), schema.QualifiedIdent(pg, ruleProject), schema.QualifiedIdent(pg, ruleRel)
	if _, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s ("id", "name", "ownerId")
SELECT u.id, 'project ' || lpad((u.n - 1)::text, 3, '0'), 'u' || ((u.n - 1) %% %d) FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n)`,
		project, ruleOwners), pq.Array(ids)); err != nil {
		return fmt.Errorf("rules: seed projects: %w", err)
	}
	if _, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %[1]s ("id", "source_id", "target_id")
SELECT gen_random_uuid(), i.id, p.id FROM %[2]s p CROSS JOIN LATERAL (
  (SELECT id FROM %[3]s WHERE "ownerId" = p."ownerId" ORDER BY md5(id::text || p.id::text) LIMIT %[4]d)
  UNION ALL
  (SELECT id FROM %[3]s WHERE "ownerId" <> p."ownerId" ORDER BY md5(id::text || p.id::text) LIMIT %[4]d)) i`,
		rel, project, item, ruleLinks)); err != nil {
		return fmt.Errorf("rules: seed %s: %w", ruleRel, err)
	}
	own := schema.QualifiedIdent(pg, ruleOwnRel)
	if _, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %[1]s ("id", "source_id", "target_id")
SELECT gen_random_uuid(), i.id, p.id FROM %[2]s p CROSS JOIN LATERAL (
  SELECT id FROM %[3]s WHERE "ownerId" = p."ownerId" ORDER BY md5(id::text || p.id::text) LIMIT %[4]d) i`,
		own, project, item, ruleLinks)); err != nil {
		return fmt.Errorf("rules: seed %s: %w", ruleOwnRel, err)
	}
	_, err := b.db.ExecContext(ctx, "ANALYZE "+item+"; ANALYZE "+project+"; ANALYZE "+rel+"; ANALYZE "+own)
	return err
}

// ruleTree is the nested answer, whoever gave it.
type ruleTree []struct {
	ID, Name, OwnerID string
	Items             []ruleLeaf
}

type ruleLeaf struct {
	ID, Name, OwnerID string
	Price             float64
}

// check asserts 10 projects × 10 items, all of owner when it is set, and
// each of its project's owner when own is set.
func (t ruleTree) check(owner string, own bool) error {
	if len(t) != 10 {
		return fmt.Errorf("rules: the nested list has %d projects, want 10", len(t))
	}
	for _, p := range t {
		if len(p.Items) != 10 {
			return fmt.Errorf("rules: project %s has %d items, want 10", p.Name, len(p.Items))
		}
		for _, it := range p.Items {
			if owner != "" && (p.OwnerID != owner || it.OwnerID != owner) {
				return fmt.Errorf("rules: %s sees project %s of %s with an item of %s", owner, p.Name, p.OwnerID, it.OwnerID)
			}
			if own && it.OwnerID != p.OwnerID {
				return fmt.Errorf("rules: project %s of %s holds an item of %s in its own items", p.Name, p.OwnerID, it.OwnerID)
			}
		}
	}
	return nil
}

func ruleNestedFromDDS(ctx context.Context, gqlURL, cred, q string) (ruleTree, error) {
	var r struct {
		Data   struct{ Projects ruleTree }
		Errors []any
	}
	if _, err := load.Call(ctx, load.Client(1), "POST", gqlURL, cred, gqlBody(q, nil), http.StatusOK, &r); err != nil {
		return nil, err
	}
	if len(r.Errors) > 0 {
		return nil, fmt.Errorf("rules: the nested list answered %v", r.Errors)
	}
	return r.Data.Projects, nil
}

// Contenders of the rules section.
const (
	rGetOpen    = "GET by id, no rule"
	rGetRuled   = "GET by id, owner rule"
	rGetPeer    = "GET by id, PostGraphile 5 + RLS"
	rListOpen   = "list, no rule"
	rListRuled  = "list, owner rule"
	rListWhere  = "list, no rule, where ownerId = u1"
	rGQLOpen    = "GraphQL list, no rule"
	rGQLWhere   = "GraphQL list, no rule, where ownerId = u1"
	rGQLRuled   = "GraphQL list, owner rule"
	rGQLAdmin   = "GraphQL list, admin key"
	rGQLFielded = "GraphQL list, role schema"
	rGQLPeer    = "GraphQL list, PostGraphile 5 + RLS"
	rNestOpen   = "nested, no rule"
	rNestRuled  = "nested, owner rule"
	rNestWhere  = "nested, no rule, where ownerId = u1"
	rMixOpen    = "nested mixed owners, no rule"
	rMixRuled   = "nested mixed owners, owner rule"
	rMixAdmin   = "nested mixed owners, admin key"
	rNestPeer   = "nested mixed owners, PostGraphile 5 + RLS"
)

// rulesTargets prepares the rules section (records, roles, tokens, and
// PostGraphile with RLS when PostGraphile is installed) and its contenders.
// It returns the peer to stop after the section and what undoes the RLS
// setup (never nil).
func rulesTargets(ctx context.Context, root string, env ddsEnv, b *bench, dds *proc, tenantID, apiKey, tmp string) ([]wrkTarget, *proc, func(), error) {
	done := func() {}
	gqlPath := "/api/v1/dynamic-gql/" + tenantID
	rs, err := enableRules(ctx, b, dds.URL, tenantID, apiKey)
	if err != nil {
		return nil, nil, done, err
	}
	var peer *proc
	aud, err := tokenAudience(rs.ruled)
	if err != nil {
		return nil, nil, done, err
	}
	role := rlsRole(tenantID)
	if done, err = enableRLS(ctx, b, role); err != nil {
		return nil, nil, func() {}, err
	}
	peer, why, err := startPeerWith(ctx, root, env.databaseURL, b.scope.Schema.PgSchema, "graphile.rls.mjs",
		[]string{"DDSBENCH_JWT_SECRET=" + env.jwtSecret, "DDSBENCH_JWT_AUDIENCE=" + aud, "DDSBENCH_RLS_ROLE=" + role})
	if err != nil {
		return nil, nil, done, err
	}
	if peer == nil {
		fmt.Println("PostGraphile with RLS left out: " + why)
	} else if err := checkRulesPeer(ctx, dds.URL+gqlPath, peer.URL+peerPath, rs); err != nil {
		peer.Stop()
		return nil, nil, done, err
	}
	hdr := func(tok string) []string {
		return []string{"Authorization: Bearer " + tok, "Content-Type: application/json"}
	}
	var getL, listL, whereL, gqlL, gqlWhereL, peerGetL, peerListL []string
	for i := range 2000 {
		id := rs.ids[i%len(rs.ids)]
		getL = append(getL, reqLine("GET", "/api/v1/dynamic/"+ruleEntity+"/"+id, nil))
		listL = append(listL, reqLine("GET", fmt.Sprintf("/api/v1/dynamic/%s?limit=%d", ruleEntity, 10+i%11), nil))
		whereL = append(whereL, reqLine("GET", fmt.Sprintf("/api/v1/dynamic/%s?limit=%d&where=%s", ruleEntity, 10+i%11, ruleOwnWhere), nil))
		gqlL = append(gqlL, reqLine("POST", gqlPath, gqlBody(ruleGQLList, map[string]any{"n": 10 + i%11})))
		gqlWhereL = append(gqlWhereL, reqLine("POST", gqlPath, gqlBody(ruleGQLListWhere, map[string]any{"n": 10 + i%11})))
		peerGetL = append(peerGetL, reqLine("POST", peerPath, gqlBody(peerRLSGetQuery, map[string]any{"id": id})))
		peerListL = append(peerListL, reqLine("POST", peerPath, gqlBody(peerRLSListQuery, map[string]any{"n": 10 + i%11})))
	}
	nestL := []string{reqLine("POST", gqlPath, gqlBody(ruleGQLNestedOwn, nil))}
	nestWhereL := []string{reqLine("POST", gqlPath, gqlBody(ruleGQLNestedOwnWhere, nil))}
	mixL := []string{reqLine("POST", gqlPath, gqlBody(ruleGQLNested, nil))}
	peerNestL := []string{reqLine("POST", peerPath, gqlBody(peerRLSNestedQuery, nil))}
	d := func(name, cred string) wrkTarget {
		return wrkTarget{name: name, pid: dds.Pid(), url: dds.URL, headers: hdr(cred)}
	}
	ts := []wrkTarget{d(rGetOpen, rs.open), d(rGetRuled, rs.ruled)}
	lines := [][]string{getL, getL}
	if peer != nil {
		ts = append(ts, wrkTarget{name: rGetPeer, pid: peer.Pid(), url: peer.URL, headers: hdr(rs.ruled)})
		lines = append(lines, peerGetL)
	}
	ts = append(ts, d(rListOpen, rs.open), d(rListRuled, rs.ruled), d(rListWhere, rs.open), d(rGQLOpen, rs.open), d(rGQLRuled, rs.ruled), d(rGQLWhere, rs.open), d(rGQLAdmin, apiKey), d(rGQLFielded, rs.fielded))
	lines = append(lines, listL, listL, whereL, gqlL, gqlL, gqlWhereL, gqlL, gqlL)
	if peer != nil {
		ts = append(ts, wrkTarget{name: rGQLPeer, pid: peer.Pid(), url: peer.URL, headers: hdr(rs.ruled)})
		lines = append(lines, peerListL)
	}
	ts = append(ts, d(rNestOpen, rs.open), d(rNestRuled, rs.ruled), d(rNestWhere, rs.open), d(rMixOpen, rs.open), d(rMixRuled, rs.ruled), d(rMixAdmin, apiKey))
	lines = append(lines, nestL, nestL, nestWhereL, mixL, mixL, mixL)
	if peer != nil {
		ts = append(ts, wrkTarget{name: rNestPeer, pid: peer.Pid(), url: peer.URL, headers: hdr(rs.ruled)})
		lines = append(lines, peerNestL)
	}
	ts, err = targets(tmp, "rules", ts, lines...)
	if err != nil {
		peer.Stop()
		return nil, nil, done, err
	}
	return ts, peer, done, nil
}

// rulesVerdicts judges the rules section: each rule against the same
// request without it, the role's schema against the admin key, DDS under
// rules against PostGraphile with RLS; and prints each ruled list and tree
// against its rows asked for by the caller's own filter, and a user's
// nested list against the admin key's.
//
// A ruled list's page is not the unruled one's: that is the table's first
// rows, the densest page there is, read through the primary key; a user's
// page is a tenth of the rows, read through the (ownerId, id) index over
// more heap pages (docs/auth.md, "What a rule costs"). The same rows asked
// for with the caller's own `where ownerId = u1` separate what the rows
// cost from what the rule adds; they are printed, not judged, as the
// target names the request without a rule, and because a caller's filter
// is planned by Postgres' usual choice (the GraphQL list's and the tree's
// baselines then pay plans a rule's page does not).
func rulesVerdicts(ss []wrkSummary, verdict func(bool, string, ...any)) {
	by := map[string]wrkSummary{}
	for _, s := range ss {
		by[s.name] = s
	}
	cpu := func(s, base wrkSummary) float64 { return float64(s.pgCPURq) / float64(max(base.pgCPURq, 1)) }
	for _, p := range [][2]string{{rGetRuled, rGetOpen}, {rListRuled, rListOpen}, {rGQLRuled, rGQLOpen}, {rNestRuled, rNestOpen}} {
		ruled, open := by[p[0]], by[p[1]]
		verdict(ruled.rps/open.rps >= targetRules && ruled.errors == 0, "%-26s = %5.1f%% of %q (target ≥ %.0f%%)", ruled.name, 100*ruled.rps/open.rps, open.name, 100*targetRules)
		if open.pgCPURq > 0 {
			verdict(cpu(ruled, open) <= targetRulesCPU, "%-26s Postgres CPU/request = %.2f× %q's, %s against %s (target ≤ %.1f×)", ruled.name, cpu(ruled, open), open.name, round(ruled.pgCPURq), round(open.pgCPURq), targetRulesCPU)
		}
	}
	for _, p := range [][2]string{{rListRuled, rListWhere}, {rGQLRuled, rGQLWhere}, {rNestRuled, rNestWhere}} {
		ruled, where := by[p[0]], by[p[1]]
		fmt.Printf("  %s: %.1f%% of %q's req/s, Postgres CPU/request %s against %s (%.2f×; not judged: the same rows, the filter written by the caller)\n",
			ruled.name, 100*ruled.rps/where.rps, where.name, round(ruled.pgCPURq), round(where.pgCPURq), cpu(ruled, where))
	}
	fs, admin := by[rGQLFielded], by[rGQLAdmin]
	verdict(fs.rps/admin.rps >= targetRules && fs.errors == 0, "%-26s = %5.1f%% of %q (target ≥ %.0f%%; server CPU/request %s against %s)",
		fs.name, 100*fs.rps/admin.rps, admin.name, 100*targetRules, round(fs.cpuPerRq), round(admin.cpuPerRq))
	// The mixed shape: the ruled page follows about twice the links of the
	// unruled one (another result set), so it is printed, not judged.
	for _, p := range [][2]string{{rMixRuled, rMixOpen}, {rMixRuled, rMixAdmin}} {
		user, base := by[p[0]], by[p[1]]
		fmt.Printf("  %s: %.1f%% of %q's req/s, Postgres CPU/request %s against %s (%.2f×; not judged: the rule hides half the links, another result set)\n",
			user.name, 100*user.rps/base.rps, base.name, round(user.pgCPURq), round(base.pgCPURq), cpu(user, base))
	}
	for _, p := range [][2]string{{rGetRuled, rGetPeer}, {rGQLRuled, rGQLPeer}, {rMixRuled, rNestPeer}} {
		s, peer := by[p[0]], by[p[1]]
		if peer.name == "" {
			continue
		}
		if peer.errors > 0 {
			verdict(false, "%s answered %d errors", peer.name, peer.errors)
			continue
		}
		verdict(s.rps/peer.rps >= targetRulesPeer, "%-26s = %.2f× %q (target ≥ %.0f×; Postgres CPU/request %s against %s, %.2f×)",
			s.name, s.rps/peer.rps, peer.name, targetRulesPeer, round(s.pgCPURq), round(peer.pgCPURq), cpu(s, peer))
	}
}

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/lib/pq"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/schema"
)

// The rules section's peer: PostGraphile 5 over the same tables with the
// owner rules written as Postgres row-level security, as its users write
// them. Each request carries the same user token DDS reads; the peer's
// config (bench/peer/graphile.rls.mjs) verifies it with the same secret
// and sets pgSettings {role: the RLS role, jwt.claims.sub: the user}, so
// PostGraphile runs each request in a transaction under that role with the
// claim set, and the policies compare "ownerId" with it. The link table's
// policy admits a link whose two ends the user can read (RLS has no
// relationship rules: each table repeats its ends' conditions).
const (
	peerRLSGetQuery  = `query($id: UUID!) { itemByRowId(rowId: $id) { rowId name price ownerId createdAt updatedAt } }`
	peerRLSListQuery = `query($n: Int!) { allItems(first: $n, orderBy: [PRIMARY_KEY_ASC], filter: {price: {greaterThanOrEqualTo: 0}}) { nodes { rowId name price } } }`
	// Links in primary-key order: DDS's related order (link creation time,
	// then link id) when, as seeded, their creation times tie.
	peerRLSNestedQuery = `{ allProjects(first: 10, orderBy: [PRIMARY_KEY_ASC]) { nodes { rowId name ownerId
  inProjectsByTargetId(first: 10, orderBy: [PRIMARY_KEY_ASC]) { nodes { itemBySourceId { rowId name price ownerId } } } } } }`
)

// rlsRole is the Postgres role the peer's requests run as, one per tenant
// (roles are the cluster's: runs side by side must not share one).
func rlsRole(tenantID string) string {
	return "ddsbench_rls_" + strings.ReplaceAll(tenantID, "-", "")[:16]
}

// enableRLS creates role with read access to the rules section's tables
// and their owner policies. The superuser DDS connects as bypasses them.
// The returned func drops what it made.
func enableRLS(ctx context.Context, b *bench, role string) (func(), error) {
	pg := b.scope.Schema.PgSchema
	item, project, rel := schema.QualifiedIdent(pg, ruleEntity), schema.QualifiedIdent(pg, ruleProject), schema.QualifiedIdent(pg, ruleRel)
	r := pq.QuoteIdentifier(role)
	drop := func() {
		if _, err := b.db.ExecContext(context.WithoutCancel(ctx), fmt.Sprintf(`DROP OWNED BY %[1]s; DROP ROLE %[1]s`, r)); err != nil {
			step("rules: drop the RLS role: " + err.Error())
		}
	}
	owner := `"ownerId" = current_setting('jwt.claims.sub', true)`
	stmts := []string{
		fmt.Sprintf(`CREATE ROLE %s NOLOGIN`, r),
		fmt.Sprintf(`GRANT USAGE ON SCHEMA %s TO %s`, pq.QuoteIdentifier(pg), r),
		fmt.Sprintf(`GRANT SELECT ON %s, %s, %s TO %s`, item, project, rel, r),
		fmt.Sprintf(`ALTER TABLE %s ENABLE ROW LEVEL SECURITY`, item),
		fmt.Sprintf(`ALTER TABLE %s ENABLE ROW LEVEL SECURITY`, project),
		fmt.Sprintf(`ALTER TABLE %s ENABLE ROW LEVEL SECURITY`, rel),
		fmt.Sprintf(`CREATE POLICY owner_read ON %s FOR SELECT TO %s USING (%s)`, item, r, owner),
		fmt.Sprintf(`CREATE POLICY owner_read ON %s FOR SELECT TO %s USING (%s)`, project, r, owner),
		fmt.Sprintf(`CREATE POLICY ends_read ON %s FOR SELECT TO %s USING (EXISTS (SELECT 1 FROM %s i WHERE i."id" = "source_id") AND EXISTS (SELECT 1 FROM %s p WHERE p."id" = "target_id"))`,
			rel, r, item, project),
	}
	for i, st := range stmts {
		if _, err := b.db.ExecContext(ctx, st); err != nil {
			if i > 0 {
				drop()
			}
			return nil, fmt.Errorf("rules: %s: %w", st, err)
		}
	}
	return drop, nil
}

// tokenAudience reads the audience of a DDS token (its payload, unverified:
// the peer is told what to verify it against).
func tokenAudience(tok string) (string, error) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", fmt.Errorf("rules: not a JWT")
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return "", err
	}
	var c struct {
		Aud any `json:"aud"`
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return "", err
	}
	switch a := c.Aud.(type) {
	case string:
		return a, nil
	case []any:
		if len(a) == 1 {
			if s, ok := a[0].(string); ok {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("rules: the token's audience is %v", c.Aud)
}

// checkRulesPeer asserts PostGraphile with RLS answers what DDS answers by
// the same user token: the same list page, u1's record, null for another
// user's record, and the same nested tree.
func checkRulesPeer(ctx context.Context, gqlURL, peerURL string, rs *ruleSetup) error {
	c := load.Client(1)
	var viaDDS struct {
		Data struct{ Items []map[string]any }
	}
	if _, err := load.Call(ctx, c, "POST", gqlURL, rs.ruled, gqlBody(ruleGQLList, map[string]any{"n": 10}), http.StatusOK, &viaDDS); err != nil {
		return err
	}
	var viaPeer struct {
		Data struct {
			AllItems struct{ Nodes []map[string]any }
		}
		Errors []any
	}
	if _, err := load.Call(ctx, c, "POST", peerURL, rs.ruled, gqlBody(peerRLSListQuery, map[string]any{"n": 10}), http.StatusOK, &viaPeer); err != nil {
		return err
	}
	for _, n := range viaPeer.Data.AllItems.Nodes {
		n["id"] = n["rowId"]
		delete(n, "rowId")
	}
	if len(viaDDS.Data.Items) != 10 || !reflect.DeepEqual(viaDDS.Data.Items, viaPeer.Data.AllItems.Nodes) {
		return fmt.Errorf("rules: PostGraphile with RLS lists other items (%v):\n DDS:          %v\n PostGraphile: %v", viaPeer.Errors, viaDDS.Data.Items, viaPeer.Data.AllItems.Nodes)
	}
	for id, want := range map[string]bool{rs.ids[0]: true, rs.other: false} {
		b, err := load.Call(ctx, c, "POST", peerURL, rs.ruled, gqlBody(peerRLSGetQuery, map[string]any{"id": id}), http.StatusOK, nil)
		if err != nil {
			return err
		}
		var r struct {
			Data struct {
				ItemByRowID *struct{ RowID, OwnerID string } `json:"itemByRowId"`
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return err
		}
		if got := r.Data.ItemByRowID != nil && r.Data.ItemByRowID.OwnerID == "u1"; got != want {
			return fmt.Errorf("rules: PostGraphile with RLS answered %.300s for %s (want it visible: %v)", b, id, want)
		}
	}
	want, err := ruleNestedFromDDS(ctx, gqlURL, rs.ruled, ruleGQLNested)
	if err != nil {
		return err
	}
	b, err := load.Call(ctx, c, "POST", peerURL, rs.ruled, gqlBody(peerRLSNestedQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	got, err := ruleNestedFromPeer(b)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("rules: PostGraphile with RLS nests other records:\n DDS:          %v\n PostGraphile: %.600s", want, b)
	}
	return nil
}

// ruleNestedFromPeer reads PostGraphile's nested answer (link rows between).
func ruleNestedFromPeer(body []byte) (ruleTree, error) {
	type leaf struct {
		RowID, Name, OwnerID string
		Price                float64
	}
	var r struct {
		Data struct {
			AllProjects struct {
				Nodes []struct {
					RowID, Name, OwnerID string
					Links                struct {
						Nodes []struct {
							Item *leaf `json:"itemBySourceId"`
						}
					} `json:"inProjectsByTargetId"`
				}
			}
		}
		Errors []any
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Errors) > 0 {
		return nil, fmt.Errorf("PostGraphile answered %.400s", body)
	}
	t := make(ruleTree, len(r.Data.AllProjects.Nodes))
	for i, p := range r.Data.AllProjects.Nodes {
		t[i].ID, t[i].Name, t[i].OwnerID = p.RowID, p.Name, p.OwnerID
		for _, l := range p.Links.Nodes {
			if l.Item == nil {
				return nil, fmt.Errorf("PostGraphile with RLS shows a link to a hidden item: %.400s", body)
			}
			t[i].Items = append(t[i].Items, ruleLeaf{l.Item.RowID, l.Item.Name, l.Item.OwnerID, l.Item.Price})
		}
	}
	return t, nil
}

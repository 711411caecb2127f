package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"strings"

	"github.com/dds-project/dds/bench/load"
)

// The aggregate section (issue 25): count and average price per stock
// value over every seeded product (1,000 groups over 100,000 rows), through
// REST's aggregate route and GraphQL's productsAggregate groups, against
// the same query written by hand and run by the minimal handler, and
// PostGraphile 5 with @graphile/pg-aggregates (groupedAggregates). The
// target is 90 % of the hand-written SQL's req/s.
//
// The aggcategory section is the same "per group" question over the
// relationship: the 20 categories with their product count and average
// price (each category holds 1,000 products through IN_CATEGORY), as
// GraphQL's productsAggregate relationship field, against the hand-written
// join. PostGraphile's aggregates are over one table's own columns: across
// the IN_CATEGORY link rows it can count (totalCount) but not average the
// products' price, so its line does less work than the others.

const targetAggregate = 0.90

// aggregateBody is the REST request.
var aggregateBody = []byte(`{"groupBy": ["stock"], "aggregates": {"n": {"count": "*"}, "avgPrice": {"avg": "price"}}, "limit": 1000}`)

// aggregateSQL is the hand-written query over table: the groups and their
// JSON, built by Postgres, as a user would write it.
func aggregateSQL(table string) string {
	return fmt.Sprintf(`SELECT json_build_object('groups', coalesce(json_agg(json_build_object('key', json_build_object('stock', g."stock"), 'avgPrice', g."avgPrice", 'n', g."n") ORDER BY g."stock"), '[]'::json))
FROM (SELECT "stock", avg("price")::double precision AS "avgPrice", count(*) AS "n" FROM %s GROUP BY "stock" ORDER BY "stock" LIMIT 1000) g`, table)
}

// checkSameAggregate asserts REST's aggregate and the hand-written query
// return the same groups, then GraphQL's and PostGraphile's.
func checkSameAggregate(ctx context.Context, ddsURL, gqlURL, minURL, peerURL, key string) error {
	c := load.Client(1)
	viaMin, err := load.Call(ctx, c, "GET", minURL+"/p", "", nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	viaREST, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+entity+"/aggregate", key, aggregateBody, http.StatusOK, nil)
	if err != nil {
		return err
	}
	var m, r struct {
		Groups []map[string]any `json:"groups"`
	}
	_ = json.Unmarshal(viaMin, &m)
	_ = json.Unmarshal(viaREST, &r)
	if len(m.Groups) == 0 || !approxEqual(m.Groups, r.Groups) {
		return fmt.Errorf("the aggregates differ:\n hand-written: %.300s\n REST: %.300s", viaMin, viaREST)
	}
	return checkSameGraphQLAggregate(ctx, gqlURL, peerURL, key, r.Groups)
}

// The GraphQL and PostGraphile forms of the aggregate section.
const (
	gqlAggregateQuery  = `{ productsAggregate(groupBy: ["stock"]) { groups(limit: 1000) { key { stock } count avg { price } } } }`
	peerAggregateQuery = `{ allProducts { groupedAggregates(groupBy: [STOCK]) { keys distinctCount { rowId } average { price } } } }`
)

// The aggcategory section's forms.
const (
	gqlCategoryAggQuery  = `{ categories(limit: 20, orderBy: [{field: "name"}]) { name productsAggregate { count avg { price } } } }`
	peerCategoryAggQuery = `{ allCategories(orderBy: [NAME_ASC]) { nodes { name inCategoriesByTargetId { totalCount } } } }`
)

// categoryAggSQL is the hand-written aggcategory query.
func categoryAggSQL(products, categories, links string) string {
	return fmt.Sprintf(`SELECT json_build_object('data', json_build_object('categories', coalesce(json_agg(json_build_object('name', c."name", 'productsAggregate', json_build_object('count', a."n", 'avg', json_build_object('price', a."avg"))) ORDER BY c."name", c."id"), '[]'::json)))
FROM (SELECT * FROM %s ORDER BY "name", "id" LIMIT 20) c CROSS JOIN LATERAL (SELECT count(*) AS "n", avg(p."price")::double precision AS "avg" FROM %s x JOIN %s p ON p."id" = x."source_id" WHERE x."target_id" = c."id") a`, categories, links, products)
}

// checkSameGraphQLAggregate asserts GraphQL's groups are REST's, and that
// PostGraphile (when it runs) answers its aggregate with as many groups.
func checkSameGraphQLAggregate(ctx context.Context, gqlURL, peerURL, key string, rest []map[string]any) error {
	c := load.Client(1)
	b, err := load.Call(ctx, c, "POST", gqlURL, key, gqlBody(gqlAggregateQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	var g struct {
		Data struct {
			ProductsAggregate struct {
				Groups []map[string]any `json:"groups"`
			} `json:"productsAggregate"`
		} `json:"data"`
	}
	_ = json.Unmarshal(b, &g)
	if len(g.Data.ProductsAggregate.Groups) != len(rest) {
		return fmt.Errorf("GraphQL answered %d groups, REST %d: %.300s", len(g.Data.ProductsAggregate.Groups), len(rest), b)
	}
	for i, gr := range g.Data.ProductsAggregate.Groups {
		if fmt.Sprint(gr["key"], gr["count"], gr["avg"].(map[string]any)["price"]) != fmt.Sprint(rest[i]["key"], rest[i]["n"], rest[i]["avgPrice"]) {
			return fmt.Errorf("group %d: GraphQL %v, REST %v", i, gr, rest[i])
		}
	}
	if peerURL == "" {
		return nil
	}
	b, err = load.Call(ctx, c, "POST", peerURL, "", gqlBody(peerAggregateQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	var p struct {
		Data struct {
			AllProducts struct {
				GroupedAggregates []any `json:"groupedAggregates"`
			} `json:"allProducts"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &p); err != nil || len(p.Data.AllProducts.GroupedAggregates) != len(rest) {
		return fmt.Errorf("PostGraphile answered %d groups, REST %d: %.300s", len(p.Data.AllProducts.GroupedAggregates), len(rest), b)
	}
	return nil
}

// checkSameCategoryAgg asserts GraphQL's relationship aggregate answers
// what the hand-written join does, and PostGraphile the same counts.
func checkSameCategoryAgg(ctx context.Context, gqlURL, minURL, peerURL, key string) error {
	c := load.Client(1)
	viaMin, err := load.Call(ctx, c, "GET", minURL+"/p", "", nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	viaGQL, err := load.Call(ctx, c, "POST", gqlURL, key, gqlBody(gqlCategoryAggQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	var m, g any
	_ = json.Unmarshal(viaMin, &m)
	_ = json.Unmarshal(viaGQL, &g)
	if m == nil || !approxEqual(m, g) {
		return fmt.Errorf("the category aggregates differ:\n hand-written: %.300s\n GraphQL: %.300s", viaMin, viaGQL)
	}
	if peerURL == "" {
		return nil
	}
	viaPeer, err := load.Call(ctx, c, "POST", peerURL, "", gqlBody(peerCategoryAggQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	if err := peerResult(viaPeer, "allCategories"); err != nil {
		return err
	}
	if !strings.Contains(string(viaPeer), `"totalCount":1000`) {
		return fmt.Errorf("PostGraphile's category counts: %.300s", viaPeer)
	}
	return nil
}

// approxEqual is reflect.DeepEqual for decoded JSON but for numbers, which
// must agree to 1e-9 of their size: an average of floating-point prices
// depends in its last bits on the order Postgres adds them, which a plan
// (another index, a parallel scan) may change between two statements that
// compute the same aggregate.
func approxEqual(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Abs(x-y) <= 1e-9*math.Max(1, math.Max(math.Abs(x), math.Abs(y)))
	case []map[string]any: // as the sections decode groups
		y, ok := b.([]map[string]any)
		return ok && approxEqual(anys(x), anys(y))
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !approxEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !approxEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}

// anys is ms as a []any, for approxEqual.
func anys(ms []map[string]any) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = m
	}
	return out
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/dds-project/dds/bench/load"
)

// The aggregate section (issue 25): count and average price per stock
// value over every seeded product (1,000 groups over 100,000 rows), through
// REST's aggregate route, against the same query written by hand and run
// by the minimal handler. The target is 90 % of the hand-written SQL's
// req/s. PostGraphile is not measured here: its aggregates need
// @graphile/pg-aggregates, which bench/peer does not install yet.

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
// return the same groups.
func checkSameAggregate(ctx context.Context, ddsURL, minURL, key string) error {
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
	if len(m.Groups) == 0 || !reflect.DeepEqual(m.Groups, r.Groups) {
		return fmt.Errorf("the aggregates differ:\n hand-written: %.300s\n REST: %.300s", viaMin, viaREST)
	}
	return nil
}

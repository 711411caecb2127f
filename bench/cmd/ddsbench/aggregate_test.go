package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dds-project/dds/bench/load"
)

// TestCategoryAggDoesTheHandWrittenWork guards the aggcategory section's
// fairness the way the plan shows it: the one statement DDS's GraphQL runs
// for gqlCategoryAggQuery answers what the hand-written join answers, and
// Postgres executes it with the same scans (each relation read through
// the same index, as many times, for as many rows) and the same buffers.
// What is left between the two is how each builds its JSON (DDS's
// row_to_json of the response's members, the hand-written
// json_build_object), a few microseconds of the request.
func TestCategoryAggDoesTheHandWrittenWork(t *testing.T) {
	f := newFixture(t, nestedLinked)
	ctx := context.Background()
	if err := f.b.seedNested(ctx, f.ids); err != nil {
		t.Fatal(err)
	}
	hand := categoryAggSQL(f.b.scope.Table(entity), f.b.scope.Table("Category"), f.b.scope.Table(relationship))
	m, err := load.MinimalServer(f.b.db.DB, hand, func(*http.Request) []any { return []any{} })
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	gqlPath := "/api/v1/dynamic-gql/" + f.b.scope.TenantID
	if err := checkSameCategoryAgg(ctx, f.app.URL+gqlPath, m.URL, "", f.key); err != nil {
		t.Fatal(err)
	}

	o := observe(t, f)
	if _, err := load.Call(ctx, load.Client(1), "POST", o.url+gqlPath, f.key, gqlBody(gqlCategoryAggQuery, nil), http.StatusOK, nil); err != nil {
		t.Fatal(err)
	}
	ran := o.take()
	if len(ran) != 1 {
		t.Fatalf("DDS ran %d statements, want 1", len(ran))
	}
	dds := ran[0]
	scans := func(sql string, args []any) ([]string, int64) {
		t.Helper()
		var out []byte
		if err := f.b.db.QueryRowContext(ctx, "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
			t.Fatalf("%v\n%s", err, sql)
		}
		var plan []struct{ Plan explainNode }
		if err := json.Unmarshal(out, &plan); err != nil || len(plan) != 1 {
			t.Fatalf("%v: %s", err, out)
		}
		var s []string
		plan[0].Plan.scans(&s)
		slices.Sort(s)
		return s, plan[0].Plan.SharedHit + plan[0].Plan.SharedRead
	}
	handScans, handBlocks := scans(hand, nil)
	ddsScans, ddsBlocks := scans(dds.SQL, dds.Args)
	if len(handScans) == 0 || !slices.Equal(handScans, ddsScans) || handBlocks != ddsBlocks {
		t.Fatalf("DDS's statement does other work than the hand-written one:\n hand-written: %d buffers, %s\n DDS:          %d buffers, %s\n%s",
			handBlocks, strings.Join(handScans, "; "), ddsBlocks, strings.Join(ddsScans, "; "), dds.SQL)
	}
	t.Logf("both: %d buffers, %s", ddsBlocks, strings.Join(ddsScans, "; "))
}

// explainNode is a node of EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON).
type explainNode struct {
	NodeType   string        `json:"Node Type"`
	Relation   string        `json:"Relation Name"`
	Index      string        `json:"Index Name"`
	Rows       float64       `json:"Actual Rows"`
	Loops      float64       `json:"Actual Loops"`
	SharedHit  int64         `json:"Shared Hit Blocks"`
	SharedRead int64         `json:"Shared Read Blocks"`
	Plans      []explainNode `json:"Plans"`
}

// scans appends each node of n's tree that reads a relation or an index: its type,
// relation, index, loops and rows.
func (n *explainNode) scans(out *[]string) {
	if n.Relation != "" || n.Index != "" {
		*out = append(*out, fmt.Sprintf("%s on %s using %q: %g loops × %g rows", n.NodeType, n.Relation, n.Index, n.Loops, n.Rows))
	}
	for i := range n.Plans {
		n.Plans[i].scans(out)
	}
}

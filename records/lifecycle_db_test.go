package records_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// The jobs' bulk writes and the batches respect soft delete: a delete by
// filter or by ids only marks live records, an update by filter or by
// ids skips deleted ones (a deleted id fails its batch item as not
// found), counts leave them out; history records the jobs' writes with the
// job's actor. The kept statement of a list never serves a scope showing
// deleted records, nor the reverse.
func TestBulkWritesAndBatchesRespectSoftDelete(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "soft", Entities: []schema.Entity{{Name: "Doc", SoftDelete: true, History: true, Fields: []schema.Field{
		{Name: "title", Type: schema.String},
		{Name: "n", Type: schema.Integer},
	}}}})
	p := records.SystemPrincipal(tenant)
	p.KeyID = "job-key"
	s := records.NewStore(d, schemas, nil)
	sc, err := s.Scope(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, title := range []string{"a", "b", "c", "d"} {
		out, err := s.Create(ctx, sc, "Doc", map[string]any{"title": title, "n": json.Number("1")})
		if err != nil {
			t.Fatal(err)
		}
		var r struct{ ID string }
		_ = json.Unmarshal(out, &r)
		ids[title] = r.ID
	}
	tx := d.MustBeginTx(ctx, nil)
	w, err := s.DeleteWhere(ctx, tx, sc, "Doc", query.Cond{Field: "title", Op: query.In, Value: []any{"a", "b"}}, true)
	if err != nil || w.N != 2 {
		t.Fatalf("delete job: %+v %v", w, err)
	}
	// A second delete of the same filter finds nothing left to delete.
	if w, err = s.DeleteWhere(ctx, tx, sc, "Doc", query.Cond{Field: "title", Op: query.In, Value: []any{"a", "b"}}, true); err != nil || w.N != 0 {
		t.Fatalf("delete job again: %+v %v", w, err)
	}
	if w, err = s.UpdateWhere(ctx, tx, sc, "Doc", nil, map[string]any{"n": json.Number("2")}, true); err != nil || w.N != 2 {
		t.Fatalf("update job: %+v %v (want the 2 live records)", w, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountWhere(ctx, sc, "Doc", nil); err != nil || n != 2 {
		t.Fatalf("count: %d %v", n, err)
	}
	// Still there, marked, and their versions carry the job's key.
	wd, err := sc.WithDeleted("Doc")
	if err != nil {
		t.Fatal(err)
	}
	all, err := s.Query(ctx, wd, query.List{Entity: "Doc", IncludeCount: true})
	if err != nil || !strings.Contains(string(all), `"count" : 4`) && !strings.Contains(string(all), `"count":4`) {
		t.Fatalf("withDeleted list: %s %v", all, err)
	}
	h, err := s.History(ctx, sc, "Doc", ids["a"], 0, "")
	if err != nil || !strings.Contains(string(h), `"op" : "delete"`) && !strings.Contains(string(h), `"op":"delete"`) || !strings.Contains(string(h), "job-key") {
		t.Fatalf("history of a record deleted by a job: %s %v", h, err)
	}

	// Batches: a deleted id fails its item; the live ones are written.
	res, err := s.BatchUpdate(ctx, sc, "Doc", []records.BatchUpdateItem{{ID: ids["a"], Data: map[string]any{"n": json.Number("9")}, Raw: map[string]any{"id": ids["a"]}}})
	if err != nil || res.FailureCount != 1 || res.Failed[0].Error.Code != apperr.NotFound {
		t.Fatalf("batch update of a deleted record: %+v %v", res, err)
	}
	if res, err = s.BatchDelete(ctx, sc, "Doc", []any{ids["c"]}); err != nil || res.SuccessCount != 1 {
		t.Fatalf("batch delete: %+v %v", res, err)
	}
	if _, err := s.Get(ctx, sc, "Doc", ids["c"], query.Selection{}); apperr.As(err).Code != apperr.NotFound {
		t.Fatalf("get of a batch-deleted record: %v", err)
	}
	if _, err := s.Get(ctx, wd, "Doc", ids["c"], query.Selection{}); err != nil {
		t.Fatalf("get withDeleted of a batch-deleted record: %v", err)
	}

	// One kept list statement, two scopes: each is served its own rows.
	var k records.Kept
	count := func(sc *records.Scope) int {
		var n int
		err := s.ListKeptFunc(ctx, sc, &k, "Doc", func() (query.List, error) { return query.List{Entity: "Doc"}, nil }, func(raw []byte) error {
			var l struct{ Items []any }
			err := json.Unmarshal(raw, &l)
			n = len(l.Items)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i, want := range []int{1, 4, 1, 4} {
		sc := []*records.Scope{sc, wd}[i%2]
		if got := count(sc); got != want {
			t.Fatalf("kept list, step %d: %d records, want %d", i, got, want)
		}
	}
}

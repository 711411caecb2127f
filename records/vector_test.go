package records_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// A search's statement text is kept only for the shape it was built for:
// the same fields with an Output (other keys) get their own statement, not
// the one kept for the plain selection.
func TestVectorSearchKeepsTextPerOutput(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "vs", Entities: []schema.Entity{{Name: "Doc", Fields: []schema.Field{
		{Name: "title", Type: schema.String},
		{Name: "v", Type: schema.Vector, VectorDimensions: 2},
	}}}})
	s := records.NewStore(d, schemas, nil)
	sc, err := s.Scope(ctx, records.SystemPrincipal(tenant))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Create(ctx, sc, "Doc", map[string]any{"title": "a", "v": []any{json.Number("1"), json.Number("0")}}); err != nil {
		t.Fatal(err)
	}
	search := func(sel query.Selection) map[string]any {
		t.Helper()
		raw, err := s.VectorSearch(ctx, sc, query.VectorSearch{Entity: "Doc", Field: "v", Vector: []any{1.0, 0.0}, TopK: 1, Select: sel})
		if err != nil {
			t.Fatal(err)
		}
		var hits []struct{ Data map[string]any }
		if err := json.Unmarshal(raw, &hits); err != nil || len(hits) != 1 {
			t.Fatalf("hits %s: %v", raw, err)
		}
		return hits[0].Data
	}
	if got := search(query.Selection{Fields: []string{"title"}}); got["title"] != "a" {
		t.Fatalf("plain selection: %v", got)
	}
	got := search(query.Selection{Fields: []string{"title"}, Output: []query.Member{{Key: "name", Field: "title"}}})
	if got["name"] != "a" || len(got) != 1 {
		t.Fatalf("selection with output: %v, want only name", got)
	}
}

package e2e

import (
	"net/http"
	"testing"
)

// Bad upsert and nested-create input through the binary (issue 25, "Done
// when"): an upsert on a field that is not unique, a nested create naming
// a relationship the entity does not have, a connect of an id that does
// not exist, a nested create whose related record is invalid — each a 400
// naming the path, and nothing written (no record of either entity).
func TestBadUpsertAndNestedWritesThroughTheBinary(t *testing.T) {
	t.Parallel()
	d := local
	_, key := d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, shop())
	cat := d.create(t, key, "Category", map[string]any{"title": "desks"})
	products, categories := d.total(t, key, "Product"), d.total(t, key, "Category")
	missing := "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	for _, tc := range []struct {
		name, path string
		body       any
		field      string
	}{
		{"upsert on a non-unique field", "/api/v1/dynamic/Product/upsert", map[string]any{"onConflict": "name", "items": []any{map[string]any{"name": "x"}}}, "onConflict"},
		{"nested create naming an unknown relationship", "/api/v1/dynamic/Product", map[string]any{"name": "x", "shelves": map[string]any{
			"connect": []any{map[string]any{"id": cat}}}}, "shelves"},
		{"connect of a missing id", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{
			"create": []any{map[string]any{"title": "new"}}, "connect": []any{map[string]any{"id": cat}, map[string]any{"id": missing}}}}, "categories.connect[1].id"},
		{"nested create missing a required field", "/api/v1/dynamic/Product", map[string]any{"name": "x", "categories": map[string]any{
			"create": []any{map[string]any{"title": "ok"}, map[string]any{}}}}, "categories.create[1].title"},
	} {
		r := d.send(t, "POST", tc.path, key, tc.body)
		if r.Status != http.StatusBadRequest || errorField(t, r.Body) != tc.field {
			t.Errorf("%s: status %d, want 400 naming %s: %s", tc.name, r.Status, tc.field, r.Body)
		}
	}
	if p, c := d.total(t, key, "Product"), d.total(t, key, "Category"); p != products || c != categories {
		t.Errorf("bad writes wrote: products %d → %d, categories %d → %d", products, p, categories, c)
	}
}

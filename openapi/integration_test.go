package openapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/internal/testenv"
)

const noteSchema = `{"name": "notes", "entities": [
  {"name": "Note", "fields": [
    {"name": "title", "type": "STRING", "required": true, "maxLength": 80},
    {"name": "embedding", "type": "VECTOR", "vectorDimensions": 3}]},
  {"name": "Folder", "fields": [{"name": "name", "type": "STRING"}]}],
 "relationships": [{"name": "IN_FOLDER", "from": "Note", "to": "Folder"}]}`

func TestOpenAPIDownload(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	created := app.Schema(t, key, noteSchema)
	id, _ := created["id"].(string)
	if id == "" {
		t.Fatalf("schema create returned no id: %v", created)
	}

	res := app.Must(t, http.StatusOK, "GET", "/api/v1/schemas/"+id+"/openapi.json", key, nil)
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	doc, err := openapi3.NewLoader().LoadFromData(res.Body)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the served document is not valid OpenAPI: %v", err)
	}
	if doc.Info.Title != "DDS notes" || doc.Info.Extensions["x-dds-schema-id"] != id {
		t.Errorf("info = %+v", doc.Info)
	}
	for _, p := range []string{"/api/v1/dynamic/Note", "/api/v1/dynamic/Note/{id}", "/api/v1/dynamic/Note/query",
		"/api/v1/dynamic/Note/batch", "/api/v1/dynamic/Note/vector-search", "/api/v1/dynamic/Note/{id}/relationships/IN_FOLDER"} {
		if doc.Paths.Value(p) == nil {
			t.Errorf("path %s missing", p)
		}
	}
	title := doc.Components.Schemas["Note.Input"].Value.Properties["title"].Value
	if title.MaxLength == nil || *title.MaxLength != 80 {
		t.Errorf("Note.Input.title = %+v", title)
	}

	// The document follows schema changes (docs/schemas.md, Evolution): a new version adds a field.
	evolved := `{"name": "notes", "entities": [
	  {"name": "Note", "fields": [
	    {"name": "title", "type": "STRING", "required": true, "maxLength": 80},
	    {"name": "embedding", "type": "VECTOR", "vectorDimensions": 3},
	    {"name": "pinned", "type": "BOOLEAN"}]},
	  {"name": "Folder", "fields": [{"name": "name", "type": "STRING"}]}],
	 "relationships": [{"name": "IN_FOLDER", "from": "Note", "to": "Folder"}]}`
	app.Must(t, http.StatusOK, "PUT", "/api/v1/schemas/"+id, key, evolved)
	res = app.Must(t, http.StatusOK, "GET", "/api/v1/schemas/"+id+"/openapi.json", key, nil)
	doc, err = openapi3.NewLoader().LoadFromData(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Components.Schemas["Note"].Value.Properties["pinned"] == nil {
		t.Error("the document does not show the field added by the new version")
	}

	// Another tenant cannot read it, and neither can a caller without a key.
	_, otherKey := app.Tenant(t)
	if r := app.Do(t, "GET", "/api/v1/schemas/"+id+"/openapi.json", otherKey, nil); r.Status != http.StatusNotFound {
		t.Errorf("another tenant: status %d, want 404: %s", r.Status, r.Body)
	}
	if r := app.Do(t, "GET", "/api/v1/schemas/"+id+"/openapi.json", "", nil); r.Status != http.StatusUnauthorized {
		t.Errorf("no key: status %d, want 401", r.Status)
	}
	// A key without schema:*:read is refused.
	k := app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "reader", "scopes": []string{"entity:*:read"}}).JSON(t)
	if r := app.Do(t, "GET", "/api/v1/schemas/"+id+"/openapi.json", k["key"].(string), nil); r.Status != http.StatusForbidden {
		t.Errorf("key without schema scope: status %d, want 403: %s", r.Status, r.Body)
	}
	if r := app.Do(t, "GET", "/api/v1/schemas/00000000-0000-7000-8000-000000000000/openapi.json", key, nil); r.Status != http.StatusNotFound {
		t.Errorf("unknown schema: status %d, want 404", r.Status)
	}
}

// TestServedResponsesConform checks real REST responses against the
// document the same server serves, so generated clients agree with it.
func TestServedResponsesConform(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	id := app.Schema(t, key, noteSchema)["id"].(string)
	doc, err := openapi3.NewLoader().LoadFromData(app.Must(t, http.StatusOK, "GET", "/api/v1/schemas/"+id+"/openapi.json", key, nil).Body)
	if err != nil {
		t.Fatal(err)
	}
	conform := func(component string, res *testenv.Response) {
		t.Helper()
		s := doc.Components.Schemas[component]
		if s == nil {
			t.Fatalf("component %s missing", component)
		}
		var v any
		if err := json.Unmarshal(res.Body, &v); err != nil {
			t.Fatalf("%s: response is not JSON: %s", component, res.Body)
		}
		if err := s.Value.VisitJSON(v, openapi3.EnableFormatValidation()); err != nil {
			t.Errorf("response does not match %s: %v\n%s", component, err, res.Body)
		}
	}

	note := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "a", "embedding": []float64{1, 0, 0}})
	conform("Note", note)
	noteID := note.JSON(t)["id"].(string)
	conform("Note", app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Note/"+noteID, key, nil))
	conform("Note.List", app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Note?includeCount=true", key, nil))
	conform("Note.List", app.Must(t, http.StatusOK, "POST", "/api/v1/dynamic/Note/query", key,
		map[string]any{"where": map[string]any{"title": map[string]any{"$startsWith": "a"}}, "includeCount": true}))
	conform("Note.BatchResult", app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note/batch", key,
		map[string]any{"items": []any{map[string]any{"title": "b"}, map[string]any{"title": "c", "embedding": []float64{0, 1, 0}}}}))
	conform("Note.BatchResult", app.Must(t, http.StatusBadRequest, "POST", "/api/v1/dynamic/Note/batch", key,
		map[string]any{"items": []any{map[string]any{"title": "ok"}, map[string]any{}}}))
	conform("dds.Error", app.Must(t, http.StatusBadRequest, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": 5}))
	conform("dds.Error", app.Must(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Note/"+id, key, nil))

	matches := app.Must(t, http.StatusOK, "POST", "/api/v1/dynamic/Note/vector-search", key,
		map[string]any{"field": "embedding", "vector": []float64{1, 0, 0}, "topK": 2})
	var list []json.RawMessage
	if err := json.Unmarshal(matches.Body, &list); err != nil || len(list) == 0 {
		t.Fatalf("vector search: %s", matches.Body)
	}
	for _, m := range list {
		conform("Note.VectorMatch", &testenv.Response{Body: m})
	}

	folder := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Folder", key, map[string]any{"name": "inbox"}).JSON(t)["id"].(string)
	edge := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note/"+noteID+"/relationships/IN_FOLDER", key, map[string]any{"targetId": folder})
	conform("IN_FOLDER.Edge", edge)
	conform("IN_FOLDER.ListOfNote", app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Note/"+noteID+"/relationships/IN_FOLDER", key, nil))
	conform("IN_FOLDER.ListOfFolder", app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Folder/"+folder+"/relationships/IN_FOLDER", key, nil))
	conform("IN_FOLDER.Edges", app.Must(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Note/"+noteID+"/relationships/IN_FOLDER/"+folder, key,
		map[string]any{"properties": map[string]any{}}))
	edgeID := edge.JSON(t)["id"].(string)
	conform("IN_FOLDER.Edge", app.Must(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Folder/"+folder+"/relationships/IN_FOLDER/by-id/"+edgeID, key,
		map[string]any{"properties": map[string]any{}}))
}

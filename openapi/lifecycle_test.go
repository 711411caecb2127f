package openapi_test

import (
	"testing"

	"github.com/dds-project/dds/openapi"
	"github.com/dds-project/dds/schema"
)

// An entity with softDelete and history documents deletedAt, withDeleted
// and the restore and history routes, and the document stays valid;
// one without either option gets none of them.
func TestLifecycleOptionsDocumented(t *testing.T) {
	info := schema.Info{ID: "0190f5d2-0000-7000-8000-000000000001", Name: "lib", Version: 1, Definition: loadDef(t, `{"name": "lib", "entities": [
	  {"name": "Author", "softDelete": true, "history": true, "fields": [{"name": "name", "type": "STRING"}]},
	  {"name": "Plain", "fields": [{"name": "name", "type": "STRING"}]}]}`)}
	b, err := openapi.New("http://localhost:8080").OpenAPI(info)
	if err != nil {
		t.Fatal(err)
	}
	doc := load(t, b)
	if doc.Paths.Find("/api/v1/dynamic/Author/{id}/restore") == nil || doc.Paths.Find("/api/v1/dynamic/Author/{id}/history") == nil {
		t.Fatal("restore or history route missing")
	}
	if doc.Paths.Find("/api/v1/dynamic/Plain/{id}/restore") != nil || doc.Paths.Find("/api/v1/dynamic/Plain/{id}/history") != nil {
		t.Fatal("an entity without the options documents their routes")
	}
	if doc.Components.Schemas["Author"].Value.Properties["deletedAt"] == nil || doc.Components.Schemas["Plain"].Value.Properties["deletedAt"] != nil {
		t.Fatal("deletedAt must be documented on Author only")
	}
	if doc.Paths.Find("/api/v1/dynamic/Author").Get.Parameters.GetByInAndName("query", "withDeleted") == nil ||
		doc.Paths.Find("/api/v1/dynamic/Plain").Get.Parameters.GetByInAndName("query", "withDeleted") != nil {
		t.Fatal("withDeleted must be a parameter of Author's list only")
	}
}

package openapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/openapi"
)

// TestEventTypesGolden: every event type is listed with a payload schema
// generated from the schema (golden), and the schemas accept a body as
// receivers get it and refuse one that breaks the record's schema.
func TestEventTypesGolden(t *testing.T) {
	info := shopInfo(t)
	types := openapi.EventTypes(&info.Definition)
	got, err := json.MarshalIndent(types, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "shop.eventtypes.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./openapi -run TestEventTypesGolden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("event types differ from %s; if the change is intended, run with -update", path)
	}
	byType := map[string]*openapi3.Schema{}
	for _, et := range types {
		byType[et.Type] = et.Schema
	}
	if len(byType) != 8 { // six record event types, two operational
		t.Fatalf("types %v", byType)
	}
	check := func(typ, body string, ok bool) {
		t.Helper()
		var v any
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatal(err)
		}
		err := byType[typ].VisitJSON(v, openapi3.MultiErrors())
		if (err == nil) != ok {
			t.Errorf("%s %s: valid=%v, want %v (%v)", typ, body, err == nil, ok, err)
		}
	}
	const env = `{"id":"0190f5d2-0000-7000-8000-00000000000a","type":"%s","timestamp":"2026-11-22T00:31:05.123456Z","tenant":{"id":"0190f5d2-0000-7000-8000-00000000000b","name":"Acme"},"data":%s}`
	rec := `{"entityName":"Product","entityId":"0190f5d2-0000-7000-8000-00000000000c","record":{"id":"0190f5d2-0000-7000-8000-00000000000c","createdAt":"2026-11-22T00:31:05Z","updatedAt":"2026-11-22T00:31:05Z","name":"Lamp","price":12.5}}`
	check("entity.created", fmt.Sprintf(env, "entity.created", rec), true)
	check("entity.created", fmt.Sprintf(env, "entity.updated", rec), false) // wrong type
	check("entity.created", fmt.Sprintf(env, "entity.created", `{"entityName":"Product","entityId":"0190f5d2-0000-7000-8000-00000000000c","record":{"id":"x","price":"cheap"}}`), false)
	check("entity.created", fmt.Sprintf(env, "entity.created", `{"entityName":"Nope","entityId":"0190f5d2-0000-7000-8000-00000000000c","record":{}}`), false)
	edge := `{"relationshipName":"IN_CATEGORY","edgeId":"0190f5d2-0000-7000-8000-00000000000d","sourceEntity":"Product","sourceId":"0190f5d2-0000-7000-8000-00000000000c","targetEntity":"Category","targetId":"0190f5d2-0000-7000-8000-00000000000e","properties":{"position":2}}`
	check("relationship.created", fmt.Sprintf(env, "relationship.created", edge), true)
	check("relationship.created", fmt.Sprintf(env, "relationship.created", `{"relationshipName":"IN_CATEGORY"}`), false)
}

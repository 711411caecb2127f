package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/dds-project/dds/bench/load"
)

// addToSchema adds entities and relationships to the bench schema's active
// version. It starts from the version the server has, not from schemaDef,
// so sections that each add their own entities (rules, history) can run in
// one invocation: a PUT from the base definition would drop what an earlier
// section added (a destructive plan, refused with 409).
func addToSchema(ctx context.Context, ddsURL, key string, entities, relationships []any) error {
	c := load.Client(1)
	var list struct {
		Schemas []struct {
			ID, Name string
			Active   bool
		}
	}
	if _, err := load.Call(ctx, c, "GET", ddsURL+"/api/v1/schemas", key, nil, http.StatusOK, &list); err != nil {
		return err
	}
	id := ""
	for _, s := range list.Schemas {
		if s.Name == schemaDef["name"] && (id == "" || s.Active) {
			id = s.ID
		}
	}
	if id == "" {
		return fmt.Errorf("the bench schema is missing")
	}
	var cur struct {
		Name          string `json:"name"`
		Entities      []any  `json:"entities"`
		Relationships []any  `json:"relationships"`
	}
	if _, err := load.Call(ctx, c, "GET", ddsURL+"/api/v1/schemas/"+id, key, nil, http.StatusOK, &cur); err != nil {
		return err
	}
	def := map[string]any{
		"name":          cur.Name,
		"entities":      append(cur.Entities, entities...),
		"relationships": append(cur.Relationships, relationships...),
	}
	_, err := load.Call(ctx, c, "PUT", ddsURL+"/api/v1/schemas/"+id, key, def, http.StatusOK, nil)
	return err
}

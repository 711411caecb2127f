package main

import (
	"context"
	"fmt"
	"net/http"

	"github.com/dds-project/dds/bench/load"
)

// The history section: a create on an entity with history: true against
// the same create on the same entity without it, both through DDS's REST
// route (target ≥ targetHistory of the plain create's req/s). The history
// entity is added by evolving the schema when the section starts, as a
// user switches history on: only that section's tables carry the trigger.

// historyEntity is entity again, with history: true.
const historyEntity = "HProduct"

// targetHistory is a create with history against one without (issue 26).
const targetHistory = 0.80

// enableHistory adds historyEntity to the bench schema and checks that a
// create through DDS records its version.
func enableHistory(ctx context.Context, ddsURL, key string) error {
	c := load.Client(1)
	plain := schemaDef["entities"].([]any)[0].(map[string]any)
	if err := addToSchema(ctx, ddsURL, key, []any{map[string]any{"name": historyEntity, "history": true, "fields": plain["fields"]}}, nil); err != nil {
		return fmt.Errorf("history: add %s: %w", historyEntity, err)
	}
	var rec struct{ ID string }
	if _, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+historyEntity, key, randomProduct(), http.StatusCreated, &rec); err != nil {
		return err
	}
	var h struct {
		Items []struct{ Op string }
	}
	if _, err := load.Call(ctx, c, "GET", ddsURL+"/api/v1/dynamic/"+historyEntity+"/"+rec.ID+"/history", key, nil, http.StatusOK, &h); err != nil {
		return err
	}
	if len(h.Items) != 1 || h.Items[0].Op != "create" {
		return fmt.Errorf("history: a create recorded %+v, want one create", h.Items)
	}
	return nil
}

package rest

import (
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/records"
)

// writeRoutes registers the upsert route (docs/rest.md, Upsert). Nested
// writes ride on the create and batch routes.
func (h *Handler) writeRoutes(r *api.Router) {
	r.Handle("POST /api/v1/dynamic/{entity}/upsert", api.Func(h.upsert))
}

// upsert: POST /api/v1/dynamic/{Entity}/upsert {"onConflict", "update"?,
// "items"}. An upsert may create and may update, so it needs both scopes.
// Success is 200 with the batch result and createdCount/updatedCount; a
// rejected upsert is 400 with the result listing every failed item;
// nothing is written.
func (h *Handler) upsert(r *http.Request) (int, any, error) {
	sc, entity, err := h.scope(r, "create")
	if err != nil {
		return 0, nil, err
	}
	if err := api.Principal(r).Require("entity", entity, "update"); err != nil {
		return 0, nil, err
	}
	var body struct {
		OnConflict *string   `json:"onConflict"`
		Update     *[]string `json:"update"`
		Items      *[]any    `json:"items"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.OnConflict == nil {
		return 0, nil, apperr.Field("onConflict", "is required (the name of a unique field of %s)", entity)
	}
	if body.Items == nil {
		return 0, nil, apperr.Field("items", "is required (an array)")
	}
	u := records.Upsert{OnConflict: *body.OnConflict, Items: *body.Items}
	if body.Update != nil {
		u.Update = *body.Update
		if u.Update == nil {
			u.Update = []string{}
		}
	}
	if len(u.Items) > records.MaxBatch {
		return 0, nil, apperr.Field("items", "holds %d items; a batch holds at most %d", len(u.Items), records.MaxBatch)
	}
	res, err := h.store.Upsert(r.Context(), sc, entity, u)
	if err != nil {
		return 0, nil, err
	}
	if res.Rejected() {
		return http.StatusBadRequest, res, nil
	}
	return http.StatusOK, res, nil
}

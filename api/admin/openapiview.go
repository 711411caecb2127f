package admin

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/openapi"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// A schema per role (docs/auth.md, "A schema per role"): the OpenAPI
// document a credential is given shows only the operations its scopes
// allow and the fields its roles' field lists let it read and write.

// viewFor is what p may see of def: its scopes' operations and, when it
// has roles, their field lists compiled against def the way records
// enforces them (query.Compiler.WithRules), so the document and the
// enforcement agree. nil: everything (a principal without roles that
// holds *:*:*).
func (h *Handler) viewFor(ctx context.Context, p *auth.Principal, def *schema.Definition) (*openapi.View, error) {
	if p.RoleSet == "" || h.id.Roles == nil {
		if hasAdminScope(p) {
			return nil, nil
		}
		return &openapi.View{Allows: p.Scopes.Allows}, nil
	}
	rr, _, err := h.id.Roles.RoleRules(ctx, p.TenantID, def, p.Roles)
	if err != nil {
		return nil, err
	}
	c := query.New(def, "").WithRules(rr)
	return &openapi.View{Allows: p.Scopes.Allows, Readable: c.Readable, Writable: c.Writable}, nil
}

func hasAdminScope(p *auth.Principal) bool {
	for _, s := range p.Scopes {
		if s.Kind == "*" && s.Name == "*" && s.Op == "*" {
			return true
		}
	}
	return false
}

// activeOpenAPI serves GET /api/v1/openapi.json: the document of the
// tenant's active schema (the one the dynamic API serves) as the caller
// may see it. Like schema.graphql it needs no schema scope: it describes
// only what the credential can already call.
func (h *Handler) activeOpenAPI(r *http.Request) (int, any, error) {
	p := api.Principal(r)
	a, err := h.schemas.ActiveFor(r.Context(), p.TenantID)
	if err != nil {
		return 0, nil, err
	}
	info := schema.Info{ID: a.ID, Name: a.Name, Version: a.Version, Active: true, Definition: *a.Def}
	v, err := h.viewFor(r.Context(), p, a.Def)
	if err != nil {
		return 0, nil, err
	}
	doc, err := h.openapi.OpenAPIFor(info, v)
	return http.StatusOK, json.RawMessage(doc), err
}

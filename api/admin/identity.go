package admin

import (
	"net/http"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/identity"
	"github.com/dds-project/dds/roles"
)

// Identity is what the end-user routes need: the role store and the
// identity providers (either nil leaves its routes unregistered).
type Identity struct {
	Roles     *roles.Store
	Providers *identity.Service
}

func (h *Handler) identityRoutes(r *api.Router) {
	if h.id.Roles != nil {
		r.Handle("GET /api/v1/roles", api.Func(h.listRoles))
		r.Handle("GET /api/v1/roles/{name}", api.Func(h.getRole))
		r.Handle("PUT /api/v1/roles/{name}", api.Func(h.putRole))
		r.Handle("DELETE /api/v1/roles/{name}", api.Func(h.deleteRole))
	}
	if h.id.Providers != nil {
		r.Handle("POST /api/v1/auth/providers", api.Func(h.createProvider))
		r.Handle("GET /api/v1/auth/providers", api.Func(h.listProviders))
		r.Handle("DELETE /api/v1/auth/providers/{id}", api.Func(h.deleteProvider))
	}
}

// userToken mints a token for one of the app's users (POST
// /api/v1/auth/token with a userId): the caller needs user:*:create, and
// every role must exist and lie within the caller's scopes.
func (h *Handler) userToken(r *http.Request, p *auth.Principal, userID *string, roleNames []string, claims map[string]any, expiresIn *int) (int, any, error) {
	if err := p.Require("user", "*", "create"); err != nil {
		return 0, nil, err
	}
	req := auth.UserTokenRequest{Roles: roleNames, Claims: claims, TTL: auth.DefaultTokenTTL}
	if userID != nil {
		req.UserID = *userID
	}
	if expiresIn != nil {
		req.TTL = time.Duration(*expiresIn) * time.Second
	}
	tok, exp, err := h.authn.MintUser(r.Context(), p, req)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"accessToken": tok, "tokenType": "Bearer", "expiresAt": exp.UTC(),
		"userId": req.UserID, "roles": roleNames}, nil
}

func (h *Handler) listRoles(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "role", "read")
	if err != nil {
		return 0, nil, err
	}
	list, err := h.id.Roles.List(r.Context(), p.TenantID)
	return http.StatusOK, map[string]any{"roles": list}, err
}

func (h *Handler) getRole(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "role", "read")
	if err != nil {
		return 0, nil, err
	}
	role, err := h.id.Roles.Get(r.Context(), p.TenantID, r.PathValue("name"))
	return http.StatusOK, role, err
}

// putRole creates (201) or replaces (200) a role. Its scopes must lie
// within the caller's: a credential cannot define a role that may do more
// than itself.
func (h *Handler) putRole(r *http.Request) (int, any, error) {
	p := api.Principal(r)
	if err := p.Require("role", "*", "create"); err != nil {
		return 0, nil, err
	}
	if err := p.Require("role", "*", "update"); err != nil {
		return 0, nil, err
	}
	if len(p.Roles) > 0 {
		return 0, nil, apperr.New(apperr.Forbidden, "a credential with a role cannot define roles")
	}
	var def roles.Definition
	if err := api.DecodeJSON(r, &def); err != nil {
		return 0, nil, err
	}
	if def.Scopes != nil {
		if sc, err := auth.ParseScopes(def.Scopes); err == nil && !p.Scopes.Covers(sc) {
			return 0, nil, apperr.New(apperr.Forbidden, "a role cannot grant scopes its creator lacks")
		}
	}
	role, created, err := h.id.Roles.Put(r.Context(), p.TenantID, r.PathValue("name"), &def)
	if err != nil {
		return 0, nil, err
	}
	if created {
		return http.StatusCreated, role, nil
	}
	return http.StatusOK, role, nil
}

func (h *Handler) deleteRole(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "role", "delete")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, h.id.Roles.Delete(r.Context(), p.TenantID, r.PathValue("name"))
}

func (h *Handler) createProvider(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "provider", "create")
	if err != nil {
		return 0, nil, err
	}
	var in identity.CreateInput
	if err := api.DecodeJSON(r, &in); err != nil {
		return 0, nil, err
	}
	prov, err := h.id.Providers.Create(r.Context(), p.TenantID, in)
	return http.StatusCreated, prov, err
}

func (h *Handler) listProviders(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "provider", "read")
	if err != nil {
		return 0, nil, err
	}
	list, err := h.id.Providers.List(r.Context(), p.TenantID)
	return http.StatusOK, map[string]any{"providers": list}, err
}

func (h *Handler) deleteProvider(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "provider", "delete")
	if err != nil {
		return 0, nil, err
	}
	return http.StatusNoContent, nil, h.id.Providers.Delete(r.Context(), p.TenantID, r.PathValue("id"))
}

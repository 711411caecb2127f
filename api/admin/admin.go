// Package admin serves the management API: tenants (operator token), API
// keys, access and user tokens, schemas, roles and identity providers.
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/openapi"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/tenant"
)

// OpenAPIGenerator renders the OpenAPI document of a schema, whole or as
// one credential may see it (openapiview.go).
type OpenAPIGenerator interface {
	OpenAPI(info schema.Info) ([]byte, error)
	OpenAPIFor(info schema.Info, v *openapi.View) ([]byte, error)
}

// Handler serves the management routes.
type Handler struct {
	tenants       *tenant.Service
	keys          *auth.Keys
	authn         *auth.Authenticator
	schemas       *schema.Service
	openapi       OpenAPIGenerator
	operatorToken string
	id            Identity
}

// New returns the management handler. An empty operatorToken disables
// POST /api/v1/tenants (use `dds tenant create`).
func New(tenants *tenant.Service, keys *auth.Keys, authn *auth.Authenticator, schemas *schema.Service, openapi OpenAPIGenerator, operatorToken string, id Identity) *Handler {
	return &Handler{tenants: tenants, keys: keys, authn: authn, schemas: schemas, openapi: openapi, operatorToken: operatorToken, id: id}
}

// Routes registers the management routes.
func (h *Handler) Routes(r *api.Router) {
	r.Public("POST /api/v1/tenants", http.HandlerFunc(h.createTenant))
	r.Handle("POST /api/v1/api-keys", api.Func(h.createKey))
	r.Handle("GET /api/v1/api-keys", api.Func(h.listKeys))
	r.Handle("DELETE /api/v1/api-keys/{id}", api.Func(h.revokeKey))
	r.Handle("POST /api/v1/auth/token", api.Func(h.token))
	r.Handle("GET /api/v1/auth/whoami", api.Func(h.whoami))
	r.Handle("POST /api/v1/schemas", api.Func(h.createSchema))
	r.Handle("GET /api/v1/schemas", api.Func(h.listSchemas))
	r.Handle("GET /api/v1/schemas/{id}", api.Func(h.getSchema))
	r.Handle("PUT /api/v1/schemas/{id}", api.Func(h.updateSchema))
	r.Handle("POST /api/v1/schemas/push", api.Func(h.pushSchema)) // push.go
	r.Handle("POST /api/v1/schemas/{id}/activate", api.Func(h.activateSchema))
	r.Handle("GET /api/v1/schemas/{id}/openapi.json", api.Func(h.openAPI))
	r.Handle("GET /api/v1/openapi.json", api.Func(h.activeOpenAPI))
	h.identityRoutes(r)
}

func (h *Handler) createTenant(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if h.operatorToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(h.operatorToken)) != 1 {
		api.WriteError(w, r, apperr.New(apperr.Unauthenticated, "tenant creation needs the operator token (DDS_OPERATOR_TOKEN)"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	api.Func(func(r *http.Request) (int, any, error) {
		var body struct {
			Name string `json:"name"`
		}
		if err := api.DecodeJSON(r, &body); err != nil {
			return 0, nil, err
		}
		c, err := h.tenants.Create(r.Context(), body.Name)
		return http.StatusCreated, c, err
	}).ServeHTTP(w, r)
}

func (h *Handler) createKey(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "apikey", "create")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
		Role   string   `json:"role"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	scopes, err := auth.ParseScopes(body.Scopes)
	if err != nil {
		return 0, nil, err
	}
	if !p.Scopes.Covers(scopes) {
		return 0, nil, apperr.New(apperr.Forbidden, "a key cannot grant scopes its creator lacks")
	}
	// A credential with a role (a user, a role-bound key) acts under the
	// role's rules: a key it created would not, so it may create none.
	if len(p.Roles) > 0 || p.UserID != "" {
		return 0, nil, apperr.New(apperr.Forbidden, "a credential with a role cannot create API keys")
	}
	if body.Role != "" {
		k, err := h.keys.CreateBound(r.Context(), p.TenantID, body.Name, scopes, body.Role)
		return http.StatusCreated, k, err
	}
	k, err := h.keys.Create(r.Context(), p.TenantID, body.Name, scopes)
	return http.StatusCreated, k, err
}

func (h *Handler) listKeys(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "apikey", "read")
	if err != nil {
		return 0, nil, err
	}
	keys, err := h.keys.List(r.Context(), p.TenantID)
	return http.StatusOK, map[string]any{"keys": keys}, err
}

func (h *Handler) revokeKey(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "apikey", "delete")
	if err != nil {
		return 0, nil, err
	}
	if err := h.keys.Revoke(r.Context(), p.TenantID, r.PathValue("id")); err != nil {
		return 0, nil, err
	}
	h.authn.Revoked(r.PathValue("id")) // this replica at once; others via NOTIFY
	return http.StatusNoContent, nil, nil
}

func (h *Handler) token(r *http.Request) (int, any, error) {
	p := api.Principal(r)
	var body struct {
		Scopes    []string       `json:"scopes"`
		ExpiresIn *int           `json:"expiresIn"`
		UserID    *string        `json:"userId"`
		Roles     []string       `json:"roles"`
		Claims    map[string]any `json:"claims"`
	}
	if r.ContentLength != 0 {
		if err := api.DecodeJSON(r, &body); err != nil {
			return 0, nil, err
		}
	}
	if body.UserID != nil || body.Roles != nil || body.Claims != nil {
		if body.Scopes != nil {
			return 0, nil, apperr.Field("scopes", "a user token's scopes are its roles' scopes; leave scopes out with userId")
		}
		return h.userToken(r, p, body.UserID, body.Roles, body.Claims, body.ExpiresIn)
	}
	scopes := p.Scopes
	if body.Scopes != nil {
		var err error
		if scopes, err = auth.ParseScopes(body.Scopes); err != nil {
			return 0, nil, err
		}
	}
	ttl := time.Hour
	if body.ExpiresIn != nil {
		ttl = time.Duration(*body.ExpiresIn) * time.Second
	}
	tok, exp, err := h.authn.Mint(p, scopes, ttl)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, map[string]any{"accessToken": tok, "tokenType": "Bearer", "expiresAt": exp.UTC(), "scopes": scopes.Strings()}, nil
}

// whoami tells a credential what it is: its tenant, the key behind it and
// its scopes (a console shows only what these allow). Any credential may ask.
func (h *Handler) whoami(r *http.Request) (int, any, error) {
	p := api.Principal(r)
	out := map[string]any{"tenantId": p.TenantID, "keyId": p.KeyID, "credential": p.Credential(), "scopes": p.Scopes.Strings()}
	if p.UserID != "" {
		out["userId"] = p.UserID
	}
	if p.Roles != nil {
		out["roles"] = p.Roles
	}
	if p.ProviderID != "" {
		out["providerId"] = p.ProviderID
	}
	if p.UserID != "" {
		out["expiresAt"] = p.Expires.UTC()
	}
	return http.StatusOK, out, nil
}

func (h *Handler) createSchema(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "schema", "create")
	if err != nil {
		return 0, nil, err
	}
	var def schema.Definition
	if err := api.DecodeJSON(r, &def); err != nil {
		return 0, nil, err
	}
	info, err := h.schemas.Create(r.Context(), p.TenantID, &def)
	return http.StatusCreated, info, err
}

func (h *Handler) listSchemas(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "schema", "read")
	if err != nil {
		return 0, nil, err
	}
	list, err := h.schemas.List(r.Context(), p.TenantID)
	return http.StatusOK, map[string]any{"schemas": list}, err
}

func (h *Handler) getSchema(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "schema", "read")
	if err != nil {
		return 0, nil, err
	}
	info, err := h.schemas.Get(r.Context(), p.TenantID, r.PathValue("id"))
	return http.StatusOK, info, err
}

func (h *Handler) updateSchema(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "schema", "update")
	if err != nil {
		return 0, nil, err
	}
	allow, err1 := boolParam(r, "allowDataLoss")
	dry, err2 := boolParam(r, "dryRun")
	if e := apperr.Fields(append(err1, err2...)); e != nil {
		return 0, nil, e
	}
	var def schema.Definition
	if err := api.DecodeJSON(r, &def); err != nil {
		return 0, nil, err
	}
	res, err := h.schemas.Update(r.Context(), p.TenantID, r.PathValue("id"), &def, allow, dry)
	return http.StatusOK, res, err
}

func (h *Handler) activateSchema(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "schema", "update")
	if err != nil {
		return 0, nil, err
	}
	info, err := h.schemas.Activate(r.Context(), p.TenantID, r.PathValue("id"))
	return http.StatusOK, info, err
}

func (h *Handler) openAPI(r *http.Request) (int, any, error) {
	p, err := api.Authorize(r, "schema", "read")
	if err != nil {
		return 0, nil, err
	}
	info, err := h.schemas.Get(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	var v *openapi.View
	if p.RoleSet != "" { // a ruled principal sees its own schema (openapiview.go)
		if v, err = h.viewFor(r.Context(), p, &info.Definition); err != nil {
			return 0, nil, err
		}
	}
	doc, err := h.openapi.OpenAPIFor(info, v)
	return http.StatusOK, json.RawMessage(doc), err
}

func boolParam(r *http.Request, name string) (bool, []apperr.FieldError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, []apperr.FieldError{{Field: name, Message: "must be true or false"}}
	}
	return b, nil
}

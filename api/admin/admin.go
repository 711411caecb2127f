// Package admin serves the management API: tenants (operator token), API
// keys, access tokens and schemas.
package admin

import (
	"crypto/subtle"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/tenant"
)

// OpenAPIGenerator renders the OpenAPI document of a schema.
type OpenAPIGenerator interface {
	OpenAPI(info schema.Info) ([]byte, error)
}

// Handler serves the management routes.
type Handler struct {
	tenants       *tenant.Service
	keys          *auth.Keys
	authn         *auth.Authenticator
	schemas       *schema.Service
	openapi       OpenAPIGenerator
	operatorToken string
}

// New returns the management handler. An empty operatorToken disables
// POST /api/v1/tenants (use `dds tenant create`).
func New(tenants *tenant.Service, keys *auth.Keys, authn *auth.Authenticator, schemas *schema.Service, openapi OpenAPIGenerator, operatorToken string) *Handler {
	return &Handler{tenants: tenants, keys: keys, authn: authn, schemas: schemas, openapi: openapi, operatorToken: operatorToken}
}

// Routes registers the management routes.
func (h *Handler) Routes(r *api.Router) {
	r.Public("POST /api/v1/tenants", http.HandlerFunc(h.createTenant))
	r.HandleFunc("POST /api/v1/api-keys", h.createKey)
	r.HandleFunc("GET /api/v1/api-keys", h.listKeys)
	r.HandleFunc("DELETE /api/v1/api-keys/{id}", h.revokeKey)
	r.HandleFunc("POST /api/v1/auth/token", h.token)
	r.HandleFunc("POST /api/v1/schemas", h.createSchema)
	r.HandleFunc("GET /api/v1/schemas", h.listSchemas)
	r.HandleFunc("GET /api/v1/schemas/{id}", h.getSchema)
	r.HandleFunc("PUT /api/v1/schemas/{id}", h.updateSchema)
	r.HandleFunc("POST /api/v1/schemas/{id}/activate", h.activateSchema)
	r.HandleFunc("GET /api/v1/schemas/{id}/openapi.json", h.openAPI)
}

func (h *Handler) createTenant(w http.ResponseWriter, r *http.Request) {
	tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if h.operatorToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(h.operatorToken)) != 1 {
		api.WriteError(w, r, apperr.New(apperr.Unauthenticated, "tenant creation needs the operator token (DDS_OPERATOR_TOKEN)"))
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<16)
	var body struct {
		Name string `json:"name"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		api.WriteError(w, r, err)
		return
	}
	c, err := h.tenants.Create(r.Context(), body.Name)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusCreated, c)
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("apikey", "*", "create"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	var body struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		api.WriteError(w, r, err)
		return
	}
	scopes, err := auth.ParseScopes(body.Scopes)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if !p.Scopes.Covers(scopes) {
		api.WriteError(w, r, apperr.New(apperr.Forbidden, "a key cannot grant scopes its creator lacks"))
		return
	}
	k, err := h.keys.Create(r.Context(), p.TenantID, body.Name, scopes)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusCreated, k)
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("apikey", "*", "read"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	keys, err := h.keys.List(r.Context(), p.TenantID)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"keys": keys})
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("apikey", "*", "delete"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if err := h.keys.Revoke(r.Context(), p.TenantID, r.PathValue("id")); err != nil {
		api.WriteError(w, r, err)
		return
	}
	h.authn.Revoked(r.PathValue("id")) // this replica at once; others via NOTIFY
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) token(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	var body struct {
		Scopes    []string `json:"scopes"`
		ExpiresIn *int     `json:"expiresIn"`
	}
	if r.ContentLength != 0 {
		if err := api.DecodeJSON(r, &body); err != nil {
			api.WriteError(w, r, err)
			return
		}
	}
	scopes := p.Scopes
	if body.Scopes != nil {
		var err error
		if scopes, err = auth.ParseScopes(body.Scopes); err != nil {
			api.WriteError(w, r, err)
			return
		}
	}
	ttl := time.Hour
	if body.ExpiresIn != nil {
		ttl = time.Duration(*body.ExpiresIn) * time.Second
	}
	tok, exp, err := h.authn.Mint(p, scopes, ttl)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusCreated, map[string]any{"accessToken": tok, "tokenType": "Bearer", "expiresAt": exp.UTC(), "scopes": scopes.Strings()})
}

func (h *Handler) createSchema(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("schema", "*", "create"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	var def schema.Definition
	if err := api.DecodeJSON(r, &def); err != nil {
		api.WriteError(w, r, err)
		return
	}
	info, err := h.schemas.Create(r.Context(), p.TenantID, &def)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusCreated, info)
}

func (h *Handler) listSchemas(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("schema", "*", "read"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	list, err := h.schemas.List(r.Context(), p.TenantID)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, map[string]any{"schemas": list})
}

func (h *Handler) getSchema(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("schema", "*", "read"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	info, err := h.schemas.Get(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, info)
}

func (h *Handler) updateSchema(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("schema", "*", "update"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	allow, err1 := boolParam(r, "allowDataLoss")
	dry, err2 := boolParam(r, "dryRun")
	if e := apperr.Fields(append(err1, err2...)); e != nil {
		api.WriteError(w, r, e)
		return
	}
	var def schema.Definition
	if err := api.DecodeJSON(r, &def); err != nil {
		api.WriteError(w, r, err)
		return
	}
	res, err := h.schemas.Update(r.Context(), p.TenantID, r.PathValue("id"), &def, allow, dry)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, res)
}

func (h *Handler) activateSchema(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("schema", "*", "update"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	info, err := h.schemas.Activate(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteJSON(w, http.StatusOK, info)
}

func (h *Handler) openAPI(w http.ResponseWriter, r *http.Request) {
	p := api.Principal(r)
	if err := p.Require("schema", "*", "read"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	info, err := h.schemas.Get(r.Context(), p.TenantID, r.PathValue("id"))
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	doc, err := h.openapi.OpenAPI(info)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, doc)
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

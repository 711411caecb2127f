package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
)

// RoleGrant is a role as authentication needs it: its name, the version of
// its definition and the scopes it grants.
type RoleGrant struct {
	Name    string
	Version int64
	Scopes  Scopes
}

// RoleSource resolves role names of a tenant (package roles implements it).
type RoleSource interface {
	// Roles returns those of names that exist in the tenant, in any order;
	// names that do not exist are left out.
	Roles(ctx context.Context, tenantID string, names []string) ([]RoleGrant, error)
}

// ExternalIdentity is a bearer token that an identity provider of a tenant
// issued and TokenVerifier verified.
type ExternalIdentity struct {
	TenantID    string
	ProviderID  string
	UserID      string
	Roles       []string // the token's roles by the provider's claims mapping, unresolved
	DefaultRole string   // the provider's role for tokens none of whose roles exist
	Claims      map[string]any
	Expires     time.Time
}

// TokenVerifier verifies bearer JWTs that DDS did not issue (package
// identity implements it).
type TokenVerifier interface {
	// Verify returns the identity of a token a registered provider issued.
	// It is UNAUTHENTICATED for any token no provider verifies, and
	// UNAVAILABLE when the provider's keys cannot be had in time.
	Verify(ctx context.Context, raw string) (*ExternalIdentity, error)
}

// userTokenType is the "typ" claim of user tokens.
const userTokenType = "user"

// Limits of user tokens.
const (
	MaxUserIDLen    = 255
	MaxTokenRoles   = 32
	MaxClaimsBytes  = 4096
	DefaultTokenTTL = time.Hour
)

// issuedByDDS reports whether a JWT's (unverified) issuer is DDS: such
// tokens are verified with the deployment's secret, all others by the
// identity providers. A token whose payload cannot be read is DDS's (and
// then fails its verification).
func issuedByDDS(raw string) bool {
	var c jwt.RegisteredClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &c); err != nil {
		return true
	}
	return c.Issuer == "dds"
}

// resolveRoles returns the grants of those of names that exist in the
// tenant, sorted by name, and the principal fields they make.
func (a *Authenticator) resolveRoles(ctx context.Context, tenantID string, names []string) ([]RoleGrant, error) {
	if a.roles == nil || len(names) == 0 {
		return nil, nil
	}
	gs, err := a.roles.Roles(ctx, tenantID, names)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(gs, func(x, y RoleGrant) int { return strings.Compare(x.Name, y.Name) })
	return gs, nil
}

// applyRoles sets the principal's Roles and RoleSet from gs and returns the
// union of their scopes.
func applyRoles(p *Principal, gs []RoleGrant) Scopes {
	var scopes Scopes
	set := make([]string, 0, len(gs))
	p.Roles = make([]string, 0, len(gs))
	for _, g := range gs {
		p.Roles = append(p.Roles, g.Name)
		set = append(set, g.Name+"@"+strconv.FormatInt(g.Version, 10))
		scopes = append(scopes, g.Scopes...)
	}
	p.RoleSet = strings.Join(set, ",")
	return scopes
}

// bindRole returns the principal of a key bound to role: the key's scopes
// within the role's. A role that no longer exists (it cannot be deleted
// while keys name it) leaves the key without scopes.
func (a *Authenticator) bindRole(ctx context.Context, base *Principal, role string) (*Principal, error) {
	gs, err := a.resolveRoles(ctx, base.TenantID, []string{role})
	if err != nil {
		return nil, err
	}
	p := *base
	p.Scopes = base.Scopes.Intersect(applyRoles(&p, gs))
	return &p, nil
}

// authenticateUserToken turns a verified user token into its principal.
func (a *Authenticator) authenticateUserToken(ctx context.Context, c *tokenClaims) (*Principal, error) {
	if c.Tenant == "" || c.Subject == "" || c.ExpiresAt == nil {
		return nil, errUnauthenticated
	}
	ok, err := a.keyValid(ctx, c.KeyID)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, apperr.New(apperr.Unauthenticated, "the API key that issued this token was revoked")
	}
	gs, err := a.resolveRoles(ctx, c.Tenant, c.Roles)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 {
		return nil, apperr.New(apperr.Unauthenticated, "none of the user token's roles exists in the tenant any more")
	}
	p := &Principal{TenantID: c.Tenant, KeyID: c.KeyID, Token: true, Expires: c.ExpiresAt.Time,
		UserID: c.Subject, Claims: c.Claims}
	p.Scopes = applyRoles(p, gs)
	return p, nil
}

// authenticateProviderToken verifies a token of a tenant's identity
// provider and resolves its roles: the token's roles that exist in the
// tenant, else the provider's default role. A token that ends with no role
// has no scopes: it is authenticated and may do nothing.
func (a *Authenticator) authenticateProviderToken(ctx context.Context, raw string) (*Principal, error) {
	id, err := a.providers.Verify(ctx, raw)
	if err != nil {
		return nil, err
	}
	gs, err := a.resolveRoles(ctx, id.TenantID, id.Roles)
	if err != nil {
		return nil, err
	}
	if len(gs) == 0 && id.DefaultRole != "" {
		if gs, err = a.resolveRoles(ctx, id.TenantID, []string{id.DefaultRole}); err != nil {
			return nil, err
		}
	}
	p := &Principal{TenantID: id.TenantID, Token: true, Expires: id.Expires, UserID: id.UserID,
		Claims: id.Claims, ProviderID: id.ProviderID}
	p.Scopes = applyRoles(p, gs)
	return p, nil
}

// UserTokenRequest is what a backend asks of POST /api/v1/auth/token to
// mint a token for one of its users.
type UserTokenRequest struct {
	UserID string
	Roles  []string
	Claims map[string]any
	TTL    time.Duration
}

// MintUser issues a user token on behalf of p, an API key or access token
// (the route checks user:*:create). Every role must exist in p's tenant and
// lie within p's scopes (a key cannot mint more than it may do itself).
func (a *Authenticator) MintUser(ctx context.Context, p *Principal, r UserTokenRequest) (string, time.Time, error) {
	if p.UserID != "" || p.KeyID == "" {
		return "", time.Time{}, apperr.New(apperr.Forbidden, "only an API key (or an access token it minted) may mint user tokens")
	}
	var errs []apperr.FieldError
	if r.UserID == "" || len(r.UserID) > MaxUserIDLen {
		errs = append(errs, apperr.FieldError{Field: "userId", Message: fmt.Sprintf("is required (at most %d characters)", MaxUserIDLen)})
	}
	if len(r.Roles) == 0 || len(r.Roles) > MaxTokenRoles {
		errs = append(errs, apperr.FieldError{Field: "roles", Message: fmt.Sprintf("must name 1 to %d roles", MaxTokenRoles)})
	}
	if r.TTL <= 0 || r.TTL > MaxTokenTTL {
		errs = append(errs, apperr.FieldError{Field: "expiresIn", Message: fmt.Sprintf("must be between 1 and %d seconds", int(MaxTokenTTL.Seconds()))})
	}
	if r.Claims != nil {
		if b, err := json.Marshal(r.Claims); err != nil || len(b) > MaxClaimsBytes {
			errs = append(errs, apperr.FieldError{Field: "claims", Message: fmt.Sprintf("must be a JSON object of at most %d bytes", MaxClaimsBytes)})
		}
	}
	if e := apperr.Fields(errs); e != nil {
		return "", time.Time{}, e
	}
	gs, err := a.resolveRoles(ctx, p.TenantID, r.Roles)
	if err != nil {
		return "", time.Time{}, err
	}
	byName := map[string]RoleGrant{}
	for _, g := range gs {
		byName[g.Name] = g
	}
	roles := make([]string, 0, len(r.Roles))
	for i, name := range r.Roles {
		g, ok := byName[name]
		if !ok {
			errs = append(errs, apperr.FieldError{Field: fmt.Sprintf("roles[%d]", i), Message: fmt.Sprintf("no role named %q in this tenant", name)})
			continue
		}
		if !p.Scopes.Covers(g.Scopes) {
			return "", time.Time{}, apperr.New(apperr.Forbidden, "roles[%d]: role %q grants scopes the minting key lacks", i, name)
		}
		if !slices.Contains(roles, name) {
			roles = append(roles, name)
		}
	}
	if e := apperr.Fields(errs); e != nil {
		return "", time.Time{}, e
	}
	now := time.Now()
	exp := now.Add(r.TTL)
	claims := tokenClaims{KeyID: p.KeyID, Type: userTokenType, Tenant: p.TenantID, Roles: roles, Claims: r.Claims,
		RegisteredClaims: jwt.RegisteredClaims{Issuer: "dds", Subject: r.UserID, IssuedAt: jwt.NewNumericDate(now),
			ExpiresAt: jwt.NewNumericDate(exp), ID: uuid.NewString(), Audience: jwt.ClaimStrings{a.env}}}
	s, err := jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(a.secret)
	if err != nil {
		return "", time.Time{}, apperr.Wrap(err, "sign token")
	}
	return s, exp, nil
}

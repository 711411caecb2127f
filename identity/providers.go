// Package identity owns the tenants' identity providers (table
// dds.identity_providers): OpenID Connect issuers whose JWTs a tenant
// accepts as its end users' credentials, and the verification of those
// tokens (auth.TokenVerifier): signature against the provider's JWKS
// (fetched by URL or OIDC discovery, cached, refetched on an unknown key
// id at most once per interval), exp and nbf with a small leeway, iss and
// aud; "none" and HS* are refused. Verified tokens are kept in a bounded
// LRU until they expire, so a request carrying an already-verified token
// never waits for a JWKS. Provider URLs follow the webhook rules (HTTPS;
// private addresses refused unless DDS_WEBHOOK_ALLOW_PRIVATE).
package identity

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/webhook"
)

// Provider is a registered identity provider.
type Provider struct {
	ID          string    `json:"id" db:"id"`
	TenantID    string    `json:"-" db:"tenant_id"`
	Name        string    `json:"name" db:"name"`
	Issuer      string    `json:"issuer" db:"issuer"`
	JWKSURL     string    `json:"jwksUrl,omitempty" db:"jwks_url"`
	Audience    string    `json:"audience" db:"audience"`
	Claims      Claims    `json:"claims" db:"-"`
	DefaultRole string    `json:"defaultRole,omitempty" db:"default_role"`
	CreatedAt   time.Time `json:"createdAt" db:"created_at"`
}

// Claims maps a token's claims to the principal: UserID and Roles are
// dotted JSON paths into the claim set ("sub", "realm_access.roles").
type Claims struct {
	UserID string `json:"userId"`
	Roles  string `json:"roles,omitempty"`
}

// CreateInput is the body of POST /api/v1/auth/providers.
type CreateInput struct {
	Name        string  `json:"name"`
	Issuer      string  `json:"issuer"`
	JWKSURL     string  `json:"jwksUrl"`
	Audience    string  `json:"audience"`
	Claims      *Claims `json:"claims"`
	DefaultRole string  `json:"defaultRole"`
}

// RoleChecker tells whether a role exists (package roles).
type RoleChecker interface {
	Roles(ctx context.Context, tenantID string, names []string) ([]auth.RoleGrant, error)
}

// Options of the service.
type Options struct {
	AllowPrivate bool           // DDS_WEBHOOK_ALLOW_PRIVATE
	CAFile       string         // DDS_WEBHOOK_CA_FILE
	RootCAs      *x509.CertPool // trusted besides the system's and CAFile (tests)
	// FetchTimeout bounds one discovery or JWKS fetch (default 3 s);
	// VerifyTimeout bounds a token's whole verification (default 4 s).
	FetchTimeout, VerifyTimeout time.Duration
	// MinRefetch is the least time between two JWKS fetches of a provider
	// (default 10 s).
	MinRefetch time.Duration
	// CacheSize bounds the verified-token LRU (default 10,000).
	CacheSize int
	// Leeway is the clock skew allowed on exp and nbf (default 30 s).
	Leeway time.Duration
	Log    *slog.Logger
}

// Service keeps the providers and verifies their tokens.
type Service struct {
	db    *sqlx.DB
	roles RoleChecker
	opt   Options
	fetch *fetcher

	mu       sync.RWMutex
	gen      uint64
	loaded   bool
	byIssuer map[string][]*provider
	byID     map[string]*provider
	sets     map[string]*keySet // by JWKS URL (or "discover " + issuer): kept across reloads

	verified *lru.Cache[[32]byte, verifiedToken]
}

type provider struct {
	Provider
	keys     *keySet
	verifier *oidc.IDTokenVerifier
}

type verifiedToken struct {
	id *auth.ExternalIdentity
}

// Limits.
const (
	MaxProvidersPerTenant = 20
	maxJWKSBytes          = 1 << 20
)

// New returns the provider service.
func New(d *sqlx.DB, roles RoleChecker, opt Options) (*Service, error) {
	if opt.FetchTimeout <= 0 {
		opt.FetchTimeout = 3 * time.Second
	}
	if opt.VerifyTimeout <= 0 {
		opt.VerifyTimeout = opt.FetchTimeout + time.Second
	}
	if opt.MinRefetch <= 0 {
		opt.MinRefetch = 10 * time.Second
	}
	if opt.CacheSize <= 0 {
		opt.CacheSize = 10000
	}
	if opt.Leeway <= 0 {
		opt.Leeway = 30 * time.Second
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	hc, err := webhook.NewHTTPClient(webhook.ClientConfig{AllowPrivate: opt.AllowPrivate, CAFile: opt.CAFile, RootCAs: opt.RootCAs, Timeout: opt.FetchTimeout, MaxResponseBytes: maxJWKSBytes})
	if err != nil {
		return nil, err
	}
	cache, err := lru.New[[32]byte, verifiedToken](opt.CacheSize)
	if err != nil {
		return nil, err
	}
	return &Service{db: d, roles: roles, opt: opt, verified: cache, sets: map[string]*keySet{},
		fetch: &fetcher{client: hc, timeout: opt.FetchTimeout, minRefetch: opt.MinRefetch, maxBytes: maxJWKSBytes, allowPrivate: opt.AllowPrivate}}, nil
}

var pathRe = regexp.MustCompile(`^[A-Za-z0-9_:/.-]{1,64}$`)

// checkURL applies the webhook URL rules to a provider URL, naming field.
func checkURL(s, field string, allowPrivate bool) error {
	err := webhook.ValidateTargetURL(s)
	if err == nil {
		err = webhook.ValidateTargetHost(s, allowPrivate)
	}
	if err != nil {
		return apperr.Field(field, "%s", apperr.As(err).Details[0].Message)
	}
	return nil
}

// Create validates and registers a provider for the tenant.
func (s *Service) Create(ctx context.Context, tenantID string, in CreateInput) (*Provider, error) {
	var errs []apperr.FieldError
	add := func(err error) {
		if err != nil {
			errs = append(errs, apperr.As(err).Details...)
		}
	}
	if in.Name == "" || len(in.Name) > 200 {
		errs = append(errs, apperr.FieldError{Field: "name", Message: "is required (at most 200 characters)"})
	}
	if in.Issuer == "" {
		errs = append(errs, apperr.FieldError{Field: "issuer", Message: "is required (the iss of the provider's tokens)"})
	} else if in.JWKSURL == "" {
		add(checkURL(in.Issuer, "issuer", s.opt.AllowPrivate)) // discovery fetches from it
	} else if len(in.Issuer) > 2048 {
		errs = append(errs, apperr.FieldError{Field: "issuer", Message: "must be at most 2048 characters"})
	}
	if in.JWKSURL != "" {
		add(checkURL(in.JWKSURL, "jwksUrl", s.opt.AllowPrivate))
	}
	if in.Audience == "" || len(in.Audience) > 512 {
		errs = append(errs, apperr.FieldError{Field: "audience", Message: "is required (the aud the tokens must carry; at most 512 characters)"})
	}
	c := Claims{UserID: "sub"}
	if in.Claims != nil {
		if in.Claims.UserID != "" {
			c.UserID = in.Claims.UserID
		}
		c.Roles = in.Claims.Roles
	}
	if !pathRe.MatchString(c.UserID) {
		errs = append(errs, apperr.FieldError{Field: "claims.userId", Message: "must be a dotted claim path such as sub"})
	}
	if c.Roles != "" && !pathRe.MatchString(c.Roles) {
		errs = append(errs, apperr.FieldError{Field: "claims.roles", Message: "must be a dotted claim path such as realm_access.roles"})
	}
	if e := apperr.Fields(errs); e != nil {
		return nil, e
	}
	if in.DefaultRole != "" {
		gs, err := s.roles.Roles(ctx, tenantID, []string{in.DefaultRole})
		if err != nil {
			return nil, err
		}
		if len(gs) == 0 {
			return nil, apperr.Field("defaultRole", "no role named %q in this tenant", in.DefaultRole)
		}
	}
	var n int
	if err := s.db.GetContext(ctx, &n, `SELECT count(*) FROM dds.identity_providers WHERE tenant_id = $1`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "count providers")
	}
	if n >= MaxProvidersPerTenant {
		return nil, apperr.New(apperr.Validation, "a tenant may have at most %d identity providers", MaxProvidersPerTenant)
	}
	p := &Provider{ID: uuid.Must(uuid.NewV7()).String(), TenantID: tenantID, Name: in.Name, Issuer: in.Issuer, JWKSURL: in.JWKSURL,
		Audience: in.Audience, Claims: c, DefaultRole: in.DefaultRole}
	err := s.db.GetContext(ctx, &p.CreatedAt, `INSERT INTO dds.identity_providers (id, tenant_id, name, issuer, jwks_url, audience, user_claim, roles_claim, default_role)
		VALUES ($1, $2, $3, $4, NULLIF($5, ''), $6, $7, NULLIF($8, ''), NULLIF($9, '')) RETURNING created_at`,
		p.ID, tenantID, p.Name, p.Issuer, p.JWKSURL, p.Audience, c.UserID, c.Roles, p.DefaultRole)
	if pe, ok := db.PgError(err); ok && pe.Code == "23505" {
		return nil, apperr.New(apperr.Conflict, "a provider with this issuer and audience is already registered (an (issuer, audience) pair names one tenant)")
	}
	if err != nil {
		return nil, apperr.Wrap(err, "create provider")
	}
	s.Invalidate()
	return p, nil
}

const providerCols = `id, tenant_id, name, issuer, coalesce(jwks_url, '') AS jwks_url, audience, user_claim, coalesce(roles_claim, '') AS roles_claim, coalesce(default_role, '') AS default_role, created_at`

type providerRow struct {
	Provider
	UserClaim  string `db:"user_claim"`
	RolesClaim string `db:"roles_claim"`
}

func (r providerRow) provider() Provider {
	p := r.Provider
	p.Claims = Claims{UserID: r.UserClaim, Roles: r.RolesClaim}
	return p
}

// List returns the tenant's providers.
func (s *Service) List(ctx context.Context, tenantID string) ([]Provider, error) {
	var rows []providerRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+providerCols+` FROM dds.identity_providers WHERE tenant_id = $1 ORDER BY created_at, id`, tenantID); err != nil {
		return nil, apperr.Wrap(err, "list providers")
	}
	out := make([]Provider, len(rows))
	for i, r := range rows {
		out[i] = r.provider()
	}
	return out, nil
}

// Delete removes a provider of the tenant: its tokens are refused at once
// on this replica and, through NOTIFY dds_providers, on every other.
func (s *Service) Delete(ctx context.Context, tenantID, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return apperr.New(apperr.NotFound, "identity provider %q not found", id)
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM dds.identity_providers WHERE tenant_id = $1 AND id = $2`, tenantID, id)
	if err != nil {
		return apperr.Wrap(err, "delete provider")
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return apperr.New(apperr.NotFound, "identity provider %q not found", id)
	}
	s.Invalidate()
	return nil
}

// Invalidate makes the next verification reload the providers (wired to
// NOTIFY dds_providers, and to the hub's reconnect).
func (s *Service) Invalidate() {
	s.mu.Lock()
	s.gen++
	s.loaded = false
	s.mu.Unlock()
}

// load reads every provider of the deployment (a short list) unless loaded.
func (s *Service) load(ctx context.Context) error {
	s.mu.RLock()
	loaded, gen := s.loaded, s.gen
	s.mu.RUnlock()
	if loaded {
		return nil
	}
	var rows []providerRow
	if err := s.db.SelectContext(ctx, &rows, `SELECT `+providerCols+` FROM dds.identity_providers`); err != nil {
		return apperr.Wrap(err, "read identity providers")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	byIssuer := map[string][]*provider{}
	byID := map[string]*provider{}
	sets := map[string]*keySet{}
	for _, r := range rows {
		p := &provider{Provider: r.provider()}
		key := keyOf(p)
		ks := s.sets[key]
		if ks == nil {
			ks = &keySet{jwksURL: p.JWKSURL, issuer: p.Issuer, fetcher: s.fetch}
		}
		sets[key] = ks
		p.keys = ks
		leeway := s.opt.Leeway
		p.verifier = oidc.NewVerifier(p.Issuer, ks, &oidc.Config{ClientID: p.Audience, SupportedSigningAlgs: algorithmNames(),
			Now: func() time.Time { return time.Now().Add(-leeway) }})
		byIssuer[p.Issuer] = append(byIssuer[p.Issuer], p)
		byID[p.ID] = p
	}
	// A change seen since the read began (gen moved) may be missing from
	// it: the read is used, and the next verification reads again.
	s.byIssuer, s.byID, s.sets, s.loaded = byIssuer, byID, sets, s.gen == gen
	return nil
}

func keyOf(p *provider) string {
	if p.JWKSURL != "" {
		return p.JWKSURL
	}
	return "discover " + p.Issuer
}

func unauthenticated(format string, args ...any) error {
	return apperr.New(apperr.Unauthenticated, format, args...)
}

// Verify implements auth.TokenVerifier.
func (s *Service) Verify(ctx context.Context, raw string) (*auth.ExternalIdentity, error) {
	if err := s.load(ctx); err != nil {
		return nil, err
	}
	h := sha256.Sum256([]byte(raw))
	if v, ok := s.verified.Get(h); ok {
		s.mu.RLock()
		_, live := s.byID[v.id.ProviderID]
		s.mu.RUnlock()
		if live && time.Now().Before(v.id.Expires.Add(s.opt.Leeway)) {
			return v.id, nil
		}
		s.verified.Remove(h)
	}
	var unverified jwt.MapClaims
	if _, _, err := jwt.NewParser().ParseUnverified(raw, &unverified); err != nil {
		return nil, unauthenticated("missing or invalid credentials")
	}
	iss, _ := unverified.GetIssuer()
	aud, _ := unverified.GetAudience()
	var p *provider
	s.mu.RLock()
	for _, c := range s.byIssuer[iss] {
		for _, a := range aud {
			if a == c.Audience {
				p = c
			}
		}
	}
	s.mu.RUnlock()
	if p == nil {
		return nil, unauthenticated("no identity provider accepts this token's issuer and audience")
	}
	vctx, cancel := context.WithTimeout(ctx, s.opt.VerifyTimeout)
	defer cancel()
	// Keys first: a provider whose JWKS was never had is 503 (the token may
	// be valid); once keys are held, a failed refetch keeps them.
	err := p.keys.ready(vctx)
	var tok *oidc.IDToken
	if err == nil {
		tok, err = p.verifier.Verify(vctx, raw)
	}
	if err != nil {
		if errors.Is(err, errUnavailable) {
			s.opt.Log.Warn("identity provider keys unavailable", "provider", p.ID, "issuer", p.Issuer, "err", err)
			return nil, apperr.New(apperr.Unavailable, "the identity provider's keys could not be fetched in time; retry later")
		}
		return nil, unauthenticated("the token was not verified by its identity provider: %s", strings.TrimPrefix(err.Error(), "oidc: "))
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, unauthenticated("the token's claims are not a JSON object")
	}
	if nbf, ok := claims["nbf"].(float64); ok && time.Unix(int64(nbf), 0).After(time.Now().Add(s.opt.Leeway)) {
		return nil, unauthenticated("the token is not valid yet (nbf)")
	}
	userID, ok := stringAt(claims, p.Claims.UserID)
	if !ok || userID == "" || len(userID) > auth.MaxUserIDLen {
		return nil, unauthenticated("the token has no user id at claim %q", p.Claims.UserID)
	}
	id := &auth.ExternalIdentity{TenantID: p.TenantID, ProviderID: p.ID, UserID: userID, DefaultRole: p.DefaultRole,
		Claims: claims, Expires: tok.Expiry}
	if p.Claims.Roles != "" {
		id.Roles = stringsAt(claims, p.Claims.Roles)
	}
	s.verified.Add(h, verifiedToken{id: id})
	return id, nil
}

// at walks a dotted path into a claim set.
func at(claims map[string]any, path string) (any, bool) {
	var cur any = claims
	for seg := range strings.SplitSeq(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[seg]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func stringAt(claims map[string]any, path string) (string, bool) {
	v, ok := at(claims, path)
	if !ok {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return v, true
	case float64:
		return fmt.Sprint(v), true
	}
	return "", false
}

// stringsAt reads a roles claim: an array of strings, or one string of
// space-separated names (as OAuth's "scope").
func stringsAt(claims map[string]any, path string) []string {
	v, ok := at(claims, path)
	if !ok {
		return nil
	}
	var out []string
	switch v := v.(type) {
	case string:
		out = strings.Fields(v)
	case []any:
		for _, it := range v {
			if s, ok := it.(string); ok {
				out = append(out, s)
			}
		}
	}
	if len(out) > auth.MaxTokenRoles {
		out = out[:auth.MaxTokenRoles]
	}
	return out
}

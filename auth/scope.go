// Package auth owns credentials: API key format and hashing, scope parsing
// and matching, the authenticator that turns a bearer credential into a
// Principal (with a revocation-aware cache), JWT access tokens and user
// tokens. End users (user tokens, identity providers' tokens, role-bound
// keys) become principals here too; the roles they name are defined by
// package roles and the providers by package identity, both reached
// through the interfaces this package declares (RoleSource, TokenVerifier).
package auth

import (
	"time"

	"context"
	"fmt"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// Scope kinds. "entity" and "relationship" guard records and edges; the
// others guard management APIs.
// "user" guards minting user tokens (user:*:create), "role" the roles API
// and "provider" the identity providers API.
var kinds = map[string]bool{"entity": true, "relationship": true, "schema": true, "apikey": true, "webhook": true, "file": true, "job": true,
	"user": true, "role": true, "provider": true}

var ops = map[string]bool{"read": true, "create": true, "update": true, "delete": true}

// Scope is one parsed "kind:name:op" grant; "*" is a wildcard in any part.
type Scope struct{ Kind, Name, Op string }

func (s Scope) String() string { return s.Kind + ":" + s.Name + ":" + s.Op }

// ParseScope parses and validates one scope string.
func ParseScope(s string) (Scope, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Scope{}, fmt.Errorf("scope %q must have the form kind:name:operation", s)
	}
	sc := Scope{parts[0], parts[1], parts[2]}
	if sc.Kind != "*" && !kinds[sc.Kind] {
		return Scope{}, fmt.Errorf("scope %q: unknown kind %q (entity, relationship, schema, apikey, webhook, file, job, user, role, provider or *)", s, sc.Kind)
	}
	if sc.Name != "*" && !schema.ValidIdent(sc.Name) {
		return Scope{}, fmt.Errorf("scope %q: name must be * or a schema name", s)
	}
	if sc.Op != "*" && !ops[sc.Op] {
		return Scope{}, fmt.Errorf("scope %q: unknown operation %q (read, create, update, delete or *)", s, sc.Op)
	}
	if sc.Kind == "*" && sc.Name != "*" {
		return Scope{}, fmt.Errorf("scope %q: a wildcard kind needs a wildcard name", s)
	}
	return sc, nil
}

// ParseScopes parses a list, naming each bad entry as scopes[i].
func ParseScopes(list []string) (Scopes, error) {
	if len(list) == 0 {
		return nil, apperr.Field("scopes", "at least one scope is required")
	}
	var errs []apperr.FieldError
	out := make(Scopes, 0, len(list))
	for i, s := range list {
		sc, err := ParseScope(s)
		if err != nil {
			errs = append(errs, apperr.FieldError{Field: fmt.Sprintf("scopes[%d]", i), Message: err.Error()})
			continue
		}
		out = append(out, sc)
	}
	if e := apperr.Fields(errs); e != nil {
		return nil, e
	}
	return out, nil
}

// Scopes is a set of grants.
type Scopes []Scope

// Allows reports whether any grant covers kind/name/op.
func (ss Scopes) Allows(kind, name, op string) bool {
	for _, s := range ss {
		if (s.Kind == "*" || s.Kind == kind) && (s.Name == "*" || s.Name == name) && (s.Op == "*" || s.Op == op) {
			return true
		}
	}
	return false
}

// Covers reports whether every grant of sub is within ss (used to mint
// narrower access tokens).
func (ss Scopes) Covers(sub Scopes) bool {
	for _, want := range sub {
		ok := false
		for _, s := range ss {
			if (s.Kind == "*" || s.Kind == want.Kind) && (s.Name == "*" || s.Name == want.Name) && (s.Op == "*" || s.Op == want.Op) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// Strings renders the scopes.
func (ss Scopes) Strings() []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = s.String()
	}
	return out
}

// Intersect returns the grants both ss and other allow: each pair's
// part-wise intersection ("*" yields to the other part; differing names or
// operations yield nothing). A key bound to a role acts within both.
func (ss Scopes) Intersect(other Scopes) Scopes {
	part := func(a, b string) (string, bool) {
		switch {
		case a == "*":
			return b, true
		case b == "*" || a == b:
			return a, true
		}
		return "", false
	}
	var out Scopes
	seen := map[Scope]bool{}
	for _, a := range ss {
		for _, b := range other {
			k, ok1 := part(a.Kind, b.Kind)
			n, ok2 := part(a.Name, b.Name)
			o, ok3 := part(a.Op, b.Op)
			if ok1 && ok2 && ok3 && !seen[Scope{k, n, o}] {
				seen[Scope{k, n, o}] = true
				out = append(out, Scope{k, n, o})
			}
		}
	}
	return out
}

// Principal is the authenticated caller of a request.
//
// Credentials and what they become:
//   - an API key: TenantID, KeyID, Scopes (the key's);
//   - an access token: the same, narrowed, with Token and Expires;
//   - an API key bound to a role: Scopes are the key's within the role's
//     (Intersect), Roles holds the role, RoleSet names its version; no UserID;
//   - a user token (minted by a key with user:*:create) or an identity
//     provider's token: UserID, Roles (the token's roles that exist in the
//     tenant; a provider's defaultRole when none do), Claims, Scopes (the
//     union of the roles' scopes), Token and Expires; KeyID is the minting
//     key (a provider's token has none, ProviderID instead).
//
// Rules (package roles) are compiled from Roles and read UserID and Claims
// as bound values ($user.id, $user.claims.<path>): see RoleSet.
type Principal struct {
	TenantID string
	KeyID    string // the API key, or the key that minted the token ("" for a provider's token)
	Scopes   Scopes
	Token    bool      // authenticated with a JWT (access, user or provider token)
	Expires  time.Time // when the token expires (zero for an API key)

	// UserID is the end user ("" for keys and access tokens).
	UserID string
	// Roles are the principal's roles, sorted, each existing in the tenant
	// when the credential was resolved (nil: no role, no rules).
	Roles []string
	// RoleSet identifies the exact role definitions Roles were resolved to
	// ("name@version,..." sorted; "" without roles): two principals with the
	// same RoleSet are under identical rules, whatever their user ids or
	// claims, because rules read those as bound values, never as SQL text.
	RoleSet string
	// Claims are the token's claims: a user token's "claims" object, or a
	// provider token's whole claim set ($user.claims.<path>). nil otherwise.
	Claims map[string]any
	// ProviderID is the identity provider that verified the token.
	ProviderID string
}

// Credential names the kind of credential: apiKey, accessToken, userToken
// (minted by POST /api/v1/auth/token with a userId) or providerToken.
func (p *Principal) Credential() string {
	switch {
	case p.ProviderID != "":
		return "providerToken"
	case p.UserID != "":
		return "userToken"
	case p.Token:
		return "accessToken"
	}
	return "apiKey"
}

// Require returns FORBIDDEN unless the principal may do op on kind/name.
func (p *Principal) Require(kind, name, op string) error {
	if p.Scopes.Allows(kind, name, op) {
		return nil
	}
	return apperr.New(apperr.Forbidden, "insufficient permissions: requires scope %s:%s:%s", kind, name, op)
}

type ctxKey struct{}

// WithPrincipal stores p in ctx.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, ctxKey{}, p)
}

// FromContext returns the request's principal.
func FromContext(ctx context.Context) (*Principal, bool) {
	p, ok := ctx.Value(ctxKey{}).(*Principal)
	return p, ok
}

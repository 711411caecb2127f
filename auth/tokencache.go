package auth

import (
	"crypto/sha256"
	"slices"
	"time"

	"github.com/golang-jwt/jwt/v5"
	lru "github.com/hashicorp/golang-lru/v2"
)

// tokenCacheSize bounds the verified tokens kept (a few hundred bytes each).
const tokenCacheSize = 10000

// verifiedTokens keeps the claims of tokens DDS issued (access and user
// tokens) whose signature, issuer and audience were verified, so a token's
// second request skips the JWT parse and HMAC: the profile of a GraphQL
// list by a user token spent a fifth of the server's CPU parsing the same
// token twice per request.
//
// Invariant: an entry is keyed by the SHA-256 of the token's exact bytes and
// holds only what those bytes and the Authenticator's fixed secret, issuer
// and audience determine, so it can serve no other token. What changes with
// time is still checked on every request: expiry and not-before (live), the
// minting key's revocation (keyValid) and the roles (resolved each time, so
// a role's change applies at once). Failures are never cached: a flood of
// bad tokens cannot evict good ones.
type verifiedTokens struct {
	lru *lru.Cache[[32]byte, *verifiedToken]
}

// verifiedToken is a verified token's claims; shared by every request
// carrying the token, so never modified after it is cached.
type verifiedToken struct {
	claims tokenClaims
	scopes Scopes // an access token's parsed scopes
}

func newVerifiedTokens() *verifiedTokens {
	c, err := lru.New[[32]byte, *verifiedToken](tokenCacheSize)
	if err != nil { // only for a size ≤ 0
		panic(err)
	}
	return &verifiedTokens{lru: c}
}

func (v *verifiedTokens) get(raw string) (*verifiedToken, bool) {
	return v.lru.Get(sha256.Sum256([]byte(raw)))
}

func (v *verifiedTokens) put(raw string, t *verifiedToken) {
	v.lru.Add(sha256.Sum256([]byte(raw)), t)
}

// live applies the time checks of the parse that verified the token
// (golang-jwt's, no leeway): expiry required and in the future, not-before
// (when present) reached.
func (t *verifiedToken) live(now time.Time) bool {
	c := &t.claims
	return c.ExpiresAt != nil && now.Before(c.ExpiresAt.Time) && (c.NotBefore == nil || !now.Before(c.NotBefore.Time))
}

// verifyDDSToken verifies a token DDS issued and caches its claims.
func (a *Authenticator) verifyDDSToken(raw string) (*verifiedToken, error) {
	t := &verifiedToken{}
	_, err := jwt.ParseWithClaims(raw, &t.claims, func(*jwt.Token) (any, error) { return a.secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer("dds"), jwt.WithAudience(a.env), jwt.WithExpirationRequired())
	if err != nil {
		return nil, errUnauthenticated
	}
	if t.claims.Type == "" {
		scopes, err := ParseScopes(t.claims.Scopes)
		if err != nil {
			return nil, errUnauthenticated
		}
		t.scopes = slices.Clip(scopes) // shared: an append must copy
	}
	a.tokens.put(raw, t)
	return t, nil
}

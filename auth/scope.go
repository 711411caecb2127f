// Package auth owns credentials: API key format and hashing, scope parsing
// and matching, the authenticator that turns a bearer credential into a
// Principal (with a revocation-aware cache), and JWT access tokens.
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
var kinds = map[string]bool{"entity": true, "relationship": true, "schema": true, "apikey": true, "webhook": true, "file": true, "job": true}

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
		return Scope{}, fmt.Errorf("scope %q: unknown kind %q (entity, relationship, schema, apikey, webhook, file, job or *)", s, sc.Kind)
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

// Principal is the authenticated caller of a request.
type Principal struct {
	TenantID string
	KeyID    string // the API key, or the key that minted the token
	Scopes   Scopes
	Token    bool      // authenticated with a JWT access token
	Expires  time.Time // when the access token expires (zero for an API key)
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

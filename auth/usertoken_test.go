package auth_test

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/internal/testenv"
)

// fakeRoles is a tenant's roles held in memory (package roles is tested
// on its own); versions grow on every change, as there.
type fakeRoles struct {
	mu sync.Mutex
	m  map[string]auth.RoleGrant // tenant + "/" + name
}

func (f *fakeRoles) put(tenant, name string, scopes ...string) {
	sc, err := auth.ParseScopes(scopes)
	if err != nil {
		panic(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.m[tenant+"/"+name].Version + 1
	f.m[tenant+"/"+name] = auth.RoleGrant{Name: name, Version: v, Scopes: sc}
}

func (f *fakeRoles) Roles(_ context.Context, tenant string, names []string) ([]auth.RoleGrant, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []auth.RoleGrant
	for _, n := range names {
		if g, ok := f.m[tenant+"/"+n]; ok {
			out = append(out, g)
		}
	}
	return out, nil
}

type userFixture struct {
	*fixture
	roles *fakeRoles
	admin auth.NewKeyResult // a key holding *:*:*
	a     *auth.Authenticator
}

func newUserFixture(t *testing.T) *userFixture {
	t.Helper()
	f := newFixture(t)
	u := &userFixture{fixture: f, roles: &fakeRoles{m: map[string]auth.RoleGrant{}}}
	all, _ := auth.ParseScopes([]string{"*:*:*"})
	var err error
	if u.admin, err = f.keys.Create(context.Background(), f.tenant, "admin", all); err != nil {
		t.Fatal(err)
	}
	u.a = auth.NewAuthenticator(testenv.DB(t), "test", []byte(testSecret), time.Hour, slog.New(slog.DiscardHandler), auth.WithRoles(u.roles))
	u.roles.put(f.tenant, "member", "entity:Todo:*", "entity:Tag:read")
	u.roles.put(f.tenant, "viewer", "entity:*:read")
	return u
}

func (u *userFixture) principal(t *testing.T, cred string) *auth.Principal {
	t.Helper()
	p, err := u.a.Authenticate(context.Background(), "Bearer "+cred)
	if err != nil {
		t.Fatalf("authenticate: %v", err)
	}
	return p
}

func (u *userFixture) mint(t *testing.T, r auth.UserTokenRequest) string {
	t.Helper()
	if r.TTL == 0 {
		r.TTL = time.Hour
	}
	tok, _, err := u.a.MintUser(context.Background(), u.principal(t, u.admin.Key), r)
	if err != nil {
		t.Fatalf("mint: %v", err)
	}
	return tok
}

// A user token becomes a principal with the user, its existing roles, its
// claims, the union of the roles' scopes and a RoleSet naming the role
// versions; a role's change applies to tokens already issued.
func TestUserTokenPrincipal(t *testing.T) {
	t.Parallel()
	u := newUserFixture(t)
	tok := u.mint(t, auth.UserTokenRequest{UserID: "alice", Roles: []string{"viewer", "member"}, Claims: map[string]any{"org": "acme"}})
	p := u.principal(t, tok)
	if p.TenantID != u.tenant || p.UserID != "alice" || !slices.Equal(p.Roles, []string{"member", "viewer"}) || p.Claims["org"] != "acme" ||
		p.KeyID != u.admin.ID || !p.Token || p.Credential() != "userToken" || p.RoleSet != "member@1,viewer@1" {
		t.Fatalf("principal %+v", p)
	}
	if !p.Scopes.Allows("entity", "Todo", "delete") || !p.Scopes.Allows("entity", "Other", "read") || p.Scopes.Allows("entity", "Other", "create") ||
		p.Scopes.Allows("apikey", "*", "create") {
		t.Fatalf("scopes %v", p.Scopes.Strings())
	}
	u.roles.put(u.tenant, "viewer", "entity:Tag:read")
	p = u.principal(t, tok)
	if p.Scopes.Allows("entity", "Other", "read") || p.RoleSet != "member@1,viewer@2" {
		t.Fatalf("after the role changed: %v %s", p.Scopes.Strings(), p.RoleSet)
	}
	// Two users of the same roles share a RoleSet (the rule-compilation key).
	q := u.principal(t, u.mint(t, auth.UserTokenRequest{UserID: "bob", Roles: []string{"member", "viewer"}}))
	if q.RoleSet != p.RoleSet || q.UserID != "bob" {
		t.Fatalf("bob %+v", q)
	}
}

// Minting checks its input, naming the field; roles must exist and lie
// within the minting key's scopes; a user cannot mint.
func TestMintUserRefusals(t *testing.T) {
	t.Parallel()
	u := newUserFixture(t)
	admin := u.principal(t, u.admin.Key)
	narrow := u.principal(t, u.key.Key) // entity:*:read
	for _, c := range []struct {
		name  string
		p     *auth.Principal
		r     auth.UserTokenRequest
		code  apperr.Code
		field string
	}{
		{"no user", admin, auth.UserTokenRequest{Roles: []string{"member"}, TTL: time.Hour}, apperr.Validation, "userId"},
		{"no roles", admin, auth.UserTokenRequest{UserID: "a", TTL: time.Hour}, apperr.Validation, "roles"},
		{"unknown role", admin, auth.UserTokenRequest{UserID: "a", Roles: []string{"member", "ghost"}, TTL: time.Hour}, apperr.Validation, "roles[1]"},
		{"ttl", admin, auth.UserTokenRequest{UserID: "a", Roles: []string{"member"}, TTL: 48 * time.Hour}, apperr.Validation, "expiresIn"},
		{"huge claims", admin, auth.UserTokenRequest{UserID: "a", Roles: []string{"member"}, TTL: time.Hour, Claims: map[string]any{"x": string(make([]byte, 5000))}}, apperr.Validation, "claims"},
		{"escalation", narrow, auth.UserTokenRequest{UserID: "a", Roles: []string{"member"}, TTL: time.Hour}, apperr.Forbidden, ""},
	} {
		_, _, err := u.a.MintUser(context.Background(), c.p, c.r)
		e := apperr.As(err)
		if err == nil || e.Code != c.code || (c.field != "" && (len(e.Details) == 0 || e.Details[0].Field != c.field)) {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
	user := u.principal(t, u.mint(t, auth.UserTokenRequest{UserID: "a", Roles: []string{"viewer"}}))
	if _, _, err := u.a.MintUser(context.Background(), user, auth.UserTokenRequest{UserID: "b", Roles: []string{"viewer"}, TTL: time.Hour}); apperr.As(err).Code != apperr.Forbidden {
		t.Errorf("a user minted a user token: %v", err)
	}
	if _, _, err := u.a.Mint(user, user.Scopes, time.Hour); apperr.As(err).Code != apperr.Forbidden {
		t.Errorf("a user minted an access token: %v", err)
	}
}

// A user token dies with its minting key, when all its roles are gone, at
// expiry, and when forged (another secret, an access token's claims
// relabelled).
func TestUserTokenEnds(t *testing.T) {
	t.Parallel()
	u := newUserFixture(t)
	tok := u.mint(t, auth.UserTokenRequest{UserID: "alice", Roles: []string{"viewer"}})
	gone := u.mint(t, auth.UserTokenRequest{UserID: "alice", Roles: []string{"member"}})
	u.roles.mu.Lock()
	delete(u.roles.m, u.tenant+"/member")
	u.roles.mu.Unlock()
	if _, err := u.a.Authenticate(context.Background(), "Bearer "+gone); !unauthenticated(err) {
		t.Errorf("a token whose roles are all gone: %v", err)
	}
	forged, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "dds", "aud": "test", "sub": "alice", "tid": u.tenant,
		"typ": "user", "roles": []string{"viewer"}, "kid": u.admin.ID, "exp": time.Now().Add(time.Hour).Unix()}).SignedString([]byte("another-secret-0123456789abcdef0123"))
	if _, err := u.a.Authenticate(context.Background(), "Bearer "+forged); !unauthenticated(err) {
		t.Errorf("a token signed with another secret: %v", err)
	}
	expired, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": "dds", "aud": "test", "sub": "alice", "tid": u.tenant,
		"typ": "user", "roles": []string{"viewer"}, "kid": u.admin.ID, "exp": time.Now().Add(-time.Minute).Unix()}).SignedString([]byte(testSecret))
	if _, err := u.a.Authenticate(context.Background(), "Bearer "+expired); !unauthenticated(err) {
		t.Errorf("an expired user token: %v", err)
	}
	if err := u.keys.Revoke(context.Background(), u.tenant, u.admin.ID); err != nil {
		t.Fatal(err)
	}
	u.a.Revoked(u.admin.ID)
	if _, err := u.a.Authenticate(context.Background(), "Bearer "+tok); !unauthenticated(err) {
		t.Errorf("a user token outlived its key: %v", err)
	}
}

// A key bound to a role acts within both its scopes and the role's, and
// follows the role's changes; keys without a role are unchanged.
func TestRoleBoundKey(t *testing.T) {
	t.Parallel()
	u := newUserFixture(t)
	_, err := testenv.DB(t).Exec(`INSERT INTO dds.roles (tenant_id, name, definition) VALUES ($1, 'member', '{}') ON CONFLICT DO NOTHING`, u.tenant)
	if err != nil {
		t.Fatal(err)
	}
	sc, _ := auth.ParseScopes([]string{"entity:*:*", "schema:*:read"})
	k, err := u.keys.CreateBound(context.Background(), u.tenant, "bound", sc, "member")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := u.keys.CreateBound(context.Background(), u.tenant, "bound", sc, "ghost"); apperr.As(err).Code != apperr.Validation || apperr.As(err).Details[0].Field != "role" {
		t.Errorf("binding a missing role: %v", err)
	}
	for range 2 { // the first use reads the key, the second hits the cache
		p := u.principal(t, k.Key)
		if !slices.Equal(p.Roles, []string{"member"}) || p.UserID != "" || p.Credential() != "apiKey" ||
			!slices.Equal(p.Scopes.Strings(), []string{"entity:Todo:*", "entity:Tag:read"}) {
			t.Fatalf("bound key: %+v %v", p, p.Scopes.Strings())
		}
	}
	u.roles.put(u.tenant, "member", "*:*:read")
	if p := u.principal(t, k.Key); !slices.Equal(p.Scopes.Strings(), []string{"entity:*:read", "schema:*:read"}) || p.RoleSet != "member@2" {
		t.Fatalf("after the role changed: %v %s", p.Scopes.Strings(), p.RoleSet)
	}
	if p := u.principal(t, u.key.Key); p.Roles != nil || p.RoleSet != "" || !slices.Equal(p.Scopes.Strings(), []string{"entity:*:read"}) {
		t.Fatalf("an unbound key changed: %+v", p)
	}
	p := u.principal(t, k.Key)
	if _, _, err := u.a.Mint(p, p.Scopes, time.Hour); apperr.As(err).Code != apperr.Forbidden {
		t.Errorf("a role-bound key minted an access token: %v", err)
	}
}

func TestScopesIntersect(t *testing.T) {
	t.Parallel()
	parse := func(s ...string) auth.Scopes {
		sc, err := auth.ParseScopes(s)
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for _, c := range []struct {
		a, b auth.Scopes
		want []string
	}{
		{parse("*:*:*"), parse("entity:Todo:read"), []string{"entity:Todo:read"}},
		{parse("entity:*:read", "schema:*:*"), parse("*:*:read"), []string{"entity:*:read", "schema:*:read"}},
		{parse("entity:Todo:*"), parse("entity:Tag:*"), nil},
		{parse("entity:Todo:create"), parse("entity:*:read"), nil},
	} {
		if got := c.a.Intersect(c.b).Strings(); !slices.Equal(got, c.want) && len(got)+len(c.want) > 0 {
			t.Errorf("%v ∩ %v = %v, want %v", c.a.Strings(), c.b.Strings(), got, c.want)
		}
	}
}

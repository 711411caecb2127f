package auth_test

import (
	"context"
	"testing"
	"time"

	"github.com/dds-project/dds/auth"
)

// A token verified once is kept (tokencache.go), and what may change after
// its first use still applies to its later uses: its minting key's
// revocation, its roles' changes; a token differing in a byte of its
// signature is verified on its own and refused.
func TestVerifiedTokensStillEnd(t *testing.T) {
	t.Parallel()
	u := newUserFixture(t)
	tok := u.mint(t, auth.UserTokenRequest{UserID: "alice", Roles: []string{"viewer"}})
	admin := u.principal(t, u.admin.Key)
	access, _, err := u.a.Mint(admin, admin.Scopes, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second use is served from the cache
		if p := u.principal(t, tok); p.UserID != "alice" || p.RoleSet != "viewer@1" {
			t.Fatalf("user token principal %+v", p)
		}
		if p := u.principal(t, access); p.UserID != "" || !p.Scopes.Allows("entity", "Todo", "delete") {
			t.Fatalf("access token principal %+v", p)
		}
	}
	for _, raw := range []string{tok, access} {
		// A signature character other than the last (whose low bits are
		// base64 padding a decoder may ignore).
		i := len(raw) - 10
		c := byte('A')
		if raw[i] == c {
			c = 'B'
		}
		tampered := raw[:i] + string(c) + raw[i+1:]
		if _, err := u.a.Authenticate(context.Background(), "Bearer "+tampered); !unauthenticated(err) {
			t.Errorf("a cached token with another signature byte: %v", err)
		}
	}
	u.roles.put(u.tenant, "viewer", "entity:Tag:read")
	if p := u.principal(t, tok); p.RoleSet != "viewer@2" || p.Scopes.Allows("entity", "Todo", "read") {
		t.Fatalf("after the role changed: %+v", p)
	}
	if err := u.keys.Revoke(context.Background(), u.tenant, u.admin.ID); err != nil {
		t.Fatal(err)
	}
	u.a.Revoked(u.admin.ID)
	for _, raw := range []string{tok, access} {
		if _, err := u.a.Authenticate(context.Background(), "Bearer "+raw); !unauthenticated(err) {
			t.Errorf("a cached token outlived its key: %v", err)
		}
	}
}

package e2e

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"testing"

	"github.com/google/uuid"
)

// TestHydraAuthorizationCodeThroughTheBinary: an end user signs in to an
// app with Hydra's authorization-code flow (the test plays the browser and
// the app's login and consent screens through Hydra's admin API); the
// access token the app gets for the code is a JWT that the `dds` binary
// verifies through Hydra's JWKS, with the user id from `sub` and the
// roles from a claim the consent granted. Alice then reads only her own
// todos; bob, signed in the same way as a reader, reads every todo.
func TestHydraAuthorizationCodeThroughTheBinary(t *testing.T) {
	t.Parallel()
	h := newHydra(t)
	d := local
	tenantID, key := identityTenant(t, d)
	aud := "dds-" + uuid.NewString()
	clientID, secret := "app-"+uuid.NewString(), "secret-"+uuid.NewString()
	const callback = "http://127.0.0.1:1/callback" // never fetched: the code is read from the redirect
	h.call(t, 201, "POST", h.admin+"/admin/clients", map[string]any{"client_id": clientID, "client_secret": secret,
		"grant_types": []any{"authorization_code"}, "response_types": []any{"code"}, "scope": "openid",
		"redirect_uris": []any{callback}, "audience": []any{aud}, "token_endpoint_auth_method": "client_secret_post"}, nil)
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/providers", key, map[string]any{"name": "hydra-app", "issuer": h.public,
		"audience": aud, "claims": map[string]any{"userId": "sub", "roles": "ext.roles"}})

	signIn := func(user string, roles []any) string {
		t.Helper()
		jar, err := cookiejar.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		// The browser: follows nothing by itself, keeps Hydra's CSRF cookies.
		browser := &http.Client{Jar: jar, Transport: h.client.Transport, Timeout: h.client.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		visit := func(u string) *url.URL {
			t.Helper()
			res, err := browser.Get(u)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			loc, err := res.Location()
			if err != nil {
				t.Fatalf("GET %s: %d without a redirect", u, res.StatusCode)
			}
			return loc
		}
		state := uuid.NewString()
		login := visit(h.public + "/oauth2/auth?" + url.Values{"client_id": {clientID}, "response_type": {"code"}, "scope": {"openid"},
			"redirect_uri": {callback}, "state": {state}, "audience": {aud}}.Encode())
		challenge := login.Query().Get("login_challenge")
		if challenge == "" {
			t.Fatalf("no login challenge in %s", login)
		}
		// The app's login screen accepts the user.
		accepted := h.call(t, 200, "PUT", h.admin+"/admin/oauth2/auth/requests/login/accept?login_challenge="+url.QueryEscape(challenge),
			map[string]any{"subject": user}, nil)
		consent := visit(accepted["redirect_to"].(string))
		cc := consent.Query().Get("consent_challenge")
		if cc == "" {
			t.Fatalf("no consent challenge in %s", consent)
		}
		// Its consent screen grants the scope, DDS's audience and the roles claim.
		granted := h.call(t, 200, "PUT", h.admin+"/admin/oauth2/auth/requests/consent/accept?consent_challenge="+url.QueryEscape(cc),
			map[string]any{"grant_scope": []any{"openid"}, "grant_access_token_audience": []any{aud},
				"session": map[string]any{"access_token": map[string]any{"roles": roles}}}, nil)
		back := visit(granted["redirect_to"].(string))
		if back.Query().Get("state") != state || back.Query().Get("code") == "" {
			t.Fatalf("the callback: %s", back)
		}
		// The app's backend trades the code for tokens.
		tok := h.call(t, 200, "POST", h.public+"/oauth2/token", nil, url.Values{"grant_type": {"authorization_code"},
			"code": {back.Query().Get("code")}, "redirect_uri": {callback}, "client_id": {clientID}, "client_secret": {secret}})
		return tok["access_token"].(string)
	}

	alice := signIn("alice", []any{"member"})
	var who whoami
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/whoami", alice, nil).decode(t, &who)
	if who.TenantID != tenantID || who.Credential != "providerToken" || who.UserID != "alice" || !slices.Equal(who.Roles, []string{"member"}) {
		t.Fatalf("whoami with alice's authorization-code token: %+v", who)
	}
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", key, map[string]any{"title": "hers", "ownerId": "alice"})
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", key, map[string]any{"title": "his", "ownerId": "bob"})
	list := func(tok string) []string {
		t.Helper()
		return titles(d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo?limit=100", tok, nil).body(t)["items"].([]any))
	}
	if got := list(alice); !slices.Equal(got, []string{"hers"}) {
		t.Fatalf("alice (member) lists %v, want [hers]", got)
	}
	bob := signIn("bob", []any{"reader"})
	if got := list(bob); !slices.Equal(got, []string{"hers", "his"}) {
		t.Fatalf("bob (reader) lists %v, want both", got)
	}
	// A reader cannot write. A user whose roles claim names no role of the
	// tenant (and the provider has no default role) is who the token says,
	// with no permission: 403, and whoami says so.
	d.do(t, http.StatusForbidden, "POST", "/api/v1/dynamic/Todo", bob, map[string]any{"title": "x"})
	mallory := signIn("mallory", []any{"admin"})
	d.do(t, http.StatusForbidden, "GET", "/api/v1/dynamic/Todo", mallory, nil)
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/whoami", mallory, nil).decode(t, &who)
	if who.UserID != "mallory" || len(who.Roles) != 0 || len(who.Scopes) != 0 {
		t.Fatalf("whoami for a user without a role of the tenant: %+v", who)
	}
}

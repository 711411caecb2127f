package e2e

import (
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

// todos is the schema of the identity tests' tenants.
var todos = map[string]any{"name": "todos", "entities": []any{
	map[string]any{"name": "Todo", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true},
		map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
	}},
	map[string]any{"name": "Secret", "fields": []any{map[string]any{"name": "body", "type": "STRING"}}},
}}

// identityTenant creates a tenant with todos and the roles member (every
// operation on Todo) and reader (reads of Todo).
func identityTenant(t *testing.T, d *deployment) (tenantID, key string) {
	t.Helper()
	tenantID, key = d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, todos)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/member", key, map[string]any{"scopes": []any{"entity:Todo:*"},
		"rules": map[string]any{"Todo": map[string]any{"read": map[string]any{"ownerId": "$user.id"}}}})
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/reader", key, map[string]any{"scopes": []any{"entity:Todo:read"}})
	return tenantID, key
}

type whoami struct {
	TenantID, KeyID, Credential, UserID, ProviderID string
	Roles, Scopes                                   []string
}

func gql(t *testing.T, d *deployment, tenantID, cred, query string) (data map[string]any, errs []any) {
	t.Helper()
	var r struct {
		Data   map[string]any
		Errors []any
	}
	res := d.send(t, "POST", "/api/v1/dynamic-gql/"+tenantID, cred, map[string]any{"query": query})
	_ = json.Unmarshal(res.Body, &r)
	return r.Data, r.Errors
}

// send is do without a status check.
func (d *deployment) send(t *testing.T, method, path, cred string, body any) *response {
	t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(t.Context(), method, d.URL+path, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+cred)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	return &response{Status: res.StatusCode, Header: res.Header, Body: buf.Bytes()}
}

// A backend mints a user token with its key; the token is the user on
// REST, GraphQL and the subscription socket, with its role's scopes only.
func TestUserTokenThroughTheBinary(t *testing.T) {
	t.Parallel()
	d := local
	tenantID, key := identityTenant(t, d)
	var tok struct {
		AccessToken string
		ExpiresAt   time.Time
		Roles       []string
	}
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", key, map[string]any{"userId": "alice", "roles": []any{"member"},
		"claims": map[string]any{"org": "acme"}, "expiresIn": 600}).decode(t, &tok)
	if tok.AccessToken == "" || time.Until(tok.ExpiresAt) > 11*time.Minute || !slices.Equal(tok.Roles, []string{"member"}) {
		t.Fatalf("token response %+v", tok)
	}
	user := tok.AccessToken
	var who whoami
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/whoami", user, nil).decode(t, &who)
	if who.TenantID != tenantID || who.Credential != "userToken" || who.UserID != "alice" || !slices.Equal(who.Roles, []string{"member"}) ||
		!slices.Equal(who.Scopes, []string{"entity:Todo:*"}) {
		t.Fatalf("whoami %+v", who)
	}
	// REST: what the role's scopes allow, and nothing else.
	var todo struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", user, map[string]any{"title": "milk", "ownerId": "alice"}).decode(t, &todo)
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo/"+todo.ID, user, nil)
	d.do(t, http.StatusForbidden, "GET", "/api/v1/dynamic/Secret", user, nil)
	d.do(t, http.StatusForbidden, "GET", "/api/v1/schemas", user, nil)
	d.do(t, http.StatusForbidden, "POST", "/api/v1/api-keys", user, map[string]any{"name": "x", "scopes": []any{"entity:Todo:read"}})
	d.do(t, http.StatusForbidden, "POST", "/api/v1/auth/token", user, nil)
	d.do(t, http.StatusForbidden, "POST", "/api/v1/auth/token", user, map[string]any{"userId": "bob", "roles": []any{"member"}})

	// GraphQL: the user's schema shows Todo only.
	data, errs := gql(t, d, tenantID, user, `{ todos { id title } }`)
	if len(errs) > 0 || len(data["todos"].([]any)) != 1 {
		t.Fatalf("todos as alice: %v %v", data, errs)
	}
	if _, errs := gql(t, d, tenantID, user, `{ secrets { id } }`); len(errs) == 0 {
		t.Fatal("alice read secrets over GraphQL")
	}
	reader := d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", key, map[string]any{"userId": "bob", "roles": []any{"reader"}}).body(t)["accessToken"].(string)
	if _, errs := gql(t, d, tenantID, reader, `mutation { createTodo(input: {title: "x"}) { id } }`); len(errs) == 0 {
		t.Fatal("a reader created a todo over GraphQL")
	}
	d.do(t, http.StatusForbidden, "POST", "/api/v1/dynamic/Todo", reader, map[string]any{"title": "x"})

	// Bad requests name the field.
	for field, body := range map[string]map[string]any{
		"roles[0]":  {"userId": "x", "roles": []any{"ghost"}},
		"userId":    {"roles": []any{"member"}},
		"scopes":    {"userId": "x", "roles": []any{"member"}, "scopes": []any{"entity:*:read"}},
		"expiresIn": {"userId": "x", "roles": []any{"member"}, "expiresIn": 0},
	} {
		r := d.send(t, "POST", "/api/v1/auth/token", key, body)
		if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"`+field+`"`) {
			t.Errorf("%v: %d %s, want 400 naming %s", body, r.Status, r.Body, field)
		}
	}

	// The subscription socket accepts the user token.
	ws := "ws" + strings.TrimPrefix(d.URL, "http") + "/api/v1/dynamic-gql/ws"
	nodePath, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make test`")
	}
	cmd := exec.CommandContext(t.Context(), nodePath, filepath.Join(npmDir, "clients", "subscribe.mjs"), ws, user, `subscription { todoCreated { id title } }`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	events := readLines(out)
	events.await(t, 30*time.Second, "the graphql-ws client to connect with a user token", func(l json.RawMessage) bool {
		return strings.Contains(string(l), `"connected":true`)
	})
	for attempt := 0; ; attempt++ {
		if attempt == 30 {
			t.Fatal("no todoCreated event for 30 probes over a user token's socket")
		}
		var probe struct{ ID string }
		d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", key, map[string]any{"title": "probe", "ownerId": "alice"}).decode(t, &probe)
		if _, ok := events.find(time.Second, func(l json.RawMessage) bool { return strings.Contains(string(l), probe.ID) }); ok {
			break
		}
	}
	// The read rule holds on the socket: bob's todo never reaches alice's
	// subscription; her own, written after it, does.
	var bobs, hers struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", key, map[string]any{"title": "bob's", "ownerId": "bob"}).decode(t, &bobs)
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", key, map[string]any{"title": "hers", "ownerId": "alice"}).decode(t, &hers)
	next := events.await(t, 15*time.Second, "alice's own todo on her socket", func(l json.RawMessage) bool {
		return strings.Contains(string(l), hers.ID) || strings.Contains(string(l), bobs.ID)
	})
	if strings.Contains(string(next), bobs.ID) {
		t.Fatalf("bob's todo reached alice's subscription: %s", next)
	}
	// A revoked minting key ends the user token.
	minted := d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "backend", "scopes": []any{"entity:*:*", "user:*:create"}}).body(t)
	bobTok := d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", minted["key"].(string), map[string]any{"userId": "bob", "roles": []any{"reader"}}).body(t)["accessToken"].(string)
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo", bobTok, nil)
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/api-keys/"+minted["id"].(string), key, nil)
	d.do(t, http.StatusUnauthorized, "GET", "/api/v1/dynamic/Todo", bobTok, nil)
}

func (r *response) body(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}

// jwksServer is an identity provider's JWKS on a TLS server the
// deployment trusts (every httptest TLS server presents the same
// certificate, in DDS_WEBHOOK_CA_FILE).
type jwksServer struct {
	srv  *httptest.Server
	key  *rsa.PrivateKey
	kid  string
	hang atomic.Bool
	stop chan struct{}
}

func newJWKS(t *testing.T) *jwksServer {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	j := &jwksServer{key: k, kid: uuid.NewString(), stop: make(chan struct{})}
	j.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if j.hang.Load() {
			select {
			case <-j.stop:
			case <-r.Context().Done():
			}
			return
		}
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &k.PublicKey, KeyID: j.kid, Algorithm: "RS256", Use: "sig"}}})
	}))
	t.Cleanup(func() { close(j.stop); j.srv.Close() })
	return j
}

func (j *jwksServer) token(t *testing.T, iss, aud, sub string, extra jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"iss": iss, "aud": aud, "sub": sub, "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range extra {
		c[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = j.kid
	s, err := tok.SignedString(j.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A tenant's identity provider: its tokens are its users on REST and
// GraphQL, with the roles the claims name; hostile tokens are 401, and a
// provider whose JWKS hangs is 503 without holding other tokens up.
func TestProviderTokensThroughTheBinary(t *testing.T) {
	t.Parallel()
	d := local
	tenantID, key := identityTenant(t, d)
	j := newJWKS(t)
	iss := "https://idp-" + uuid.NewString() + ".example"
	var prov struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/providers", key, map[string]any{"name": "corp", "issuer": iss, "jwksUrl": j.srv.URL + "/jwks",
		"audience": "todo-app", "claims": map[string]any{"userId": "sub", "roles": "app.roles"}, "defaultRole": "reader"}).decode(t, &prov)
	var list struct{ Providers []map[string]any }
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/providers", key, nil).decode(t, &list)
	if len(list.Providers) != 1 || list.Providers[0]["issuer"] != iss {
		t.Fatalf("providers %v", list)
	}
	member := j.token(t, iss, "todo-app", "carol", jwt.MapClaims{"app": map[string]any{"roles": []string{"member", "unknown"}}})
	var who whoami
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/whoami", member, nil).decode(t, &who)
	if who.TenantID != tenantID || who.Credential != "providerToken" || who.UserID != "carol" || who.ProviderID != prov.ID ||
		!slices.Equal(who.Roles, []string{"member"}) || who.KeyID != "" {
		t.Fatalf("whoami %+v", who)
	}
	// The member role reads only its own todos (ownerId = $user.id, the
	// token's sub): one owned by carol, one by someone else.
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", member, map[string]any{"title": "from the IdP", "ownerId": "carol"})
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", key, map[string]any{"title": "someone else's", "ownerId": "erin"})
	if data, errs := gql(t, d, tenantID, member, `{ todos { id title } }`); len(errs) > 0 || len(data["todos"].([]any)) != 1 ||
		data["todos"].([]any)[0].(map[string]any)["title"] != "from the IdP" {
		t.Fatalf("GraphQL with a provider token: %v %v", data, errs)
	}
	// No roles claim: the provider's default role.
	plain := j.token(t, iss, "todo-app", "dave", nil)
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/whoami", plain, nil).decode(t, &who)
	if !slices.Equal(who.Roles, []string{"reader"}) {
		t.Fatalf("default role: %+v", who)
	}
	d.do(t, http.StatusForbidden, "POST", "/api/v1/dynamic/Todo", plain, map[string]any{"title": "x"})

	// Hostile tokens.
	other := newJWKS(t)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": iss, "aud": "todo-app", "sub": "x", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for name, tok := range map[string]string{
		"signed by another key": other.token(t, iss, "todo-app", "mallory", nil),
		"expired":               j.token(t, iss, "todo-app", "carol", jwt.MapClaims{"exp": time.Now().Add(-time.Hour).Unix()}),
		"other audience":        j.token(t, iss, "another-app", "carol", nil),
		"alg none":              none,
	} {
		if r := d.send(t, "GET", "/api/v1/dynamic/Todo", tok, nil); r.Status != 401 {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
	// The same (issuer, audience) cannot name a second tenant.
	_, key2 := d.tenant(t)
	d.do(t, http.StatusConflict, "POST", "/api/v1/auth/providers", key2, map[string]any{"name": "x", "issuer": iss, "jwksUrl": j.srv.URL + "/jwks", "audience": "todo-app"})
	// A JWKS that hangs: its provider's first token is 503 within the
	// fetch bound, and the verified token above is served meanwhile.
	h := newJWKS(t)
	h.hang.Store(true)
	hiss := "https://hanging-" + uuid.NewString() + ".example"
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/providers", key, map[string]any{"name": "slow", "issuer": hiss, "jwksUrl": h.srv.URL + "/jwks", "audience": "todo-app"})
	done := make(chan *response, 1)
	go func() {
		done <- d.send(t, "GET", "/api/v1/dynamic/Todo", h.token(t, hiss, "todo-app", "erin", nil), nil)
	}()
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo", member, nil)
	if r := <-done; r.Status != 503 {
		t.Fatalf("a token of a hanging JWKS: %d %s, want 503", r.Status, r.Body)
	}
	// Deleting the provider ends its tokens.
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/auth/providers/"+prov.ID, key, nil)
	d.do(t, http.StatusUnauthorized, "GET", "/api/v1/dynamic/Todo", member, nil)
}

// hydra is the Ory Hydra of the stack (deploy/stack.sh --with-hydra).
type hydra struct {
	public, admin string
	client        *http.Client
}

func newHydra(t *testing.T) *hydra {
	t.Helper()
	teststack.Need(t, "HYDRA_ADMIN_URL", "HYDRA_PUBLIC_URL", "HYDRA_CA_FILE")
	ca, err := os.ReadFile(os.Getenv("HYDRA_CA_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	h := &hydra{public: os.Getenv("HYDRA_PUBLIC_URL"), admin: os.Getenv("HYDRA_ADMIN_URL"),
		client: &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}}
	// Hydra makes its keys on first demand (seconds on a busy machine):
	// have them made before the server's bounded JWKS fetch.
	h.call(t, 200, "GET", h.public+"/.well-known/jwks.json", nil, nil)
	return h
}

func (h *hydra) call(t *testing.T, want int, method, u string, body any, form url.Values) map[string]any {
	t.Helper()
	var req *http.Request
	var err error
	if form != nil {
		req, err = http.NewRequestWithContext(t.Context(), method, u, strings.NewReader(form.Encode()))
		if err == nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
	} else {
		b, _ := json.Marshal(body)
		req, err = http.NewRequestWithContext(t.Context(), method, u, bytes.NewReader(b))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	res, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, u, err)
	}
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %v", method, u, res.StatusCode, m)
	}
	return m
}

// clientToken gets an access token (a JWT) with the client credentials
// grant.
func (h *hydra) clientToken(t *testing.T, id, secret, audience string) string {
	t.Helper()
	m := h.call(t, 200, "POST", h.public+"/oauth2/token", nil, url.Values{"grant_type": {"client_credentials"},
		"client_id": {id}, "client_secret": {secret}, "audience": {audience}})
	return m["access_token"].(string)
}

func kidOf(t *testing.T, tok string) string {
	t.Helper()
	p, _, err := jwt.NewParser().ParseUnverified(tok, jwt.MapClaims{})
	if err != nil {
		t.Fatal(err)
	}
	kid, _ := p.Header["kid"].(string)
	return kid
}

// Real tokens from Ory Hydra, found by OIDC discovery and verified through
// its JWKS, on REST and GraphQL; a key rotated in Hydra is picked up
// without restarting the server.
func TestHydraTokensThroughTheBinary(t *testing.T) {
	t.Parallel()
	h := newHydra(t)
	d := local
	tenantID, key := identityTenant(t, d)
	aud := "dds-" + uuid.NewString()
	clientID, secret := "c-"+uuid.NewString(), "secret-"+uuid.NewString()
	h.call(t, 201, "POST", h.admin+"/admin/clients", map[string]any{"client_id": clientID, "client_secret": secret,
		"grant_types": []any{"client_credentials"}, "audience": []any{aud}, "token_endpoint_auth_method": "client_secret_post"}, nil)
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/providers", key, map[string]any{"name": "hydra", "issuer": h.public,
		"audience": aud, "claims": map[string]any{"userId": "client_id"}, "defaultRole": "member"})

	tok := h.clientToken(t, clientID, secret, aud)
	var who whoami
	d.do(t, http.StatusOK, "GET", "/api/v1/auth/whoami", tok, nil).decode(t, &who)
	if who.TenantID != tenantID || who.Credential != "providerToken" || who.UserID != clientID || !slices.Equal(who.Roles, []string{"member"}) {
		t.Fatalf("whoami with a Hydra token: %+v", who)
	}
	// member reads its own todos only (rules.Todo.read: ownerId = $user.id).
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", tok, map[string]any{"title": "from Hydra", "ownerId": clientID})
	if data, errs := gql(t, d, tenantID, tok, `{ todos { title } }`); len(errs) > 0 || len(data["todos"].([]any)) != 1 {
		t.Fatalf("GraphQL with a Hydra token: %v %v", data, errs)
	}
	// A token for another audience is not this tenant's.
	d.do(t, http.StatusUnauthorized, "GET", "/api/v1/dynamic/Todo", h.clientToken(t, clientID, secret, ""), nil)

	// Rotate Hydra's access-token signing key: new tokens carry a new kid,
	// which the server fetches from Hydra's JWKS (at most once per
	// DDS_IDP_JWKS_MIN_REFETCH, so the first attempts may come too soon).
	h.call(t, 201, "POST", h.admin+"/admin/keys/hydra.jwt.access-token", map[string]any{"alg": "RS256", "use": "sig", "kid": "rotated-" + uuid.NewString()}, nil)
	rotated := h.clientToken(t, clientID, secret, aud)
	if kidOf(t, rotated) == kidOf(t, tok) {
		t.Fatalf("Hydra did not rotate: both tokens carry kid %s", kidOf(t, tok))
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r := d.send(t, "GET", "/api/v1/dynamic/Todo", rotated, nil)
		if r.Status == 200 {
			break
		}
		if r.Status != 401 || time.Now().After(deadline) {
			t.Fatalf("the rotated key's token: %d %s", r.Status, r.Body)
		}
		select {
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Todo", tok, nil)
}

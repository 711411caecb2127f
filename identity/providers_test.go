package identity_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/identity"
	"github.com/dds-project/dds/internal/testenv"
)

// roleSet: every tenant has the roles "member" and "viewer".
type roleSet struct{}

func (roleSet) Roles(_ context.Context, _ string, names []string) ([]auth.RoleGrant, error) {
	var out []auth.RoleGrant
	for _, n := range names {
		if n == "member" || n == "viewer" {
			out = append(out, auth.RoleGrant{Name: n, Version: 1})
		}
	}
	return out, nil
}

// idp is a test identity provider: a TLS server publishing a JWKS (and a
// discovery document) whose behaviour a test can change.
type idp struct {
	srv     *httptest.Server
	mu      sync.Mutex
	keys    map[string]*rsa.PrivateKey // kid -> key published
	signer  string                     // kid tokens are signed with
	mode    string                     // "", "garbage", "hang", "500"
	hang    chan struct{}
	fetches atomic.Int32
}

func newIDP(t *testing.T) *idp {
	t.Helper()
	p := &idp{keys: map[string]*rsa.PrivateKey{}, hang: make(chan struct{})}
	p.rotate(t)
	p.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/openid-configuration":
			_ = json.NewEncoder(w).Encode(map[string]string{"issuer": p.srv.URL, "jwks_uri": p.srv.URL + "/jwks"})
			return
		case "/jwks":
		default:
			http.NotFound(w, r)
			return
		}
		p.fetches.Add(1)
		p.mu.Lock()
		mode := p.mode
		var set jose.JSONWebKeySet
		for kid, k := range p.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: kid, Algorithm: "RS256", Use: "sig"})
		}
		p.mu.Unlock()
		switch mode {
		case "garbage":
			_, _ = w.Write([]byte("\x00\xffnot json{"))
		case "hang":
			select {
			case <-p.hang:
			case <-r.Context().Done():
			}
		case "500":
			w.WriteHeader(500)
		default:
			_ = json.NewEncoder(w).Encode(set)
		}
	}))
	t.Cleanup(func() {
		p.release()
		p.srv.Close()
	})
	return p
}

var releaseOnce sync.Map

func (p *idp) release() {
	if _, done := releaseOnce.LoadOrStore(p, true); !done {
		close(p.hang)
	}
}

// rotate publishes a new key and signs with it from now on.
func (p *idp) rotate(t *testing.T) string {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	kid := uuid.NewString()
	p.mu.Lock()
	p.keys[kid], p.signer = k, kid
	p.mu.Unlock()
	return kid
}

func (p *idp) setMode(m string) { p.mu.Lock(); p.mode = m; p.mu.Unlock() }

// token signs claims (iss defaults to the provider, aud to "app", exp to
// an hour from now) with the current key.
func (p *idp) token(t *testing.T, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"iss": p.srv.URL, "aud": "app", "sub": "alice", "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	for k, v := range claims {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	p.mu.Lock()
	kid, key := p.signer, p.keys[p.signer]
	p.mu.Unlock()
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = kid
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

type env struct {
	svc    *identity.Service
	tenant string
}

func newEnv(t *testing.T, opt identity.Options, p ...*idp) *env {
	t.Helper()
	pool := x509.NewCertPool()
	for _, x := range p {
		pool.AddCert(x.srv.Certificate())
	}
	opt.RootCAs, opt.AllowPrivate = pool, true
	svc, err := identity.New(testenv.DB(t), roleSet{}, opt)
	if err != nil {
		t.Fatal(err)
	}
	return &env{svc: svc, tenant: testenv.TenantRow(t, "idp-"+t.Name())}
}

func (e *env) register(t *testing.T, p *idp, in identity.CreateInput) *identity.Provider {
	t.Helper()
	if in.Issuer == "" {
		in.Issuer = p.srv.URL
	}
	if in.Audience == "" {
		in.Audience = "app"
	}
	if in.Name == "" {
		in.Name = "idp"
	}
	prov, err := e.svc.Create(context.Background(), e.tenant, in)
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

func code(err error) apperr.Code {
	if err == nil {
		return ""
	}
	return apperr.As(err).Code
}

// A provider's token (by JWKS URL or discovery) becomes the identity of
// its tenant, with the user id and roles by the claims mapping.
func TestProviderToken(t *testing.T) {
	t.Parallel()
	for _, discovery := range []bool{false, true} {
		t.Run(fmt.Sprint("discovery=", discovery), func(t *testing.T) {
			t.Parallel()
			p := newIDP(t)
			e := newEnv(t, identity.Options{}, p)
			in := identity.CreateInput{Claims: &identity.Claims{UserID: "uid", Roles: "realm_access.roles"}, DefaultRole: "viewer"}
			if !discovery {
				in.JWKSURL = p.srv.URL + "/jwks"
			}
			prov := e.register(t, p, in)
			id, err := e.svc.Verify(context.Background(), p.token(t, jwt.MapClaims{"uid": "u-1", "realm_access": map[string]any{"roles": []string{"member", "ghost"}}}))
			if err != nil {
				t.Fatal(err)
			}
			if id.TenantID != e.tenant || id.ProviderID != prov.ID || id.UserID != "u-1" || len(id.Roles) != 2 || id.Roles[0] != "member" ||
				id.DefaultRole != "viewer" || id.Claims["uid"] != "u-1" {
				t.Fatalf("identity %+v", id)
			}
			if _, err := e.svc.Verify(context.Background(), p.token(t, jwt.MapClaims{})); code(err) != apperr.Unauthenticated {
				t.Errorf("a token without the user id claim: %v", err)
			}
		})
	}
}

// Hostile tokens are 401: alg none, HS256 keyed with the public key, an
// expired or not-yet-valid token, another audience, another issuer, and a
// token signed by another tenant's provider but claiming this one's issuer.
func TestProviderRefusesHostileTokens(t *testing.T) {
	t.Parallel()
	p, other := newIDP(t), newIDP(t)
	e := newEnv(t, identity.Options{}, p, other)
	e.register(t, p, identity.CreateInput{JWKSURL: p.srv.URL + "/jwks"})
	o := &env{svc: e.svc, tenant: testenv.TenantRow(t, "idp-other-"+t.Name())}
	o.register(t, other, identity.CreateInput{JWKSURL: other.srv.URL + "/jwks"})
	good := p.token(t, nil)
	if _, err := e.svc.Verify(context.Background(), good); err != nil {
		t.Fatalf("the good token: %v", err)
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"iss": p.srv.URL, "aud": "app", "sub": "x", "exp": time.Now().Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	p.mu.Lock()
	pub, _ := x509.MarshalPKIXPublicKey(&p.keys[p.signer].PublicKey)
	p.mu.Unlock()
	hs := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"iss": p.srv.URL, "aud": "app", "sub": "x", "exp": time.Now().Add(time.Hour).Unix()})
	hs.Header["kid"] = p.signer
	hsTok, _ := hs.SignedString(pub)
	// Signed by the other tenant's provider, claiming this provider's issuer.
	forged := other.token(t, jwt.MapClaims{"iss": p.srv.URL})
	for name, tok := range map[string]string{
		"alg none":       none,
		"HS256 (pubkey)": hsTok,
		"expired":        p.token(t, jwt.MapClaims{"exp": time.Now().Add(-5 * time.Minute).Unix()}),
		"no exp":         p.token(t, jwt.MapClaims{"exp": nil}),
		"not yet valid":  p.token(t, jwt.MapClaims{"nbf": time.Now().Add(10 * time.Minute).Unix()}),
		"other audience": p.token(t, jwt.MapClaims{"aud": "another-app"}),
		"other issuer":   p.token(t, jwt.MapClaims{"iss": "https://elsewhere.example"}),
		"other tenant's": forged,
		"garbage":        "eyJhbGciOiJSUzI1NiJ9.\xff\xfe.abc",
	} {
		if id, err := e.svc.Verify(context.Background(), tok); code(err) != apperr.Unauthenticated {
			t.Errorf("%s: got %+v, %v; want 401", name, id, err)
		}
	}
	// The other tenant's own token is its tenant's, never this one's.
	if id, err := e.svc.Verify(context.Background(), other.token(t, nil)); err != nil || id.TenantID != o.tenant {
		t.Errorf("the other tenant's token: %+v %v", id, err)
	}
}

// A JWKS that returns garbage or an error, or hangs, makes its provider's
// new tokens 503 within the fetch bound; a token verified before keeps
// working while another request waits on the hanging JWKS.
func TestProviderJWKSFailures(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"garbage", "500", "hang"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			p := newIDP(t)
			e := newEnv(t, identity.Options{FetchTimeout: 300 * time.Millisecond, MinRefetch: time.Millisecond}, p)
			e.register(t, p, identity.CreateInput{JWKSURL: p.srv.URL + "/jwks"})
			p.setMode(mode)
			if _, err := e.svc.Verify(context.Background(), p.token(t, nil)); code(err) != apperr.Unavailable {
				t.Fatalf("first token with a %s JWKS: %v, want 503", mode, err)
			}
		})
	}
	t.Run("verified tokens do not wait", func(t *testing.T) {
		t.Parallel()
		p := newIDP(t)
		e := newEnv(t, identity.Options{FetchTimeout: time.Minute, VerifyTimeout: time.Minute, MinRefetch: time.Millisecond}, p)
		e.register(t, p, identity.CreateInput{JWKSURL: p.srv.URL + "/jwks"})
		old := p.token(t, nil)
		if _, err := e.svc.Verify(context.Background(), old); err != nil {
			t.Fatal(err)
		}
		p.setMode("hang")
		p.rotate(t) // a new kid: its token makes the service refetch, which hangs
		stuck := make(chan error, 1)
		go func() {
			_, err := e.svc.Verify(context.Background(), p.token(t, nil))
			stuck <- err
		}()
		for p.fetches.Load() < 2 { // the refetch has reached the hanging JWKS
			select {
			case err := <-stuck:
				t.Fatalf("the new token did not wait for the JWKS: %v", err)
			case <-time.After(5 * time.Millisecond):
			}
		}
		// While that fetch hangs, the already-verified token is answered.
		if _, err := e.svc.Verify(context.Background(), old); err != nil {
			t.Fatalf("a verified token during a hanging fetch: %v", err)
		}
		select {
		case err := <-stuck:
			t.Fatalf("the hanging fetch ended early: %v", err)
		default:
		}
		p.setMode("")
		p.release()
		if err := <-stuck; err == nil { // the fetch found an empty body: the new kid is still unknown
			t.Fatal("a token of an unpublished key was accepted")
		}
	})
}

// Unknown key ids refetch the JWKS at most once per interval, and a
// rotated key is picked up once the interval has passed.
func TestProviderKeyRotation(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	e := newEnv(t, identity.Options{MinRefetch: time.Hour}, p)
	e.register(t, p, identity.CreateInput{JWKSURL: p.srv.URL + "/jwks"})
	if _, err := e.svc.Verify(context.Background(), p.token(t, nil)); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		tok := jwt.NewWithClaims(jwt.SigningMethodRS256, jwt.MapClaims{"iss": p.srv.URL, "aud": "app", "sub": "x", "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = fmt.Sprintf("made-up-%d", i)
		k, _ := rsa.GenerateKey(rand.Reader, 1024)
		s, _ := tok.SignedString(k)
		if _, err := e.svc.Verify(context.Background(), s); code(err) != apperr.Unauthenticated {
			t.Fatalf("a made-up kid: %v", err)
		}
	}
	if n := p.fetches.Load(); n != 1 {
		t.Fatalf("20 unknown kids within the interval fetched the JWKS %d times, want 1", n)
	}

	q := newIDP(t)
	f := newEnv(t, identity.Options{MinRefetch: time.Nanosecond}, q)
	f.register(t, q, identity.CreateInput{JWKSURL: q.srv.URL + "/jwks"})
	if _, err := f.svc.Verify(context.Background(), q.token(t, nil)); err != nil {
		t.Fatal(err)
	}
	q.rotate(t)
	if id, err := f.svc.Verify(context.Background(), q.token(t, jwt.MapClaims{"sub": "after-rotation"})); err != nil || id.UserID != "after-rotation" {
		t.Fatalf("a token of the rotated key: %+v %v", id, err)
	}
}

// Registration follows the webhook URL rules, names the field, keeps
// (issuer, audience) unique across tenants, and deletion ends the tokens.
func TestProviderRegistration(t *testing.T) {
	t.Parallel()
	p := newIDP(t)
	svc, err := identity.New(testenv.DB(t), roleSet{}, identity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tenant := testenv.TenantRow(t, "idp-reg-"+t.Name())
	for _, c := range []struct {
		in    identity.CreateInput
		field string
	}{
		{identity.CreateInput{Name: "x", Issuer: "http://idp.example", Audience: "a"}, "issuer"},
		{identity.CreateInput{Name: "x", Issuer: "https://idp.example", JWKSURL: "https://127.0.0.1/jwks", Audience: "a"}, "jwksUrl"},
		{identity.CreateInput{Name: "x", Issuer: "https://169.254.169.254", Audience: "a"}, "issuer"},
		{identity.CreateInput{Name: "x", Issuer: "https://idp.example"}, "audience"},
		{identity.CreateInput{Name: "x", Issuer: "https://idp.example", Audience: "a", Claims: &identity.Claims{Roles: "a b"}}, "claims.roles"},
		{identity.CreateInput{Name: "x", Issuer: "https://idp.example", Audience: "a", DefaultRole: "ghost"}, "defaultRole"},
	} {
		_, err := svc.Create(context.Background(), tenant, c.in)
		if e := apperr.As(err); err == nil || e.Code != apperr.Validation || e.Details[0].Field != c.field {
			t.Errorf("%+v: %v, want a 400 naming %s", c.in, err, c.field)
		}
	}
	e := newEnv(t, identity.Options{}, p)
	prov := e.register(t, p, identity.CreateInput{JWKSURL: p.srv.URL + "/jwks"})
	other := testenv.TenantRow(t, "idp-reg2-"+t.Name())
	if _, err := e.svc.Create(context.Background(), other, identity.CreateInput{Name: "same", Issuer: p.srv.URL, Audience: "app", JWKSURL: p.srv.URL + "/jwks"}); code(err) != apperr.Conflict {
		t.Errorf("the same (issuer, audience) in another tenant: %v", err)
	}
	tok := p.token(t, nil)
	if _, err := e.svc.Verify(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(context.Background(), other, prov.ID); code(err) != apperr.NotFound {
		t.Errorf("another tenant deleted the provider: %v", err)
	}
	if err := e.svc.Delete(context.Background(), e.tenant, prov.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Verify(context.Background(), tok); code(err) != apperr.Unauthenticated {
		t.Errorf("a token of a deleted provider: %v", err)
	}
}

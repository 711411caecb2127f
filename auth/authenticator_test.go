package auth_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/internal/testenv"
)

const testSecret = "authenticator-test-secret-0123456789abcdef"

// fixture is a tenant with one key, and two authenticators over the same
// database: two server replicas, each with its own cache.
type fixture struct {
	keys   *auth.Keys
	tenant string
	key    auth.NewKeyResult
	a, b   *auth.Authenticator
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	d := testenv.DB(t)
	f := &fixture{keys: auth.NewKeys(d, "test"), tenant: testenv.TenantRow(t, "authn-"+t.Name())}
	scopes, _ := auth.ParseScopes([]string{"entity:*:read"})
	var err error
	if f.key, err = f.keys.Create(context.Background(), f.tenant, "k", scopes); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	// A cache TTL far longer than the test: a key cached by mistake stays.
	f.a = auth.NewAuthenticator(d, "test", []byte(testSecret), time.Hour, log)
	f.b = auth.NewAuthenticator(d, "test", []byte(testSecret), time.Hour, log)
	return f
}

// revoke revokes the key and tells both replicas, as the API and the
// dds_keys notification do.
func (f *fixture) revoke(t *testing.T) {
	t.Helper()
	if err := f.keys.Revoke(context.Background(), f.tenant, f.key.ID); err != nil {
		t.Error(err)
	}
	f.a.Revoked(f.key.ID)
	f.b.Revoked(f.key.ID)
}

func unauthenticated(err error) bool {
	return err != nil && apperr.As(err).Code == apperr.Unauthenticated
}

// A key's first use whose read raced its revocation (the read found the key
// valid, the revocation came before the answer was cached) must not leave
// the key cached as valid: the next request is refused. The same holds for
// an access token whose key is checked for the first time.
func TestRevocationWinsTheRaceWithAFirstUse(t *testing.T) {
	t.Parallel()
	for _, credential := range []string{"key", "token"} {
		t.Run(credential, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			bearer := "Bearer " + f.key.Key
			if credential == "token" {
				// Minted on b, verified on a, whose cache has never seen the key.
				p, err := f.b.Authenticate(context.Background(), bearer)
				if err != nil {
					t.Fatal(err)
				}
				tok, _, err := f.b.Mint(p, p.Scopes, time.Hour)
				if err != nil {
					t.Fatal(err)
				}
				bearer = "Bearer " + tok
			}
			var once sync.Once
			auth.SetAfterLookup(f.a, func() { once.Do(func() { f.revoke(t) }) })
			// In flight when the key was revoked: it may answer either way.
			_, _ = f.a.Authenticate(context.Background(), bearer)
			if _, err := f.a.Authenticate(context.Background(), bearer); !unauthenticated(err) {
				t.Fatalf("after the revocation the %s is still accepted (err %v)", credential, err)
			}
		})
	}
}

// Many first uses racing one revocation on two replicas: once the revocation
// has been seen by a replica, no later request there is accepted.
func TestRevocationUnderConcurrentFirstUses(t *testing.T) {
	t.Parallel()
	for trial := range 20 {
		f := newFixture(t)
		bearer := "Bearer " + f.key.Key
		var wg sync.WaitGroup
		start := make(chan struct{})
		for _, a := range []*auth.Authenticator{f.a, f.b, f.a, f.b} {
			wg.Go(func() {
				<-start
				for range 5 {
					_, _ = a.Authenticate(context.Background(), bearer)
				}
			})
		}
		close(start)
		f.revoke(t)
		wg.Wait()
		for i, a := range []*auth.Authenticator{f.a, f.b} {
			if _, err := a.Authenticate(context.Background(), bearer); !unauthenticated(err) {
				t.Fatalf("trial %d: replica %d accepts the revoked key (err %v)", trial, i, err)
			}
		}
	}
}

package identity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
	"golang.org/x/sync/singleflight"
)

// Algorithms a provider's token may be signed with: asymmetric only. "none"
// and HS* (a public key used as an HMAC secret) are refused before any key
// is looked at.
var algorithms = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

func algorithmNames() []string {
	out := make([]string, len(algorithms))
	for i, a := range algorithms {
		out[i] = string(a)
	}
	return out
}

// errUnavailable: the provider's keys could not be had (never fetched, and
// the fetch failed or timed out). Such a token is 503, not 401: it may be
// valid.
var errUnavailable = errors.New("the identity provider's keys are unavailable")

// errUnknownKey: the token names a key the provider's JWKS does not hold
// (after a refetch, or while refetches are throttled).
var errUnknownKey = errors.New("the token's signing key is not in the identity provider's JWKS")

// keySet is a provider's JWKS, fetched on first use and again when a token
// names a key it lacks (the provider rotated its keys), at most once per
// minRefetch: a stream of tokens with made-up key ids costs one fetch per
// interval, not one per token. Fetches are shared by concurrent
// verifications (singleflight) and run under their own deadline, so a
// JWKS that hangs holds a token of that provider for at most fetchTimeout
// and never a request carrying another, already-verified token.
// It implements go-oidc's KeySet.
type keySet struct {
	jwksURL string // "" until discovered
	issuer  string // for discovery, when jwksURL is not given
	fetcher *fetcher

	mu        sync.Mutex
	keys      *jose.JSONWebKeySet
	fetchedAt time.Time // last fetch attempt (success or not)
	sf        singleflight.Group
}

// fetcher is what a keySet fetches with.
type fetcher struct {
	client     *http.Client
	timeout    time.Duration // one fetch, end to end
	minRefetch time.Duration
	maxBytes   int64
	// allowPrivate lets discovered JWKS URLs name private hosts
	// (DDS_WEBHOOK_ALLOW_PRIVATE); the client's dialer enforces it too.
	allowPrivate bool
}

// VerifySignature verifies the JWS signature of raw with the provider's
// keys and returns its payload.
func (k *keySet) VerifySignature(ctx context.Context, raw string) ([]byte, error) {
	jws, err := jose.ParseSigned(raw, algorithms)
	if err != nil {
		return nil, fmt.Errorf("malformed token: %w", err)
	}
	if len(jws.Signatures) != 1 {
		return nil, errors.New("the token must carry exactly one signature")
	}
	kid := jws.Signatures[0].Header.KeyID
	k.mu.Lock()
	keys := k.keys
	stale := time.Since(k.fetchedAt) >= k.fetcher.minRefetch
	k.mu.Unlock()
	if keys != nil {
		if payload, found, err := verifyWith(jws, keys, kid); found {
			return payload, err
		}
		if !stale {
			return nil, errUnknownKey
		}
	}
	keys, err = k.refresh(ctx)
	if err != nil {
		return nil, err
	}
	if payload, found, err := verifyWith(jws, keys, kid); found {
		return payload, err
	}
	return nil, errUnknownKey
}

// ready makes sure keys were fetched once (errUnavailable if they cannot be).
func (k *keySet) ready(ctx context.Context) error {
	k.mu.Lock()
	have := k.keys != nil
	k.mu.Unlock()
	if have {
		return nil
	}
	_, err := k.refresh(ctx)
	return err
}

// verifyWith verifies jws with the key kid of keys (any key when the token
// names none); found reports whether a candidate key existed.
func verifyWith(jws *jose.JSONWebSignature, keys *jose.JSONWebKeySet, kid string) (payload []byte, found bool, err error) {
	cands := keys.Keys
	if kid != "" {
		cands = keys.Key(kid)
	}
	for i := range cands {
		if cands[i].Use != "" && cands[i].Use != "sig" {
			continue
		}
		found = true
		if p, err := jws.Verify(&cands[i]); err == nil {
			return p, true, nil
		}
	}
	if found {
		return nil, true, errors.New("the token's signature does not verify")
	}
	return nil, false, nil
}

// refresh fetches the JWKS (shared by concurrent callers, each waiting at
// most until its ctx ends) unless a fetch was attempted within minRefetch.
func (k *keySet) refresh(ctx context.Context) (*jose.JSONWebKeySet, error) {
	ch := k.sf.DoChan("jwks", func() (any, error) {
		k.mu.Lock()
		if time.Since(k.fetchedAt) < k.fetcher.minRefetch {
			keys := k.keys
			k.mu.Unlock()
			if keys == nil {
				return nil, errUnavailable
			}
			return keys, nil
		}
		k.fetchedAt = time.Now()
		k.mu.Unlock()
		fctx, cancel := context.WithTimeout(context.Background(), k.fetcher.timeout)
		defer cancel()
		keys, err := k.fetch(fctx)
		if err != nil {
			k.mu.Lock()
			have := k.keys
			k.mu.Unlock()
			if have != nil {
				return have, nil // keep serving the keys we have
			}
			return nil, fmt.Errorf("%w: %w", errUnavailable, err)
		}
		k.mu.Lock()
		k.keys = keys
		k.mu.Unlock()
		return keys, nil
	})
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("%w: %w", errUnavailable, ctx.Err())
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		return r.Val.(*jose.JSONWebKeySet), nil
	}
}

func (k *keySet) fetch(ctx context.Context) (*jose.JSONWebKeySet, error) {
	url := k.jwksURL
	if url == "" {
		var doc struct {
			Issuer  string `json:"issuer"`
			JWKSURI string `json:"jwks_uri"`
		}
		if err := k.fetcher.getJSON(ctx, strings.TrimSuffix(k.issuer, "/")+"/.well-known/openid-configuration", &doc); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		if doc.Issuer != k.issuer {
			return nil, fmt.Errorf("discovery: the document names issuer %q, not %q", doc.Issuer, k.issuer)
		}
		if err := checkURL(doc.JWKSURI, "jwks_uri", k.fetcher.allowPrivate); err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		url = doc.JWKSURI
	}
	var keys jose.JSONWebKeySet
	if err := k.fetcher.getJSON(ctx, url, &keys); err != nil {
		return nil, err
	}
	if len(keys.Keys) == 0 {
		return nil, errors.New("the JWKS holds no keys")
	}
	for _, key := range keys.Keys {
		if !key.Valid() || !key.IsPublic() {
			return nil, errors.New("the JWKS holds a key that is not a valid public key")
		}
	}
	return &keys, nil
}

// getJSON GETs url into v: 200 only, at most maxBytes, under ctx.
func (f *fetcher) getJSON(ctx context.Context, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := f.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return err
	}
	if int64(len(body)) > f.maxBytes {
		return fmt.Errorf("GET %s: the response exceeds %d bytes", url, f.maxBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: not JSON: %w", url, err)
	}
	return nil
}

package auth

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// A cached token's time checks are the parse's: it is live from its
// not-before up to (not including) its expiry, and never without an expiry.
func TestVerifiedTokenLive(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	tok := func(nbf, exp *jwt.NumericDate) *verifiedToken {
		return &verifiedToken{claims: tokenClaims{RegisteredClaims: jwt.RegisteredClaims{NotBefore: nbf, ExpiresAt: exp}}}
	}
	exp := jwt.NewNumericDate(now.Add(time.Hour))
	for _, c := range []struct {
		name string
		t    *verifiedToken
		at   time.Time
		want bool
	}{
		{"before expiry", tok(nil, exp), now, true},
		{"at expiry", tok(nil, exp), exp.Time, false},
		{"after expiry", tok(nil, exp), exp.Add(time.Second), false},
		{"no expiry", tok(nil, nil), now, false},
		{"before not-before", tok(jwt.NewNumericDate(now.Add(time.Minute)), exp), now, false},
		{"at not-before", tok(jwt.NewNumericDate(now), exp), now, true},
	} {
		if got := c.t.live(c.at); got != c.want {
			t.Errorf("%s: live = %v, want %v", c.name, got, c.want)
		}
	}
}

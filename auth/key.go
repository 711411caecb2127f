package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"strings"
)

// Key format: dds_<env>_<secret>, env "live" or "test", secret 52
// lower-case base32 characters (256 bits).
const keyPrefix = "dds_"

var enc = base32.StdEncoding.WithPadding(base32.NoPadding)

// NewKey returns a fresh key for env, its hash and its display prefix.
func NewKey(env string) (key string, hash []byte, prefix string) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand: " + err.Error())
	}
	key = keyPrefix + env + "_" + strings.ToLower(enc.EncodeToString(b))
	return key, HashKey(key), key[:len(keyPrefix)+len(env)+5]
}

// HashKey is what is stored: SHA-256 of the whole key.
func HashKey(key string) []byte {
	h := sha256.Sum256([]byte(key))
	return h[:]
}

// KeyEnv returns the env segment of a well-formed key.
func KeyEnv(key string) (string, bool) {
	if !strings.HasPrefix(key, keyPrefix) {
		return "", false
	}
	rest := key[len(keyPrefix):]
	i := strings.IndexByte(rest, '_')
	if i <= 0 || len(rest)-i-1 != 52 {
		return "", false
	}
	return rest[:i], true
}

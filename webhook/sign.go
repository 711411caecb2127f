package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// SecretPrefix starts every signing secret. A secret is "whsec_" followed by
// the standard base64 encoding of 32 random bytes: the form Standard Webhooks
// libraries (svix, standardwebhooks) accept as is.
const SecretPrefix = "whsec_"

// Header names set on every delivery.
const (
	HeaderSignature   = "X-Webhook-Signature" // sha256=<hex HMAC-SHA256(secret string, body)>
	HeaderSWID        = "webhook-id"          // the event id; same on every retry
	HeaderSWTimestamp = "webhook-timestamp"   // unix seconds of this attempt
	HeaderSWSignature = "webhook-signature"   // v1,<base64 HMAC-SHA256(key, id.timestamp.body)>
)

// NewSecret returns a fresh signing secret.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("signing secret: %w", err)
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(b), nil
}

// standardKey is the HMAC key of the Standard Webhooks signature: the bytes
// the base64 after "whsec_" decodes to. A secret not of that form (none
// DDS creates) is used verbatim.
func standardKey(secret string) []byte {
	if s, ok := strings.CutPrefix(secret, SecretPrefix); ok {
		if k, err := base64.StdEncoding.DecodeString(s); err == nil {
			return k
		}
	}
	return []byte(secret)
}

// BodySignature is the value of X-Webhook-Signature (docs/webhooks.md, "What a receiver gets"): the
// HMAC-SHA256 of the raw body keyed with the signing secret string exactly
// as returned at creation (including its "whsec_" prefix), hex-encoded.
func BodySignature(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// StandardSignature is the value of webhook-signature per Standard Webhooks:
// "v1," + base64(HMAC-SHA256(decoded secret, "<id>.<unix ts>.<body>")).
func StandardSignature(secret, msgID string, ts int64, body []byte) string {
	m := hmac.New(sha256.New, standardKey(secret))
	m.Write([]byte(msgID))
	m.Write([]byte{'.'})
	m.Write([]byte(strconv.FormatInt(ts, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// SignHeaders sets the content type and all signature headers on h for one
// attempt at time now. msgID is the event id.
func SignHeaders(h http.Header, secret, msgID string, now time.Time, body []byte) {
	ts := now.Unix()
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "DDS-Webhooks/1")
	h.Set(HeaderSignature, BodySignature(secret, body))
	h.Set(HeaderSWID, msgID)
	h.Set(HeaderSWTimestamp, strconv.FormatInt(ts, 10))
	h.Set(HeaderSWSignature, StandardSignature(secret, msgID, ts, body))
}

// VerifyBody checks an X-Webhook-Signature value in constant time; the
// reference for receivers, used by the tests.
func VerifyBody(secret string, body []byte, header string) bool {
	return hmac.Equal([]byte(BodySignature(secret, body)), []byte(header))
}

// VerifyStandard checks a webhook-signature header (which may list several
// space-separated signatures) in constant time.
func VerifyStandard(secret, msgID, ts string, body []byte, header string) bool {
	t, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return false
	}
	want := []byte(StandardSignature(secret, msgID, t, body))
	for _, sig := range strings.Fields(header) {
		if hmac.Equal([]byte(sig), want) {
			return true
		}
	}
	return false
}

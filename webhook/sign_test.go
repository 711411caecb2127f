package webhook

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/outbox"
)

func TestStandardSignatureKnownVector(t *testing.T) {
	// The published Standard Webhooks test vector: a receiver using any
	// Standard Webhooks library verifies what we send.
	got := StandardSignature("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("got %s want %s", got, want)
	}
}

func TestBodySignature(t *testing.T) {
	tests := []struct {
		secret, body, want string
	}{
		// RFC 4231 test case 2 (key "Jefe").
		{"Jefe", "what do ya want for nothing?", "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"},
		// The key is the secret string as shown, prefix included.
		{"whsec_AAAA", "", "sha256=" + hexHMAC("whsec_AAAA", "")},
	}
	for _, tt := range tests {
		if got := BodySignature(tt.secret, []byte(tt.body)); got != tt.want {
			t.Errorf("BodySignature(%q,%q)=%s want %s", tt.secret, tt.body, got, tt.want)
		}
		if !VerifyBody(tt.secret, []byte(tt.body), tt.want) {
			t.Errorf("VerifyBody rejected its own signature")
		}
		if VerifyBody(tt.secret, []byte(tt.body+" "), tt.want) {
			t.Errorf("VerifyBody accepted a changed body")
		}
	}
}

func TestSignHeaders(t *testing.T) {
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(secret, "whsec_") || len(secret) != len("whsec_")+44 {
		t.Fatalf("secret %q not of form whsec_<base64 of 32 bytes>", secret)
	}
	body := []byte(`{"id":"e1"}`)
	h := http.Header{}
	now := time.Unix(1700000000, 0)
	SignHeaders(h, secret, "e1", now, body)
	if h.Get("Content-Type") != "application/json" || h.Get("webhook-id") != "e1" || h.Get("webhook-timestamp") != "1700000000" {
		t.Fatalf("headers %v", h)
	}
	if !VerifyBody(secret, body, h.Get("X-Webhook-Signature")) {
		t.Fatal("X-Webhook-Signature does not verify")
	}
	if !VerifyStandard(secret, "e1", "1700000000", body, "v1,bm9wZQ== "+h.Get("webhook-signature")) {
		t.Fatal("webhook-signature does not verify")
	}
	if VerifyStandard(secret, "e2", "1700000000", body, h.Get("webhook-signature")) {
		t.Fatal("webhook-signature verified for another message id")
	}
}

func TestBody(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	for _, tc := range []struct {
		name string
		ev   outbox.Event
		want string
	}{
		{"entity", outbox.Event{ID: "e1", TenantID: "t1", TenantName: "Acme", Type: outbox.EntityCreated, Name: "Product", SubjectID: "p1",
			Record: json.RawMessage(`{"id": "p1", "price": 10.50}`), CreatedAt: at},
			`{"id":"e1","type":"entity.created","timestamp":"2026-01-02T03:04:05.000006Z","data":{"entityName":"Product","entityId":"p1","record":{"id":"p1","price":10.50}},"tenant":{"id":"t1","name":"Acme"}}`},
		{"relationship", outbox.Event{ID: "e2", TenantID: "t1", TenantName: "Acme", Type: outbox.RelationshipUpdated, Name: "authoredBy", SubjectID: "x1",
			Record: json.RawMessage(`{"id": "x1", "relationshipName": "authoredBy", "sourceEntity": "Post", "sourceId": "p1", "targetEntity": "User",
				"targetId": "u1", "properties": {"role": "editor"}, "createdAt": "2026-01-02T03:04:05Z"}`), CreatedAt: at},
			`{"id":"e2","type":"relationship.updated","timestamp":"2026-01-02T03:04:05.000006Z","data":{"relationshipName":"authoredBy","edgeId":"x1","sourceEntity":"Post","sourceId":"p1","targetEntity":"User","targetId":"u1","properties":{"role":"editor"}},"tenant":{"id":"t1","name":"Acme"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Body(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("body\n got %s\nwant %s", b, tc.want)
			}
		})
	}
	for _, typ := range []string{outbox.EntityCreated, outbox.RelationshipCreated} {
		if _, err := Body(outbox.Event{Type: typ, Record: json.RawMessage(`{`)}); err == nil {
			t.Fatalf("%s: want error for bad record JSON", typ)
		}
	}
}

func hexHMAC(key, msg string) string {
	return strings.TrimPrefix(BodySignature(key, []byte(msg)), "sha256=")
}

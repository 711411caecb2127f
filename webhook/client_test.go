package webhook

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/dds-project/dds/apperr"
)

func TestForbiddenAddr(t *testing.T) {
	tests := []struct {
		addr      string
		forbidden bool
	}{
		{"8.8.8.8", false},
		{"1.1.1.1", false},
		{"127.0.0.1", true},
		{"127.255.0.9", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"172.31.255.255", true},
		{"172.32.0.1", false},
		{"192.168.1.1", true},
		{"169.254.169.254", true}, // cloud metadata
		{"100.64.0.1", true},      // CGNAT
		{"100.128.0.1", false},
		{"0.0.0.0", true},
		{"224.0.0.1", true},
		{"255.255.255.255", true},
		{"2606:4700:4700::1111", false},
		{"::1", true},
		{"::", true},
		{"fe80::1", true},
		{"fc00::1", true},
		{"fd00:ec2::254", true}, // AWS IPv6 metadata
		{"ff02::1", true},
		{"::ffff:127.0.0.1", true}, // v4-mapped loopback
		{"::ffff:10.0.0.1", true},
		{"::ffff:8.8.8.8", false},
		{"64:ff9b::a9fe:a9fe", true}, // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", false},
		{"2002:7f00:1::", true}, // 6to4 of 127.0.0.1
		{"::127.0.0.1", true},   // IPv4-compatible
	}
	for _, tt := range tests {
		if got := ForbiddenAddr(netip.MustParseAddr(tt.addr)); got != tt.forbidden {
			t.Errorf("ForbiddenAddr(%s)=%v want %v", tt.addr, got, tt.forbidden)
		}
	}
}

func TestValidateTargetURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"https://example.com/hook", true},
		{"https://example.com:8443/a?b=c", true},
		{"http://example.com/hook", false},
		{"ftp://example.com", false},
		{"example.com/hook", false},
		{"https://", false},
		{"https://user:pw@example.com/", false},
		{"", false},
	}
	for _, tt := range tests {
		err := ValidateTargetURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("ValidateTargetURL(%q)=%v want ok=%v", tt.url, err, tt.ok)
		}
		if err != nil && (!apperr.Is(err, apperr.Validation) || apperr.As(err).Details[0].Field != "targetUrl") {
			t.Errorf("error %v does not name targetUrl", err)
		}
	}
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://example.com/", true},
		{"https://localhost/", false},
		{"https://127.0.0.1/", false},
		{"https://[::1]/", false},
		{"https://169.254.169.254/latest", false},
		{"https://8.8.8.8/", true},
	} {
		if err := ValidateTargetHost(tt.url, false); (err == nil) != tt.ok {
			t.Errorf("ValidateTargetHost(%q)=%v want ok=%v", tt.url, err, tt.ok)
		}
		if err := ValidateTargetHost(tt.url, true); err != nil {
			t.Errorf("ValidateTargetHost(%q, allowPrivate)=%v", tt.url, err)
		}
	}
}

// tlsClient returns a client trusting srv's certificate.
func tlsClient(t *testing.T, srv *httptest.Server, allowPrivate bool) *Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	c, err := NewClient(ClientConfig{AllowPrivate: allowPrivate, RootCAs: pool, MaxResponseBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func TestClientRefusesLoopbackOnDial(t *testing.T) {
	hits := 0
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits++ }))
	defer srv.Close()
	// The URL is a name ("localhost"), so the check must happen on the dialled IP.
	target := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	r := tlsClient(t, srv, false).Post(context.Background(), target, http.Header{}, []byte("{}"))
	if r.OK() || !strings.Contains(r.Err, "not public") || hits != 0 {
		t.Fatalf("want refusal, got %+v hits=%d", r, hits)
	}
	r = tlsClient(t, srv, false).Post(context.Background(), srv.URL, http.Header{}, []byte("{}"))
	if r.OK() || !strings.Contains(r.Err, "not public") || hits != 0 {
		t.Fatalf("want refusal of a literal loopback IP, got %+v hits=%d", r, hits)
	}
	r = tlsClient(t, srv, true).Post(context.Background(), srv.URL, http.Header{}, []byte("{}"))
	if !r.OK() || hits != 1 {
		t.Fatalf("allowPrivate: want 2xx, got %+v hits=%d", r, hits)
	}
}

func TestClientHTTPSOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Post(context.Background(), srv.URL, http.Header{}, nil)
	if r.OK() || !strings.Contains(r.Err, "https") {
		t.Fatalf("want https refusal, got %+v", r)
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	followed := false
	mux := http.NewServeMux()
	mux.HandleFunc("/hook", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/other", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/other", func(w http.ResponseWriter, r *http.Request) { followed = true })
	srv := httptest.NewTLSServer(mux)
	defer srv.Close()
	r := tlsClient(t, srv, true).Post(context.Background(), srv.URL+"/hook", http.Header{}, []byte("{}"))
	if r.OK() || r.StatusCode != http.StatusTemporaryRedirect || followed {
		t.Fatalf("redirect followed or counted as success: %+v followed=%v", r, followed)
	}
}

func TestClientCapsResponseBody(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 4096))
		for i := 0; i < 2048; i++ { // 8 MiB
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	r := tlsClient(t, srv, true).Post(context.Background(), srv.URL, http.Header{}, []byte("{}"))
	if !r.OK() || r.BodyBytes != 1024 {
		t.Fatalf("want 2xx with 1024 bytes read, got %+v", r)
	}
}

func TestClientNon2xxAndCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503) }))
	defer srv.Close()
	// Trust via a PEM file, as DDS_WEBHOOK_CA_FILE does.
	f := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(f, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(ClientConfig{AllowPrivate: true, CAFile: f})
	if err != nil {
		t.Fatal(err)
	}
	r := c.Post(context.Background(), srv.URL, http.Header{}, []byte("{}"))
	if r.OK() || r.StatusCode != 503 || r.Err != "HTTP 503" {
		t.Fatalf("want HTTP 503 failure, got %+v", r)
	}
	// Without the CA the certificate is not trusted.
	c2, _ := NewClient(ClientConfig{AllowPrivate: true})
	if r := c2.Post(context.Background(), srv.URL, http.Header{}, nil); r.OK() || r.StatusCode != 0 {
		t.Fatalf("untrusted certificate accepted: %+v", r)
	}
}

// The client keeps its connections to a receiver open between deliveries
// (http.Transport keeps only 2 idle connections per host unless told
// otherwise): over two rounds of concurrent deliveries no more than
// MaxConnsPerHost connections are ever opened, so the second round ran on
// the first one's. (Counting the second round's openings alone raced: a
// dial the transport started in the first round, for a request another
// connection then served, may reach the receiver during the second, and is
// still one of the first round's connections.)
func TestClientReusesConnectionsToAReceiver(t *testing.T) {
	var opened atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	const conc = 16
	c, err := NewClient(ClientConfig{AllowPrivate: true, RootCAs: pool, MaxConnsPerHost: conc})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	round := func() {
		var wg sync.WaitGroup
		for i := range 4 * conc {
			wg.Go(func() {
				if r := c.Send(context.Background(), srv.URL, "whsec_AAAA", fmt.Sprint("e", i), []byte(`{}`)); !r.OK() {
					t.Errorf("delivery %d: %+v", i, r)
				}
			})
		}
		wg.Wait()
	}
	round()
	first := opened.Load()
	if first > conc {
		t.Fatalf("%d connections opened for %d at once, want at most %d", first, conc, conc)
	}
	round()
	if n := opened.Load(); n > conc {
		t.Fatalf("%d connections opened over two rounds of %d at once (%d in the first), want at most %d: idle ones were not kept", n, conc, first, conc)
	}
}

package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/dds-project/dds/apperr"
)

// Defaults of the delivery client.
const (
	DefaultTimeout          = 5 * time.Second // 5 s per delivery attempt (docs/webhooks.md)
	DefaultMaxResponseBytes = 64 << 10
)

// ClientConfig configures the delivery HTTP client.
type ClientConfig struct {
	// AllowPrivate disables the address filter (DDS_WEBHOOK_ALLOW_PRIVATE);
	// for tests and closed networks only.
	AllowPrivate bool
	// CAFile is a PEM file of extra trusted roots (DDS_WEBHOOK_CA_FILE).
	CAFile string
	// RootCAs, when set, is trusted in addition to the system roots and CAFile.
	RootCAs *x509.CertPool
	// Timeout bounds one attempt end to end; DefaultTimeout when zero.
	Timeout time.Duration
	// MaxResponseBytes caps how much of a response body is read.
	MaxResponseBytes int64
	// MaxConnsPerHost bounds parallel connections to one receiver (0: 64).
	MaxConnsPerHost int
}

// Client POSTs deliveries. It follows no redirects, reads at most
// MaxResponseBytes of a response, speaks HTTPS only and, unless
// AllowPrivate, refuses to connect to non-public addresses. The check runs
// on the IP actually dialled (net.Dialer.Control), after DNS resolution, so
// a name that resolves to a public address at validation time and a private
// one later (DNS rebinding) is still refused.
type Client struct {
	hc      *http.Client
	maxBody int64
	timeout time.Duration
}

// Result is the outcome of one POST.
type Result struct {
	StatusCode int           // 0 when no response arrived
	Latency    time.Duration // request start to response body read
	Err        string        // empty on 2xx
	BodyBytes  int64         // response bytes read (at most the cap)
}

// Gone reports a 410 answer: the receiver asks to be unsubscribed
// (Standard Webhooks), so the webhook is disabled.
func (r Result) Gone() bool { return r.StatusCode == http.StatusGone }

// OK reports a 2xx answer.
func (r Result) OK() bool { return r.Err == "" && r.StatusCode >= 200 && r.StatusCode < 300 }

// NewClient builds a Client.
func NewClient(cfg ClientConfig) (*Client, error) {
	cfg = cfg.withDefaults()
	hc, err := NewHTTPClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{hc: hc, maxBody: cfg.MaxResponseBytes, timeout: cfg.Timeout}, nil
}

func (cfg ClientConfig) withDefaults() ClientConfig {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxResponseBytes <= 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.MaxConnsPerHost <= 0 {
		cfg.MaxConnsPerHost = 64
	}
	return cfg
}

// NewHTTPClient is the HTTP client of the webhook rules, for every request
// DDS makes to a URL a tenant gave (webhook deliveries, identity
// providers' discovery documents and JWKS): no redirects, no proxy, the
// system's roots plus CAFile, and unless AllowPrivate no connection to a
// non-public address (checked on the address dialled). Its Timeout bounds
// a whole request.
func NewHTTPClient(cfg ClientConfig) (*http.Client, error) {
	cfg = cfg.withDefaults()
	// x509.CertPool cannot be merged: an explicit pool replaces the system
	// roots, and the CA file is added to whichever pool is used.
	var roots *x509.CertPool
	if cfg.RootCAs != nil {
		roots = cfg.RootCAs.Clone()
	} else if roots, _ = x509.SystemCertPool(); roots == nil {
		roots = x509.NewCertPool()
	}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("webhook CA file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("webhook CA file %s: no PEM certificates", cfg.CAFile)
		}
	}
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if !cfg.AllowPrivate {
		dialer.Control = refusePrivate
	}
	tr := &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf and defeat the address check
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   cfg.Timeout,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   cfg.MaxConnsPerHost,
		MaxConnsPerHost:       cfg.MaxConnsPerHost,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     false,
	}
	return &http.Client{
		Transport: tr,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}, nil
}

// Close releases idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// Post sends body to target with header and reports the outcome. It never
// returns an error: every failure is a Result with Err set, recorded as an
// attempt.
func (c *Client) Post(ctx context.Context, target string, header http.Header, body []byte) Result {
	start := time.Now()
	if err := ValidateTargetURL(target); err != nil {
		return Result{Err: apperr.As(err).Message}
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return Result{Err: "bad request: " + err.Error(), Latency: time.Since(start)}
	}
	req.Header = header.Clone()
	resp, err := c.hc.Do(req)
	if err != nil {
		return Result{Err: c.describe(err), Latency: time.Since(start)}
	}
	n, _ := io.Copy(io.Discard, io.LimitReader(resp.Body, c.maxBody))
	resp.Body.Close()
	r := Result{StatusCode: resp.StatusCode, Latency: time.Since(start), BodyBytes: n}
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		r.Err = fmt.Sprintf("HTTP %d: redirect not followed", resp.StatusCode)
	default:
		r.Err = fmt.Sprintf("HTTP %d", resp.StatusCode)
	}
	return r
}

// describe renders a transport error without internal addresses of ours.
func (c *Client) describe(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err) {
		return "timeout after " + c.timeout.String()
	}
	return err.Error()
}

// errForbiddenAddr is returned by the dialer for a refused address.
type errForbiddenAddr struct{ addr netip.Addr }

func (e errForbiddenAddr) Error() string {
	return fmt.Sprintf("address %s is not public; refused (set DDS_WEBHOOK_ALLOW_PRIVATE=true to allow)", e.addr)
}

func refusePrivate(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("unexpected dial address %q", address)
	}
	if ForbiddenAddr(ap.Addr()) {
		return errForbiddenAddr{ap.Addr()}
	}
	return nil
}

// forbidden lists every non-public range refused by default.
var forbidden = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8",       // "this network"
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // carrier-grade NAT
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local, incl. cloud metadata 169.254.169.254
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments (incl. Oracle/Alibaba metadata 192.0.0.192)
		"192.0.2.0/24",    // documentation
		"192.88.99.0/24",  // 6to4 relay
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // documentation
		"203.0.113.0/24",  // documentation
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, broadcast
		"::/128",          // unspecified
		"::1/128",         // loopback
		"64:ff9b:1::/48",  // local-use NAT64
		"100::/64",        // discard
		"2001:db8::/32",   // documentation
		"fc00::/7",        // unique local (incl. AWS metadata fd00:ec2::254)
		"fe80::/10",       // link-local
		"fec0::/10",       // deprecated site-local
		"ff00::/8",        // multicast
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

var (
	nat64        = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour    = netip.MustParsePrefix("2002::/16")
	v4Compatible = netip.MustParsePrefix("::/96")
)

// ForbiddenAddr reports whether a is not a public unicast address. IPv4
// embedded in IPv6 (v4-mapped, NAT64 64:ff9b::/96, 6to4 2002::/16) is
// judged by the embedded IPv4 address.
func ForbiddenAddr(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64.Contains(a):
			return ForbiddenAddr(netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}))
		case sixToFour.Contains(a):
			return ForbiddenAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
		case v4Compatible.Contains(a): // deprecated IPv4-compatible
			return true
		}
	}
	for _, p := range forbidden {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// ValidateTargetURL checks a webhook target: an absolute https URL with a
// host and no credentials. It is a VALIDATION_ERROR naming targetUrl.
func ValidateTargetURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() {
		return apperr.Field("targetUrl", "must be an absolute https:// URL")
	}
	if u.Scheme != "https" {
		return apperr.Field("targetUrl", "must use https (TLS)")
	}
	if u.Hostname() == "" {
		return apperr.Field("targetUrl", "must name a host")
	}
	if u.User != nil {
		return apperr.Field("targetUrl", "must not contain credentials")
	}
	if len(s) > 2048 {
		return apperr.Field("targetUrl", "must be at most 2048 characters")
	}
	return nil
}

// ValidateTargetHost refuses, at create time, a target whose host is a
// literal non-public IP or "localhost" when private targets are not
// allowed. Names are resolved only when dialling (see Client).
func ValidateTargetHost(s string, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return apperr.Field("targetUrl", "must be an absolute https:// URL")
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return apperr.Field("targetUrl", "must not point at a loopback, private or link-local address")
	}
	if a, err := netip.ParseAddr(h); err == nil && ForbiddenAddr(a) {
		return apperr.Field("targetUrl", "must not point at a loopback, private or link-local address")
	}
	return nil
}

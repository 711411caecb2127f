package main

// The per-IP limit across servers, measured: three `dds serve` with the
// interface's limit (500 requests per minute per client address) behind a
// balancer of their own, one client sending far more than that, spread
// over the three; the cluster must admit at most the limit plus the slack
// the shared counters allow (ratelimit.Sync, docs/operations.md "Limits
// across servers"), and never limit the probes.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

const (
	limitPerMinute = 500                    // DDS_RATE_GLOBAL, the interface's per-IP limit
	limitSync      = 250 * time.Millisecond // DDS_RATE_SYNC_INTERVAL (its default)
	limitServers   = 3
	limitRate      = 100              // requests per second the client sends (6,000 a minute)
	limitLoad      = 12 * time.Second // how long it sends them: 1,200 requests
	// limitSyncTime bounds one sync statement's round trip on this busy
	// machine (a few ms when idle): counts travel an interval plus this.
	limitSyncTime = 100 * time.Millisecond
	// limitClientIP is the client's address (a loopback alias): not the
	// balancer's own 127.0.0.1, so the servers count the address HAProxy
	// forwards (DDS_TRUST_PROXY), as behind any balancer.
	limitClientIP = "127.0.0.7"
)

// limitSlack is how far past the limit the cluster may admit a client
// sending rate requests per second spread evenly over n servers: each
// admission checks the server's own counts plus the others' as of its last
// sync, and what it does not see of the others' are at most their counts
// of two sync periods (theirs before its read, and since): (n-1) servers ×
// rate/n × 2 (interval + statement time).
func limitSlack(n int, rate float64, interval, statement time.Duration) int {
	return int(math.Ceil(float64(n-1) * rate / float64(n) * 2 * (interval + statement).Seconds()))
}

type limitsResult struct {
	sent, admitted, refused int
	timedOut                int // admitted, then answered 503 QUERY_TIMEOUT (counted in admitted)
	slack                   int
	probes                  int // /livez, /readyz and /metrics calls after the limit was reached
}

// limits runs the measurement and returns what it found; an error is a
// failed expectation or a broken setup.
func (c *cluster) limits() (*limitsResult, error) {
	base := c.o.base + 20 // HAProxy at +20, the servers at +21..+23
	var servers []*node
	defer func() {
		for _, s := range servers {
			_ = s.terminate()
		}
	}()
	backends := ""
	for i := range limitServers {
		port := base + 1 + i
		env := append(append([]string{}, c.env...), fmt.Sprintf("DDS_HTTP_ADDR=127.0.0.1:%d", port),
			fmt.Sprintf("DDS_RATE_GLOBAL=%d", limitPerMinute), "DDS_RATE_SYNC_INTERVAL="+limitSync.String(), "DDS_TRUST_PROXY=true")
		s := &node{name: fmt.Sprintf("l%d", i+1), args: []string{c.o.bin, "serve"}, env: env, log: filepath.Join(c.tmp, fmt.Sprintf("limits-serve-%d.log", i+1))}
		if err := s.start(); err != nil {
			return nil, err
		}
		servers = append(servers, s)
		backends += fmt.Sprintf("    server l%d 127.0.0.1:%d check\n", i+1, port)
	}
	stats := filepath.Join(c.tmp, "haproxy-limits.sock")
	hap, err := haproxyNode(c.o.haproxy, c.tmp, "haproxy-limits", stats, base, []string{"option forwardfor"}, backends)
	if err != nil {
		return nil, err
	}
	if err := hap.start(); err != nil {
		return nil, err
	}
	servers = append(servers, hap)
	lb := &cluster{stats: stats}
	for i := range limitServers {
		if err := lb.awaitUp(fmt.Sprintf("l%d", i+1)); err != nil {
			return nil, err
		}
	}
	// The client's own address, one connection per request in flight.
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext:         (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(limitClientIP)}}).DialContext,
		MaxIdleConnsPerHost: 64,
	}}
	url := fmt.Sprintf("http://127.0.0.1:%d", base)
	get := func(path string, auth bool) (int, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url+path, nil)
		if err != nil {
			return 0, err
		}
		if auth {
			req.Header.Set("Authorization", "Bearer "+c.key)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
			// Who answered (HAProxy or a server) and why, for the report.
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 160))
			return resp.StatusCode, fmt.Errorf("%s", bytes.Join(bytes.Fields(b), []byte(" ")))
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil
	}
	// The limit's windows are minutes of the clock (ratelimit.Limiter): the
	// load runs inside one, so every request counts against the same 500.
	now := time.Now()
	if left := now.Truncate(time.Minute).Add(time.Minute).Sub(now); left < limitLoad+3*time.Second {
		time.Sleep(left + 2*limitSync) // the next window, once every server has synced into it
	}
	res := &limitsResult{slack: limitSlack(limitServers, limitRate, limitSync, limitSyncTime)}
	var admitted, refused, timedOut atomic.Int64
	var mu sync.Mutex
	var odd []string
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / limitRate)
	end := time.Now().Add(limitLoad)
	window := time.Now().Truncate(time.Minute)
	for time.Now().Before(end) {
		<-tick.C
		res.sent++
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, err := get("/api/v1/dynamic/Note?limit=1", true)
			switch {
			case err == nil && code == http.StatusOK:
				admitted.Add(1)
			case err == nil && code == http.StatusTooManyRequests:
				refused.Add(1)
			case code == http.StatusServiceUnavailable && strings.Contains(err.Error(), `"code":"QUERY_TIMEOUT"`):
				// Past the limit, a server ran out of time for the list
				// (on a loaded machine its statement waited over
				// DDS_STATEMENT_TIMEOUT): the limiter admitted it.
				admitted.Add(1)
				timedOut.Add(1)
			default:
				mu.Lock()
				odd = append(odd, fmt.Sprintf("%d %v", code, err))
				mu.Unlock()
			}
		}()
	}
	tick.Stop()
	wg.Wait()
	res.admitted, res.refused, res.timedOut = int(admitted.Load()), int(refused.Load()), int(timedOut.Load())
	if len(odd) > 0 {
		return res, fmt.Errorf("%d requests answered neither 200 nor 429: %v", len(odd), odd[:min(len(odd), 5)])
	}
	if !time.Now().Truncate(time.Minute).Equal(window) {
		return res, fmt.Errorf("the load crossed a minute boundary: its requests were counted in two windows")
	}
	// Still in the window, the client is over its limit: its ordinary
	// requests are refused, but the probes a balancer or scraper sends
	// from the same address never are.
	if code, err := get("/api/v1/dynamic/Note?limit=1", true); err != nil || code != http.StatusTooManyRequests {
		return res, fmt.Errorf("after the load a request answered %d (%w), want 429", code, err)
	}
	for range 10 {
		for _, p := range []string{"/livez", "/readyz", "/metrics"} {
			code, err := get(p, false)
			if err != nil || code != http.StatusOK {
				return res, fmt.Errorf("GET %s from the limited client answered %d (%w), want 200: probes are never limited", p, code, err)
			}
			res.probes++
		}
	}
	for i := range limitServers {
		if st, err := lb.serverStatus(fmt.Sprintf("l%d", i+1)); err != nil || st != "UP" {
			return res, fmt.Errorf("HAProxy sees l%d %s (%w): its health checks were limited", i+1, st, err)
		}
	}
	if res.admitted > limitPerMinute+res.slack {
		return res, fmt.Errorf("the cluster admitted %d requests of one client in a minute, more than %d + a slack of %d", res.admitted, limitPerMinute, res.slack)
	}
	return res, nil
}

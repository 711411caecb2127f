package main

// The second server's network: a namespace (deploy/cluster-net.sh) whose
// database link is a veth pair the check can cut, and whose balancer link
// HAProxy reaches it by. The stack's services listen on 127.0.0.1 only; a
// small TCP forwarder on the host end of the database link (10.231.N.1,
// same ports) takes the namespaced server's connections to them, so the cut
// link is its only way to Postgres, PgBouncer and Temporal.

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strings"
	"sync"
)

// The namespace and its subnets: 10.231.netN.0/30 (database link) and
// 10.232.netN.0/30 (balancer link).
const (
	netName = "dds-cc-s2"
	netN    = 77
)

var (
	dbHostIP = fmt.Sprintf("10.231.%d.1", netN)
	lbNSIP   = fmt.Sprintf("10.232.%d.2", netN)
)

func netScript(o options, args ...string) error {
	cmd := exec.CommandContext(context.Background(), "bash", append([]string{o.netScript}, args...)...) //nolint:gosec // G204: the check's own script
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %w\n%s", o.netScript, strings.Join(args, " "), err, out)
	}
	return nil
}

func netUp(o options) error   { return netScript(o, "up", netName, fmt.Sprint(netN)) }
func netDown(o options)       { _ = netScript(o, "down", netName) }
func netCut(o options) error  { return netScript(o, "cut", netName) }
func netHeal(o options) error { return netScript(o, "restore", netName) }

// nsServerAddr is where HAProxy reaches the namespaced server.
func (c *cluster) nsServerAddr(port int) string { return fmt.Sprintf("%s:%d", lbNSIP, port) }

// inNamespace makes s run in the namespace, listening on its balancer
// link, with every 127.0.0.1 address of its database and Temporal
// settings moved to the host end of the database link (and forwarded).
func (c *cluster) inNamespace(s *node, port int) error {
	s.args = append([]string{"ip", "netns", "exec", netName}, s.args...)
	env := make([]string, 0, len(s.env))
	for _, kv := range s.env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "DDS_HTTP_ADDR":
			v = c.nsServerAddr(port)
		case k == "DATABASE_URL" || k == "DATABASE_DIRECT_URL" || k == "TEMPORAL_ADDRESS" || strings.HasPrefix(k, "DATABASE_REPLICA_URL"):
			var err error
			if v, err = c.viaLink(v); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
		}
		env = append(env, k+"="+v)
	}
	s.env = env
	return nil
}

// viaLink rewrites each 127.0.0.1:port in v (a URL, a host:port, or a
// comma-separated list of them) to the database link's host end and
// forwards that port there.
func (c *cluster) viaLink(v string) (string, error) {
	parts := strings.Split(v, ",")
	for i, p := range parts {
		hostport := p
		if u, err := url.Parse(p); err == nil && u.Host != "" {
			hostport = u.Host
		}
		host, port, err := net.SplitHostPort(hostport)
		if err != nil || host != "127.0.0.1" {
			continue
		}
		if err := c.forward(port); err != nil {
			return "", err
		}
		parts[i] = strings.Replace(p, hostport, net.JoinHostPort(dbHostIP, port), 1)
	}
	return strings.Join(parts, ","), nil
}

// forward listens on the database link's host end at port and copies each
// connection to and from 127.0.0.1:port (once per port).
func (c *cluster) forward(port string) error {
	for _, l := range c.proxies {
		if strings.HasSuffix(l.Addr().String(), ":"+port) {
			return nil
		}
	}
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(dbHostIP, port))
	if err != nil {
		return fmt.Errorf("forward %s: %w", port, err)
	}
	c.proxies = append(c.proxies, l)
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return // closed
			}
			go pipe(in, "127.0.0.1:"+port)
		}
	}()
	return nil
}

func pipe(in net.Conn, to string) {
	defer in.Close()
	var d net.Dialer
	out, err := d.DialContext(context.Background(), "tcp", to)
	if err != nil {
		return // the service is down (a restart scenario): the client sees its connection end
	}
	defer out.Close()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _, _ = io.Copy(out, in); closeWrite(out) }()
	go func() { defer wg.Done(); _, _ = io.Copy(in, out); closeWrite(in) }()
	wg.Wait()
}

func closeWrite(c net.Conn) {
	if t, ok := c.(*net.TCPConn); ok {
		_ = t.CloseWrite()
	}
}

// Command clustercheck runs the production topology on this machine and
// breaks it on purpose (make cluster-check). It starts two `dds serve`
// behind HAProxy (health-checked on /readyz, DDS_SHUTDOWN_DRAIN set) and
// two `dds worker`, over the stack's Postgres (through PgBouncer in
// transaction mode when the stack runs it; reading from its streaming
// replica when the stack runs one) and Temporal server, each node its own
// process; the second server runs in a network namespace whose only way to
// Postgres is a veth pair the check can cut (deploy/cluster-net.sh).
// Every scenario drives creates and reads through HAProxy while a
// fault happens, then checks that every acknowledged write is readable and
// that its entity.created event reached a webhook receiver at least once,
// and prints one line of the fault table: the fault window (from the fault
// to the last failed request; no request may fail before the fault),
// requests failed, writes lost, events lost. In the kill-a-server scenario
// graphql-ws clients follow the events through HAProxy and must resume
// with their cursor (resume.go); at the end, three more servers with the
// per-IP limit on measure what the cluster admits of one client (limits.go).
//
// It restarts the stack's Postgres and Temporal server (deploy/stack.sh
// restart): make cluster-check gives it a stack of its own (.dds/cluster),
// never the one `make run` and `make test` share.
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/webhook"
)

const operatorToken = "cluster-operator-token-0123456789abcdef"

const limitsName = "the per-IP limit across 3 servers"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "clustercheck:", err)
		os.Exit(1)
	}
}

type options struct {
	bin, haproxy, stack, netScript, only string
	base                                 int
	load                                 time.Duration
}

func run() error {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/dds", "the dds binary")
	flag.StringVar(&o.haproxy, "haproxy", "haproxy", "the HAProxy binary")
	flag.IntVar(&o.base, "port", 18080, "HAProxy's port; servers, workers and the stats socket use the next ones")
	flag.DurationVar(&o.load, "load", 6*time.Second, "how long each scenario's load runs")
	flag.StringVar(&o.stack, "stack", "deploy/stack.sh", "the stack script (restarts Postgres and the Temporal server)")
	flag.StringVar(&o.netScript, "net", "deploy/cluster-net.sh", "the network namespace script")
	flag.StringVar(&o.only, "only", "", "run only the scenarios whose name contains this")
	flag.Parse()
	for _, v := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "DDS_TEMPORAL_SERVER_ADDRESS"} {
		if os.Getenv(v) == "" {
			return fmt.Errorf("%s is not set: run it with `make cluster-check`, which starts the stack", v)
		}
	}
	tmp, err := os.MkdirTemp("", "dds-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	// The namespace and the nodes go away on every way out, Ctrl-C included.
	var c *cluster
	var once sync.Once
	cleanup := func() {
		once.Do(func() {
			if c != nil {
				c.stop()
			}
			netDown(o)
		})
	}
	defer cleanup()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		<-sigs
		cleanup()
		os.RemoveAll(tmp)
		os.Exit(130)
	}()
	if err := netUp(o); err != nil {
		return err
	}
	c, err = startCluster(o, tmp)
	if err != nil {
		return err
	}
	if err := c.setup(); err != nil {
		return err
	}
	scenarios := []scenarioDef{
		{name: "kill -9 one server mid-load (restarted 2 s later)", ws: true, fault: func(c *cluster) error {
			if err := c.servers[0].kill(); err != nil {
				return err
			}
			time.Sleep(2 * time.Second) // the server stays dead for a while: the fault itself
			return c.servers[0].start()
		}},
		{name: "rolling restart of every server under load", fault: func(c *cluster) error {
			for _, s := range c.servers {
				if err := s.terminate(); err != nil {
					return err
				}
				if err := s.start(); err != nil {
					return err
				}
				if err := c.awaitUp(s.name); err != nil {
					return err
				}
			}
			return nil
		}},
		{name: "kill -9 one worker mid-backlog (restarted 2 s later)", fault: func(c *cluster) error {
			if err := c.workers[0].kill(); err != nil {
				return err
			}
			time.Sleep(2 * time.Second)
			return c.workers[0].start()
		}},
	}
	scenarios = append(scenarios, faultScenarios()...)
	var replicaReport string
	if c.replica {
		scenarios = append(scenarios, scenarioDef{name: "stop the replica (started again 2 s later)", fault: c.stopReplica(&replicaReport)})
	}
	fmt.Printf("\n%-62s %12s %8s %8s %11s %11s\n", "scenario", "fault window", "requests", "failed", "writes lost", "events lost")
	failed := false
	for _, sc := range scenarios {
		if !strings.Contains(sc.name, o.only) {
			continue
		}
		res, err := c.scenario(sc, o.load)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.name, err)
		}
		fmt.Printf("%-62s %12s %8d %8d %11d %11d\n", sc.name, res.window.Round(time.Millisecond), res.requests, res.failed, res.writesLost, res.eventsLost)
		for _, n := range res.notes {
			fmt.Println("   ", n)
		}
		if strings.HasPrefix(sc.name, "stop the replica") && replicaReport != "" {
			fmt.Println(replicaReport)
		}
		bad := sc.check(res)
		if res.problem != "" {
			bad = strings.TrimPrefix(bad+"; "+res.problem, "; ")
		}
		// A rolling restart, and a replica going away, must fail no request at all.
		if res.writesLost > 0 || res.eventsLost > 0 || (strings.HasPrefix(sc.name, "rolling") || strings.HasPrefix(sc.name, "stop the replica")) && res.failed > 0 || bad != "" {
			failed = true
			if bad != "" {
				fmt.Println("    FAILED:", bad)
			}
		}
		for _, e := range res.samples { // what the failed requests looked like
			fmt.Println("    e.g.", e)
		}
	}
	if strings.Contains(limitsName, o.only) {
		res, err := c.limits() // limits.go
		if res != nil {
			fmt.Printf("\n%s: sent %d requests from one address in %s (%d a minute), over %d servers syncing every %s\n",
				limitsName, res.sent, limitLoad, res.sent*int(time.Minute/limitLoad), limitServers, limitSync)
			fmt.Printf("    admitted %d, refused %d (limit %d, slack %d: at most %d); /livez, /readyz, /metrics answered %d probes while limited\n",
				res.admitted, res.refused, limitPerMinute, res.slack, limitPerMinute+res.slack, res.probes)
			if res.timedOut > 0 {
				fmt.Printf("    %d of the admitted answered 503 QUERY_TIMEOUT (the machine's load; they passed the limit)\n", res.timedOut)
			}
		}
		if err != nil {
			fmt.Println("    FAILED:", err)
			failed = true
		}
	}
	if failed {
		return errors.New("a scenario lost writes or events, failed requests it must not fail, a rolling restart or the replica's stop failed requests, or the limit did not hold")
	}
	fmt.Println("\nclustercheck: every scenario kept every acknowledged write and delivered every event")
	return nil
}

// node is one process of the topology, restartable.
type node struct {
	name string
	args []string
	env  []string
	log  string
	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{}
}

func (n *node) start() error {
	f, err := os.OpenFile(n.log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(context.Background(), n.args[0], n.args[1:]...) //nolint:gosec // G204: the dds binary and HAProxy the operator named, by design
	cmd.Env, cmd.Stdout, cmd.Stderr = n.env, f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(done) }()
	n.mu.Lock()
	n.cmd, n.done = cmd, done
	n.mu.Unlock()
	return nil
}

func (n *node) signal(sig syscall.Signal) error {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if err := cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not stop within 30 s of %v", n.name, sig)
	}
}

func (n *node) kill() error      { return n.signal(syscall.SIGKILL) }
func (n *node) terminate() error { return n.signal(syscall.SIGTERM) }

type cluster struct {
	o                options
	temporal         client.Client // the Temporal server, to see deliveries waiting for retry
	taskQueue        string
	failing          atomic.Bool // the webhook receiver answers 503 (deliveries then wait for retry)
	notes            []string    // the running scenario's observations
	proxies          []net.Listener
	url              string // HAProxy
	stats            string // HAProxy's stats socket
	servers, workers []*node
	haproxy          *node
	key              string
	mu               sync.Mutex
	delivered        map[string]bool // entity ids whose entity.created arrived
	receiver         *httptest.Server
	client           *http.Client
	replica          bool     // the servers read from the stack's replica (replica.go)
	env              []string // every node's environment (the servers add their address)
	direct           string   // the cluster's database, directly (not through the pooler)
	tmp              string   // the check's scratch directory (logs, HAProxy configurations)
}

func startCluster(o options, tmp string) (*cluster, error) {
	ctx := context.Background()
	direct, err := db.EnsureDatabase(ctx, os.Getenv("DATABASE_URL"), "dds_cluster")
	if err != nil {
		return nil, err
	}
	c := &cluster{o: o, url: fmt.Sprintf("http://127.0.0.1:%d", o.base), stats: filepath.Join(tmp, "haproxy.sock"),
		delivered: map[string]bool{}, client: &http.Client{Timeout: 30 * time.Second}}
	c.receiver = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.failing.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var p webhook.Payload
		b, _ := io.ReadAll(r.Body)
		if json.Unmarshal(b, &p) == nil && p.Type == "entity.created" {
			c.mu.Lock()
			c.delivered[p.Data.EntityID] = true
			c.mu.Unlock()
		}
	}))
	ca := filepath.Join(tmp, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.receiver.Certificate().Raw}), 0o600); err != nil {
		return c, err
	}
	c.taskQueue = "dds-cluster-" + randomHex(4)
	if c.temporal, err = client.Dial(client.Options{HostPort: os.Getenv("DDS_TEMPORAL_SERVER_ADDRESS"), Logger: quietLogger{}}); err != nil {
		return c, fmt.Errorf("the Temporal server: %w", err)
	}
	env := append(os.Environ(), "TEMPORAL_ADDRESS="+os.Getenv("DDS_TEMPORAL_SERVER_ADDRESS"),
		"DATABASE_URL="+direct, "DDS_JWT_SECRET=cluster-jwt-secret-0123456789abcdef0123", "DDS_OPERATOR_TOKEN="+operatorToken,
		"DDS_ENV=test", "DDS_TASK_QUEUE="+c.taskQueue, "DDS_RATE_GLOBAL=0", "DDS_RATE_AUTH=0", "DDS_RATE_TENANT=0",
		"DDS_WEBHOOK_ALLOW_PRIVATE=true", "DDS_WEBHOOK_CA_FILE="+ca, "DDS_SHUTDOWN_DRAIN=1500ms",
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+filepath.Join(tmp, "files"),
		"FILE_STORAGE_LOCAL_SECRET=cluster-local-storage-secret-0123456789", "DDS_PUBLIC_URL="+c.url)
	if pooled := os.Getenv("DDS_TEST_PGBOUNCER_URL"); pooled != "" {
		u, err := url.Parse(pooled)
		if err != nil {
			return c, err
		}
		u.Path = "/dds_cluster"
		env = append(env, "DATABASE_URL="+u.String(), "DATABASE_DIRECT_URL="+direct, "DDS_DB_POOL_MODE=transaction")
	}
	replica, err := replicaURL("dds_cluster") // replica.go
	if err != nil {
		return c, err
	}
	if replica != "" {
		if err := commitSynchronously(ctx, direct); err != nil {
			return c, err
		}
		env = append(env, "DATABASE_REPLICA_URLS="+replica)
		c.replica = true
	}
	c.env, c.tmp, c.direct = env, tmp, direct
	mig := exec.CommandContext(context.Background(), o.bin, "migrate") //nolint:gosec // G204: the dds binary the operator named, by design
	mig.Env = env
	if out, err := mig.CombinedOutput(); err != nil {
		return c, fmt.Errorf("dds migrate: %w\n%s", err, out)
	}
	for i := range 2 {
		s := &node{name: fmt.Sprintf("s%d", i+1), args: []string{o.bin, "serve"}, log: filepath.Join(tmp, fmt.Sprintf("serve-%d.log", i+1)),
			env: append(append([]string{}, env...), fmt.Sprintf("DDS_HTTP_ADDR=127.0.0.1:%d", o.base+1+i))}
		if i == 1 { // the second server lives in the namespace
			if err := c.inNamespace(s, o.base+1+i); err != nil {
				return c, err
			}
		}
		w := &node{name: fmt.Sprintf("w%d", i+1), args: []string{o.bin, "worker"}, log: filepath.Join(tmp, fmt.Sprintf("worker-%d.log", i+1)),
			env: append(append([]string{}, env...), fmt.Sprintf("DDS_WORKER_HTTP_ADDR=127.0.0.1:%d", o.base+11+i))}
		c.servers, c.workers = append(c.servers, s), append(c.workers, w)
	}
	// WebSocket tunnels outlive the default timeouts; a request whose server
	// died before answering is sent again to the other one.
	c.haproxy, err = haproxyNode(o.haproxy, tmp, "haproxy", c.stats, o.base,
		[]string{"timeout tunnel 1h", "retries 3", "option redispatch", "retry-on conn-failure"},
		fmt.Sprintf("    server s1 127.0.0.1:%d check\n    server s2 %s check\n", o.base+1, c.nsServerAddr(o.base+2)))
	if err != nil {
		return c, err
	}
	for _, n := range append(append([]*node{c.haproxy}, c.servers...), c.workers...) {
		if err := n.start(); err != nil {
			return c, err
		}
	}
	for _, s := range c.servers {
		if err := c.awaitUp(s.name); err != nil {
			return c, err
		}
	}
	return c, nil
}

func (c *cluster) stop() {
	for _, n := range append(append(append([]*node{}, c.servers...), c.workers...), c.haproxy) {
		if n != nil {
			_ = n.terminate()
		}
	}
	for _, l := range c.proxies {
		l.Close()
	}
	if c.temporal != nil {
		c.temporal.Close()
	}
	c.receiver.Close()
}

// awaitUp waits until HAProxy reports the server UP (its stats socket).
func (c *cluster) awaitUp(name string) error { return c.awaitStatus(name, "UP", 60*time.Second) }

// awaitStatus waits until HAProxy reports the server in state want.
func (c *cluster) awaitStatus(name, want string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if st, err := c.serverStatus(name); err == nil && st == want {
			return nil
		}
		time.Sleep(50 * time.Millisecond) // polling HAProxy's state: there is nothing to wait on
	}
	return fmt.Errorf("HAProxy did not see %s %s within %s", name, want, within)
}

func (c *cluster) serverStatus(name string) (string, error) {
	d := net.Dialer{Timeout: time.Second}
	conn, err := d.DialContext(context.Background(), "unix", c.stats)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "show stat\n"); err != nil {
		return "", err
	}
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ",")
		if len(f) > 17 && f[0] == "dds" && f[1] == name {
			return f[17], nil
		}
	}
	return "", fmt.Errorf("no %s in HAProxy's stats", name)
}

func (c *cluster) do(method, path, key string, body any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(context.Background(), method, c.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *cluster) setup() error {
	code, b, err := c.do("POST", "/api/v1/tenants", operatorToken, map[string]any{"name": "cluster-" + randomHex(3)})
	if err != nil || code != http.StatusCreated {
		return fmt.Errorf("create tenant: %d %s: %w", code, b, err)
	}
	var t struct{ APIKey string }
	if err := json.Unmarshal(b, &t); err != nil {
		return err
	}
	c.key = t.APIKey
	schema := map[string]any{"name": "cluster", "entities": []any{map[string]any{"name": "Note", "fields": []any{
		map[string]any{"name": "n", "type": "INTEGER"}}}}}
	if code, b, err := c.do("POST", "/api/v1/schemas", c.key, schema); err != nil || code != http.StatusCreated {
		return fmt.Errorf("create schema: %d %s: %w", code, b, err)
	}
	if code, b, err := c.do("POST", "/api/v1/webhooks", c.key, map[string]any{"targetUrl": c.receiver.URL + "/hook", "eventTypes": []string{"entity.created"}}); err != nil || code != http.StatusCreated {
		return fmt.Errorf("create webhook: %d %s: %w", code, b, err)
	}
	return nil
}

type result struct {
	window                 time.Duration
	requests, failed       int
	writesLost, eventsLost int
	codes                  map[int]int // failed requests by HTTP status (0: no answer)
	samples, notes         []string
	problem                string // what the scenario's own checks found wrong
}

// scenarioDef is one fault: prepare runs before the load starts, fault a
// third into it; events must all arrive within eventsWithin of the load's
// end (90 s when zero); check names what else the scenario must not do.
type scenarioDef struct {
	name         string
	fault        func(c *cluster) error
	prepare      func(c *cluster) error
	eventsWithin time.Duration
	only503      bool // every failed request is a 503 (the database is unavailable)
	ws           bool // graphql-ws clients follow the scenario's events and must resume (resume.go)
}

func (sc scenarioDef) check(res *result) string {
	if sc.only503 {
		for code, n := range res.codes {
			if code != http.StatusServiceUnavailable {
				return fmt.Sprintf("%d failed requests answered %d, not 503", n, code)
			}
		}
	}
	return ""
}

// note records an observation of the running scenario, printed under its line.
func (c *cluster) note(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

// scenario runs 8 clients of creates and reads for load; the fault starts
// after a third of it. A client whose request failed waits 100 ms before
// its next one, as a client backing off would (Retry-After asks for more).
func (c *cluster) scenario(sc scenarioDef, load time.Duration) (*result, error) {
	var (
		mu            sync.Mutex
		acked         []string
		first, last   time.Time
		requests, bad atomic.Int64
		samples       []string
		codes         = map[int]int{}
	)
	c.mu.Lock()
	c.notes = nil
	c.mu.Unlock()
	if sc.prepare != nil {
		if err := sc.prepare(c); err != nil {
			return nil, err
		}
	}
	var subs *subscribers
	if sc.ws {
		var err error
		if subs, err = c.startSubscribers(); err != nil {
			return nil, err
		}
		defer subs.stop() // idempotent: verify stops them too
	}
	fail := func(code int, what string) {
		bad.Add(1)
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if first.IsZero() {
			first = now
		}
		last = now
		codes[code]++
		if len(samples) < 5 {
			samples = append(samples, what)
		}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				requests.Add(1)
				code, b, err := c.do("POST", "/api/v1/dynamic/Note", c.key, map[string]any{"n": i*1_000_000 + n})
				if err != nil || code != http.StatusCreated {
					fail(code, fmt.Sprintf("create: %d %.120s %v", code, b, err))
					time.Sleep(100 * time.Millisecond) // back off, as a client would
					continue
				}
				var rec struct{ ID string }
				_ = json.Unmarshal(b, &rec)
				mu.Lock()
				acked = append(acked, rec.ID)
				mu.Unlock()
				requests.Add(1)
				if code, b, err := c.do("GET", "/api/v1/dynamic/Note/"+rec.ID, c.key, nil); err != nil || code != http.StatusOK {
					fail(code, fmt.Sprintf("read: %d %.120s %v", code, b, err))
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	time.Sleep(load / 3) // load before the fault: the scenario's shape, not a wait for a condition
	mu.Lock()
	early := bad.Load()
	faultStart := time.Now()
	mu.Unlock()
	faultErr := sc.fault(c)
	time.Sleep(load / 3)
	close(stop)
	wg.Wait()
	if faultErr != nil {
		return nil, faultErr
	}
	for _, s := range c.servers {
		if err := c.awaitUp(s.name); err != nil {
			return nil, err
		}
	}
	if early > 0 {
		return nil, fmt.Errorf("%d requests failed before the fault: %v", early, samples)
	}
	c.mu.Lock()
	res := &result{requests: int(requests.Load()), failed: int(bad.Load()), samples: samples, codes: codes, notes: c.notes}
	c.mu.Unlock()
	if res.failed > 0 {
		res.notes = append(res.notes, "failed requests by status (0: no answer): "+fmt.Sprint(codes))
	}
	if !first.IsZero() {
		res.window = last.Sub(faultStart) // from the fault to the last failed request
	}
	for _, id := range acked {
		if code, b, err := c.do("GET", "/api/v1/dynamic/Note/"+id, c.key, nil); err != nil || code != http.StatusOK {
			res.writesLost++
			res.samples = append(res.samples, fmt.Sprintf("lost write %s: %d %.80s %v", id, code, b, err))
		}
	}
	// Every acknowledged write's event reaches the receiver, at least once.
	within := sc.eventsWithin
	if within == 0 {
		within = 90 * time.Second
	}
	start := time.Now()
	deadline := start.Add(within)
	for {
		missing := 0
		c.mu.Lock()
		for _, id := range acked {
			if !c.delivered[id] {
				missing++
			}
		}
		c.mu.Unlock()
		if missing == 0 || time.Now().After(deadline) {
			res.eventsLost = missing
			if sc.eventsWithin > 0 {
				res.notes = append(res.notes, fmt.Sprintf("every event delivered %s after the load ended", time.Since(start).Round(time.Second)))
			}
			break
		}
		time.Sleep(200 * time.Millisecond) // deliveries arrive on their own schedule
	}
	if subs != nil {
		notes, problem, err := subs.verify(c, 60*time.Second)
		if err != nil {
			return nil, err
		}
		res.notes, res.problem = append(res.notes, notes...), problem
	}
	return res, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// haproxyNode writes the configuration of an HAProxy (named name, its
// files in dir) listening on 127.0.0.1:bind with an admin stats socket at
// stats, balancing round robin over servers (haproxy.cfg server lines) that
// it health-checks on /readyz every 300 ms, with the extra lines given
// (options that hold for the frontend and backend both: they go in
// defaults), and returns its node, not yet started.
//
// A check may take 1 s ("timeout check"; without it, the 300 ms interval):
// on a loaded machine slow answers took every server out at once. A killed
// or cut-off server still fails its check at once (refused, or 503).
func haproxyNode(bin, dir, name, stats string, bind int, extra []string, servers string) (*node, error) {
	var defaults strings.Builder
	for _, l := range extra {
		defaults.WriteString("    " + l + "\n")
	}
	cfg := fmt.Sprintf(`global
    maxconn 4096
    stats socket %s mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 1s
%sfrontend api
    bind 127.0.0.1:%d
    default_backend dds
backend dds
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 300ms fall 2 rise 2
%s`, stats, defaults.String(), bind, servers)
	path := filepath.Join(dir, name+".cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		return nil, err
	}
	return &node{name: name, args: []string{bin, "-db", "-f", path}, env: os.Environ(), log: filepath.Join(dir, name+".log")}, nil
}

// Package e2e tests the dds binary as users run it: `dds serve` and
// `dds worker` as separate processes on free ports (as a deployment does),
// configured only through the environment, driven over the network by the
// clients users use (graphql-ws, graphql-http's audit, standardwebhooks,
// openapi-typescript + tsc, a Connect client, plain HTTP for presigned
// URLs). It runs under `make test`, which starts Postgres, Temporal, MinIO
// and PgBouncer and installs Node.js and the npm packages of deploy/npm.
//
// The "local" deployment reaches Postgres through PgBouncer in transaction
// mode, as production runs it (DDS_DB_POOL_MODE=transaction, LISTEN and the
// migrations on DATABASE_DIRECT_URL), so every surface these tests drive
// is proven through the pooler; the "s3" deployment connects directly.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// deployment is one `dds serve` + `dds worker` pair over one database.
type deployment struct {
	URL   string // the server's base URL (from DDS_HTTP_ADDR; no DDS_PUBLIC_URL is set)
	env   []string
	procs []*process
}

var (
	bin       string      // the built dds binary
	npmDir    string      // deploy/npm, with node_modules
	local, s3 *deployment // FILE_STORAGE_DRIVER=local and =s3 (MinIO)
	webhookCA string      // PEM of the certificate every httptest TLS server uses
)

func TestMain(m *testing.M) {
	code := 1
	defer func() { os.Exit(code) }()
	if !teststack.Present("DATABASE_URL", "TEMPORAL_ADDRESS", "FILE_STORAGE_S3_ENDPOINT", "DDS_TEST_PGBOUNCER_URL") {
		return
	}
	tmp, err := os.MkdirTemp("", "dds-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	defer os.RemoveAll(tmp)
	stop, err := setup(tmp)
	defer stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e setup:", err)
		return
	}
	code = m.Run()
}

// setup builds the binary, migrates a database per deployment and starts
// both deployments; stop ends every process it started, by PID.
func setup(tmp string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for _, v := range []string{"DATABASE_URL", "TEMPORAL_ADDRESS", "FILE_STORAGE_S3_ENDPOINT", "DDS_TEST_PGBOUNCER_URL"} {
		if os.Getenv(v) == "" {
			return stop, fmt.Errorf("%s is not set: run the tests with `make test` (it starts the services and exports them)", v)
		}
	}
	root, err := filepath.Abs("..")
	if err != nil {
		return stop, err
	}
	npmDir = filepath.Join(root, "deploy", "npm")
	bin = filepath.Join(tmp, "dds")
	build := exec.Command("go", "build", "-o", bin, "./cmd/dds")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		return stop, fmt.Errorf("go build ./cmd/dds: %w\n%s", err, out)
	}
	// Every httptest TLS server presents the same certificate: the worker
	// trusts it for webhook deliveries to the test's receiver.
	probe := httptest.NewTLSServer(nil)
	cert := probe.Certificate()
	probe.Close()
	webhookCA = filepath.Join(tmp, "webhook-ca.pem")
	trusted := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	// Hydra (stack.sh --with-hydra) serves HTTPS with its own certificate:
	// the server trusts it for discovery and JWKS fetches, as it would an
	// identity provider's CA.
	if f := os.Getenv("HYDRA_CA_FILE"); f != "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return stop, err
		}
		trusted = append(trusted, b...)
	}
	if err := os.WriteFile(webhookCA, trusted, 0o600); err != nil {
		return stop, err
	}

	for _, d := range []struct {
		dst    **deployment
		driver string
	}{{&local, "local"}, {&s3, "s3"}} {
		dep, depStop, err := start(tmp, d.driver)
		stops = append(stops, depStop)
		if err != nil {
			return stop, fmt.Errorf("%s deployment: %w", d.driver, err)
		}
		*d.dst = dep
	}
	return stop, nil
}

// start runs one deployment: its own database (so its relay sees only its
// own events), its own Temporal task queue, a free port. The database is
// named after the one DATABASE_URL names, so two checkouts testing against
// one Postgres with their own databases never share a relay's outbox.
func start(tmp, driver string) (*deployment, func(), error) {
	noop := func() {}
	base, err := url.Parse(os.Getenv("DATABASE_URL"))
	if err != nil {
		return nil, noop, fmt.Errorf("DATABASE_URL: %w", err)
	}
	name := strings.TrimPrefix(base.Path, "/") + "_e2e_" + driver
	dbURL, err := db.EnsureDatabase(context.Background(), os.Getenv("DATABASE_URL"), name)
	if err != nil {
		return nil, noop, err
	}
	port, err := freePort()
	if err != nil {
		return nil, noop, err
	}
	probes, err := freePort()
	if err != nil {
		return nil, noop, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	queue := fmt.Sprintf("dds-e2e-%s-%d", driver, time.Now().UnixNano())
	env := append(os.Environ(),
		"DATABASE_URL="+dbURL,
		"DDS_HTTP_ADDR="+addr,
		fmt.Sprintf("DDS_WORKER_HTTP_ADDR=127.0.0.1:%d", probes),
		"DDS_PUBLIC_URL=", // the default must follow DDS_HTTP_ADDR
		"DDS_JWT_SECRET=e2e-jwt-secret-0123456789abcdef0123456789",
		"DDS_OPERATOR_TOKEN=e2e-operator-token-0123456789abcdef",
		"DDS_ENV=test",
		"DDS_TASK_QUEUE="+queue,
		"DDS_RATE_GLOBAL=0", "DDS_RATE_AUTH=0", "DDS_RATE_TENANT=0",
		"DDS_WEBHOOK_ALLOW_PRIVATE=true", // the test's receiver listens on 127.0.0.1
		"DDS_WEBHOOK_CA_FILE="+webhookCA,
		"DDS_WEBHOOK_RETRY_SCHEDULE=1s,1s", // retries run out within seconds (operational events)
		"DDS_IDP_JWKS_MIN_REFETCH=200ms",   // key rotation is picked up within the test's patience
		"FILE_STORAGE_DRIVER="+driver,
		"FILE_STORAGE_LOCAL_DIR="+filepath.Join(tmp, "files-"+driver),
		"FILE_STORAGE_LOCAL_SECRET=e2e-local-storage-secret-0123456789",
	)
	if driver == "local" {
		pooled, err := url.Parse(os.Getenv("DDS_TEST_PGBOUNCER_URL"))
		if err != nil {
			return nil, noop, fmt.Errorf("DDS_TEST_PGBOUNCER_URL: %w", err)
		}
		pooled.Path = "/" + name
		env = append(env, "DATABASE_URL="+pooled.String(), "DATABASE_DIRECT_URL="+dbURL, "DDS_DB_POOL_MODE=transaction")
	}
	d := &deployment{URL: "http://" + addr, env: env}
	stop := func() {
		for _, p := range d.procs {
			p.stop()
		}
	}
	if out, err := d.run("migrate"); err != nil {
		return nil, stop, fmt.Errorf("dds migrate: %w\n%s", err, out)
	}
	for _, cmd := range []string{"serve", "worker"} {
		p, err := startProcess(bin, []string{cmd}, env, filepath.Join(tmp, driver+"-"+cmd+".log"))
		if err != nil {
			return nil, stop, err
		}
		d.procs = append(d.procs, p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := d.awaitReady(ctx, queue); err != nil {
		return nil, stop, err
	}
	return d, stop, nil
}

// awaitReady waits until the server answers /readyz and the worker polls
// its task queue.
func (d *deployment) awaitReady(ctx context.Context, queue string) error {
	for {
		for _, p := range d.procs {
			if p.exited() {
				return fmt.Errorf("%s exited before it was ready:\n%s", p.name, p.logTail())
			}
		}
		if r, err := http.Get(d.URL + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if err := wait(ctx, "dds serve to answer /readyz"); err != nil {
			return err
		}
	}
	tc, err := client.Dial(client.Options{HostPort: os.Getenv("TEMPORAL_ADDRESS")})
	if err != nil {
		return err
	}
	defer tc.Close()
	for {
		if p := d.procs[1]; p.exited() {
			return fmt.Errorf("dds worker exited:\n%s", p.logTail())
		}
		res, err := tc.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
		if err == nil && len(res.GetPollers()) > 0 {
			return nil
		}
		if err := wait(ctx, "dds worker to poll "+queue); err != nil {
			return err
		}
	}
}

// wait pauses before the next check of a condition, or fails when ctx ends.
func wait(ctx context.Context, what string) error {
	select {
	case <-ctx.Done():
		return fmt.Errorf("timed out waiting for %s", what)
	case <-time.After(50 * time.Millisecond):
		return nil
	}
}

// run runs a short dds command (migrate, tenant create) with the
// deployment's environment.
func (d *deployment) run(args ...string) ([]byte, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = d.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return append(out, stderr.Bytes()...), err
	}
	return out, nil
}

// tenant creates a tenant with `dds tenant create --json`.
func (d *deployment) tenant(t *testing.T) (id, key string) {
	t.Helper()
	out, err := d.run("tenant", "create", "--name", t.Name(), "--json")
	if err != nil {
		t.Fatalf("dds tenant create: %v\n%s", err, out)
	}
	var c struct{ TenantID, APIKey string }
	if err := json.Unmarshal(out, &c); err != nil || c.APIKey == "" {
		t.Fatalf("dds tenant create --json printed %q", out)
	}
	return c.TenantID, c.APIKey
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// process is a started dds process; its output goes to a log file that a
// failure prints.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

func startProcess(bin string, args, env []string, logFile string) (*process, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, err
	}
	p := &process{name: "dds " + strings.Join(args, " "), cmd: cmd, log: logFile, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	return p, nil
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop ends the process by its PID: SIGTERM (graceful shutdown), then
// SIGKILL if it has not exited after 15 s.
func (p *process) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *process) logTail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// --- HTTP helpers -----------------------------------------------------------

type response struct {
	Status int
	Header http.Header
	Body   []byte
}

func (r *response) decode(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode (status %d): %v: %s", r.Status, err, r.Body)
	}
}

// do sends a JSON request with a bearer credential and checks the status.
func (d *deployment) do(t *testing.T, want int, method, path, key string, body any) *response {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, d.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, res.StatusCode, want, b)
	}
	return &response{Status: res.StatusCode, Header: res.Header, Body: b}
}

// node runs a script of deploy/npm with Node.js; stdin may be nil.
func node(t *testing.T, stdin []byte, script string, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make test` (its set-up installs Node.js)")
	}
	cmd := exec.CommandContext(t.Context(), path, append([]string{filepath.Join(npmDir, script)}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\n%s%s", script, err, out, stderr.Bytes())
	}
	return out
}

// lines collects the JSON lines a long-running client prints.
type lines struct {
	mu   sync.Mutex
	all  []json.RawMessage
	next int // lines before next were already returned or skipped
	more chan struct{}
}

func readLines(r io.Reader) *lines {
	l := &lines{more: make(chan struct{}, 1)}
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			l.mu.Lock()
			l.all = append(l.all, json.RawMessage(bytes.Clone(sc.Bytes())))
			l.mu.Unlock()
			select {
			case l.more <- struct{}{}:
			default:
			}
		}
	}()
	return l
}

// find returns the first line not returned before for which match is
// true, waiting up to timeout for more lines.
func (l *lines) find(timeout time.Duration, match func(json.RawMessage) bool) (json.RawMessage, bool) {
	deadline := time.After(timeout)
	for {
		l.mu.Lock()
		for ; l.next < len(l.all); l.next++ {
			if match(l.all[l.next]) {
				l.next++
				line := l.all[l.next-1]
				l.mu.Unlock()
				return line, true
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-deadline:
			return nil, false
		}
	}
}

// await is find that fails the test on timeout, showing what was printed.
func (l *lines) await(t *testing.T, timeout time.Duration, what string, match func(json.RawMessage) bool) json.RawMessage {
	t.Helper()
	line, ok := l.find(timeout, match)
	if !ok {
		l.mu.Lock()
		defer l.mu.Unlock()
		t.Fatalf("timed out waiting for %s; the client printed: %s", what, bytes.Join(rawLines(l.all), []byte("\n")))
	}
	return line
}

func rawLines(ls []json.RawMessage) [][]byte {
	out := make([][]byte, len(ls))
	for i, l := range ls {
		out[i] = l
	}
	return out
}

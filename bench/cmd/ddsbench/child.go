package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/dds-project/dds/bench/load"
)

// proc is a child process the bench started (and stops by its pid).
type proc struct {
	name string
	cmd  *exec.Cmd
	URL  string
	errs *tailBuffer
}

func (p *proc) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM, waits up to 10 s, then kills.
func (p *proc) Stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

// tailBuffer keeps the last 8 KB a child wrote to stderr, for errors.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 8<<10 {
		t.b = t.b[len(t.b)-8<<10:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return strings.TrimSpace(string(t.b)) }

// moduleRoot is the directory of the repository's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("run ddsbench from inside the DDS repository")
	}
	return filepath.Dir(gomod), nil
}

// buildDDS builds the dds binary into dir.
func buildDDS(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "dds")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/dds")
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build ./cmd/dds: %w", err)
	}
	return bin, nil
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func freeAddr(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// ddsEnv is the environment of the dds child processes: the caller's,
// with rate limits off, warn-level logs and fresh secrets.
type ddsEnv struct {
	databaseURL   string
	addr          string
	jwtSecret     string
	operatorToken string
	maxConns      int
}

func (e ddsEnv) list() []string {
	env := []string{}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "DDS_") && !strings.HasPrefix(kv, "DATABASE_URL=") {
			env = append(env, kv)
		}
	}
	return append(env,
		"DATABASE_URL="+e.databaseURL,
		"DDS_HTTP_ADDR="+e.addr,
		"DDS_PUBLIC_URL=http://"+e.addr,
		"DDS_JWT_SECRET="+e.jwtSecret,
		"DDS_OPERATOR_TOKEN="+e.operatorToken,
		"DDS_RATE_GLOBAL=0", "DDS_RATE_TENANT=0", "DDS_RATE_AUTH=0",
		"DDS_LOG_LEVEL=warn",
		fmt.Sprintf("DDS_DB_MAX_CONNS=%d", e.maxConns),
	)
}

// migrateDDS runs `dds migrate`.
func migrateDDS(ctx context.Context, bin string, env ddsEnv) error {
	cmd := exec.CommandContext(ctx, bin, "migrate")
	cmd.Env = env.list()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = os.Stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("dds migrate: %w: %s", err, stderr.String())
	}
	return nil
}

// startDDS runs `dds serve` as a child and waits until /healthz answers.
func startDDS(ctx context.Context, bin string, env ddsEnv) (*proc, error) {
	// Not CommandContext: ctx bounds the start-up only; the child outlives it and is stopped by
	// proc.Stop (SIGTERM, then kill) or by Pdeathsig if this process dies.
	cmd := exec.Command(bin, "serve") //nolint:noctx // lifetime managed by proc.Stop, see above
	cmd.Env = env.list()
	cmd.SysProcAttr = dieWithParent()
	errs := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, io.MultiWriter(errs, prefixWriter("dds serve: "))
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: "dds serve", cmd: cmd, URL: "http://" + env.addr, errs: errs}
	if err := load.WaitHealthy(ctx, p.URL+"/healthz", 30*time.Second); err != nil {
		p.Stop()
		return nil, fmt.Errorf("dds serve did not become healthy: %w: %s", err, errs)
	}
	return p, nil
}

// startMinimal re-executes this program as the minimal-handler server of
// kind ("get" or "create") for tenant, in its own process like dds serve,
// and reads its URL from its stdout.
func startMinimal(ctx context.Context, kind, tenantID, databaseURL string, maxConns int) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	// Not CommandContext, as for startDDS: proc.Stop and Pdeathsig end the child.
	cmd := exec.Command(self, "-minimal-server", kind, "-tenant", tenantID, "-max-conns", fmt.Sprint(maxConns)) //nolint:noctx // lifetime managed by proc.Stop
	cmd.Env = append(os.Environ(), "DATABASE_URL="+databaseURL)
	cmd.SysProcAttr = dieWithParent()
	errs := &tailBuffer{}
	cmd.Stderr = io.MultiWriter(errs, prefixWriter("minimal server: "))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &proc{name: "minimal " + kind, cmd: cmd, errs: errs}
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		if s.Scan() {
			line <- s.Text()
		}
		close(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u, ok := <-line:
		if !ok || !strings.HasPrefix(u, "http://") {
			p.Stop()
			return nil, fmt.Errorf("minimal server did not start: %s", errs)
		}
		p.URL = u
	case <-time.After(30 * time.Second):
		p.Stop()
		return nil, fmt.Errorf("minimal server did not start within 30s: %s", errs)
	case <-ctx.Done():
		p.Stop()
		return nil, ctx.Err()
	}
	return p, nil
}

// dieWithParent has the kernel send SIGTERM to a child whose parent dies
// (even by SIGKILL), so no server outlives the bench.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}

type prefixed struct{ prefix string }

// prefixWriter copies a child's stderr to ours, line-prefixed.
func prefixWriter(prefix string) io.Writer { return prefixed{prefix} }

func (p prefixed) Write(b []byte) (int, error) {
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		fmt.Fprintln(os.Stderr, p.prefix+l)
	}
	return len(b), nil
}

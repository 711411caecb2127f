package load

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// Process is a child process a benchmark started (a `dds serve`, HAProxy),
// with the URL it answers on. Stop ends it by its pid.
type Process struct {
	URL string
	Cmd *exec.Cmd
}

// ServerEnv is the environment of a benchmark's `dds serve`: this process's,
// with fresh secrets, rate limits off, warnings only, and local file storage
// under work.
func ServerEnv(work string) []string {
	return append(os.Environ(), "DDS_ENV=live", "DDS_OPERATOR_TOKEN="+RandHex(24), "DDS_JWT_SECRET="+RandHex(32),
		"DDS_RATE_GLOBAL=0", "DDS_RATE_AUTH=0", "DDS_RATE_TENANT=0", "DDS_LOG_LEVEL=warn",
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+filepath.Join(work, "store"), "DDS_PUBLIC_URL=")
}

// Serve starts `bin serve` with env on addr (host:port) and waits until it
// is ready.
func Serve(ctx context.Context, bin string, env []string, addr string) (*Process, error) {
	cmd := exec.CommandContext(ctx, bin, "serve") //nolint:gosec // G204: the dds binary the operator named
	cmd.Env = append(append([]string{}, env...), "DDS_HTTP_ADDR="+addr)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &Process{URL: "http://" + addr, Cmd: cmd}
	if err := WaitHealthy(ctx, p.URL+"/readyz", 30*time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// Stop ends the process with SIGTERM and waits for it (idempotent).
func (p *Process) Stop() {
	if p.Cmd.ProcessState != nil {
		return
	}
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	_ = p.Cmd.Wait()
}

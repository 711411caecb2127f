package load

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
)

// Deployment is `dds serve` and `dds worker` built from this tree as
// child processes, on a Temporal dev server of their own (the
// DDS_TEMPORAL_CLI binary) and local file storage in a temporary
// directory, with rate limits off: what the benchmarks of durable jobs
// measure against. Close stops it all and removes the directory.
type Deployment struct {
	Base   string    // http://127.0.0.1:port of dds serve
	Serve  *exec.Cmd // its process (peak RSS is sampled by pid)
	Worker *exec.Cmd
	close  []func()
}

// StartDeployment builds and starts a deployment over dbURL with the task
// queue name and the extra environment (KEY=value), and waits until the
// server is live.
func StartDeployment(ctx context.Context, dbURL, name string, extra ...string) (_ *Deployment, err error) {
	cli := os.Getenv("DDS_TEMPORAL_CLI")
	if cli == "" {
		return nil, fmt.Errorf("DDS_TEMPORAL_CLI must be set (run through make bench)")
	}
	d := &Deployment{}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	work, err := os.MkdirTemp("", "dds-bench-"+name+"-")
	if err != nil {
		return nil, err
	}
	d.close = append(d.close, func() { _ = os.RemoveAll(work) })
	bin := filepath.Join(work, "dds")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/dds").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("go build: %w\n%s", err, out)
	}
	var addrs [3]string // Temporal, HTTP, the worker's probes
	for i := range addrs {
		if addrs[i], err = FreeAddr(); err != nil {
			return nil, err
		}
	}
	quiet := tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	dev, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: cli,
		ClientOptions: &client.Options{HostPort: addrs[0], Logger: quiet}, LogLevel: "error", Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		return nil, fmt.Errorf("temporal dev server: %w", err)
	}
	d.close = append(d.close, func() { _ = dev.Stop() })
	d.Base = "http://" + addrs[1]
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "DDS_HTTP_ADDR="+addrs[1], "DDS_PUBLIC_URL="+d.Base, "DDS_ENV=live",
		"DDS_JWT_SECRET="+RandHex(32), "DDS_RATE_GLOBAL=0", "DDS_RATE_AUTH=0", "DDS_RATE_TENANT=0",
		"TEMPORAL_ADDRESS="+addrs[0], "DDS_TASK_QUEUE=bench-"+name, "DDS_LOG_LEVEL=warn", "DDS_WORKER_HTTP_ADDR="+addrs[2],
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+filepath.Join(work, "store"))
	env = append(env, extra...)
	for _, cmd := range []string{"serve", "worker"} {
		p := exec.CommandContext(ctx, bin, cmd)
		p.Env, p.Stdout, p.Stderr = env, os.Stderr, os.Stderr
		if err := p.Start(); err != nil {
			return nil, err
		}
		// Stopped first (close runs backwards), before the dev server.
		d.close = append(d.close, func() { _ = p.Process.Signal(syscall.SIGTERM); _ = p.Wait() })
		if cmd == "serve" {
			d.Serve = p
		} else {
			d.Worker = p
		}
	}
	return d, WaitHealthy(ctx, d.Base+"/livez", 30*time.Second)
}

// Close stops the processes and the dev server and removes the files.
func (d *Deployment) Close() {
	for i := len(d.close) - 1; i >= 0; i-- {
		d.close[i]()
	}
	d.close = nil
}

// SampleRSS samples the peak RSS of the server and the worker, every 100 ms.
func (d *Deployment) SampleRSS() []*RSSSampler {
	return []*RSSSampler{SampleRSS(d.Serve.Process.Pid, 100*time.Millisecond), SampleRSS(d.Worker.Process.Pid, 100*time.Millisecond)}
}

// FreeAddr is a 127.0.0.1 address with a port free a moment ago.
func FreeAddr() (string, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// RandHex is n random bytes in hex (secrets of a benchmark's processes).
func RandHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

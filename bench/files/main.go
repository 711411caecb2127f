// Command files benchmarks the file path of DDS with the local storage
// driver: a 50 MB file uploaded to and downloaded from its presigned URLs
// through a real DDS server (a child process), against dd writing and
// reading the same bytes on the same disk, plus the server's RSS during the
// upload (the upload must stream: at most 64 MB above idle).
//
//	go run ./bench/files [-size 50] [-runs 3]
//
// Needs DATABASE_URL and DDS_TEMPORAL_CLI (run it through make bench).
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"
	tworker "go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/server"
	"github.com/dds-project/dds/storage"
)

const taskQueue = "bench-files"

var quiet = tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))

func main() {
	serve := flag.Bool("serve", false, "internal: run the DDS server child")
	sizeMB := flag.Int("size", 50, "file size in MB")
	runs := flag.Int("runs", 5, "runs per measurement (median reported)")
	flag.Parse()
	var err error
	if *serve {
		err = runServer()
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		err = run(ctx, int64(*sizeMB)<<20, *runs)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench/files:", err)
		os.Exit(1)
	}
}

// runServer is the child: the real DDS server from the environment.
func runServer() error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer s.Close()
	return s.Run(ctx)
}

func freeAddr(ctx context.Context) (string, error) {
	var lc net.ListenConfig
	l, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func run(ctx context.Context, size int64, runs int) error {
	dbURL, cli := os.Getenv("DATABASE_URL"), os.Getenv("DDS_TEMPORAL_CLI")
	if dbURL == "" || cli == "" {
		return errors.New("DATABASE_URL and DDS_TEMPORAL_CLI must be set: run it through `make bench BENCHES=files`")
	}
	// One directory on one disk for the store, the dd target and the source.
	work, err := os.MkdirTemp(".", ".bench-files-")
	if err != nil {
		return err
	}
	work, _ = filepath.Abs(work)
	defer os.RemoveAll(work)
	storeDir := filepath.Join(work, "store")
	src := filepath.Join(work, "source.bin")
	if err := writeRandom(src, size); err != nil {
		return err
	}

	d, created, drop, err := load.Tenant(ctx, dbURL, "bench-files", 4)
	if err != nil {
		return err
	}
	defer drop()

	tAddr, err := freeAddr(ctx)
	if err != nil {
		return err
	}
	dev, err := testsuite.StartDevServer(ctx, testsuite.DevServerOptions{ExistingPath: cli,
		ClientOptions: &client.Options{HostPort: tAddr, Logger: quiet}, LogLevel: "error",
		Stdout: io.Discard, Stderr: io.Discard})
	if err != nil {
		return fmt.Errorf("temporal dev server: %w", err)
	}
	defer dev.Stop() //nolint:errcheck // best-effort shutdown of the bench's Temporal dev server; results are already printed

	httpAddr, err := freeAddr(ctx)
	if err != nil {
		return err
	}
	base := "http://" + httpAddr
	store, err := storage.NewLocal(storeDir, "", base)
	if err != nil {
		return err
	}
	w := tworker.New(dev.Client(), taskQueue, tworker.Options{})
	files.Register(w, d, store)
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()

	self, err := os.Executable()
	if err != nil {
		return err
	}
	child := exec.CommandContext(ctx, self, "-serve")
	child.Env = append(os.Environ(), "DDS_HTTP_ADDR="+httpAddr, "DDS_PUBLIC_URL="+base, "DDS_ENV=live",
		"DDS_JWT_SECRET="+randHex(32), "DDS_RATE_GLOBAL=0", "DDS_RATE_AUTH=0", "DDS_RATE_TENANT=0",
		"TEMPORAL_ADDRESS="+tAddr, "DDS_TASK_QUEUE="+taskQueue, "DDS_LOG_LEVEL=warn",
		"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR="+storeDir, "FILE_STORAGE_URL_TTL=5m")
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	if err := child.Start(); err != nil {
		return err
	}
	defer func() { _ = child.Process.Signal(syscall.SIGTERM); _ = child.Wait() }()
	if err := load.WaitHealthy(ctx, base+"/healthz", 30*time.Second); err != nil {
		return err
	}
	c := &apiClient{base: base, key: created.APIKey}

	// Warm up (connections, first workflow) and take the idle RSS.
	if _, err := c.uploadAndConfirm(ctx, bytes.NewReader([]byte("warm")), 4, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	time.Sleep(200 * time.Millisecond) // let the warm-up's garbage settle before sampling idle
	idle, err := rss(child.Process.Pid)
	if err != nil {
		return err
	}

	var up, confirm, down, ddW, ddR []time.Duration
	var peak int64
	for i := 0; i < runs; i++ {
		ddsRun := func() error {
			f, err := os.Open(src)
			if err != nil {
				return err
			}
			var p atomic.Int64
			stop := sampleRSS(child.Process.Pid, &p)
			var tm uploadTimes
			id, err := c.uploadAndConfirm(ctx, f, size, &tm)
			stop()
			f.Close()
			if err != nil {
				return fmt.Errorf("upload: %w", err)
			}
			up = append(up, tm.put)
			confirm = append(confirm, tm.confirm)
			peak = max(peak, p.Load())

			dt, n, err := c.download(ctx, id)
			if err != nil {
				return fmt.Errorf("download: %w", err)
			}
			if n != size {
				return fmt.Errorf("download returned %d of %d bytes", n, size)
			}
			down = append(down, dt)

			return nil
		}
		ddRun := func() error {
			target := filepath.Join(work, "dd.out")
			t0 := time.Now()
			if out, err := exec.CommandContext(ctx, "dd", "if="+src, "of="+target, "bs=1M", "conv=fsync").CombinedOutput(); err != nil {
				return fmt.Errorf("dd write: %w: %s", err, out)
			}
			ddW = append(ddW, time.Since(t0))
			t0 = time.Now()
			if out, err := exec.CommandContext(ctx, "dd", "if="+target, "of=/dev/null", "bs=1M").CombinedOutput(); err != nil {
				return fmt.Errorf("dd read: %w: %s", err, out)
			}
			ddR = append(ddR, time.Since(t0))
			os.Remove(target)
			return nil
		}
		// Alternate the order so neither side always runs on a disk the
		// other just dirtied.
		first, second := ddsRun, ddRun
		if i%2 == 1 {
			first, second = ddRun, ddsRun
		}
		if err := first(); err != nil {
			return err
		}
		if err := second(); err != nil {
			return err
		}
	}

	mbps := func(d time.Duration) float64 { return float64(size) / (1 << 20) / d.Seconds() }
	mu, md, mw, mr := median(up), median(down), median(ddW), median(ddR)
	fmt.Printf("\nDDS file path, local driver, %d MB file, median of %d runs (same disk: %s)\n\n", size>>20, runs, work)
	fmt.Printf("%-34s %12s %12s %8s\n", "operation", "DDS MB/s", "dd MB/s", "ratio")
	fmt.Printf("%-34s %12.1f %12.1f %8.2f\n", "upload (PUT presigned, fsync)", mbps(mu), mbps(mw), mbps(mu)/mbps(mw))
	fmt.Printf("%-34s %12.1f %12.1f %8.2f\n", "download (GET presigned)", mbps(md), mbps(mr), mbps(md)/mbps(mr))
	fmt.Printf("\nconfirm (Temporal Update: Head + verify + mark confirmed): median %s\n", median(confirm).Round(time.Millisecond))
	growth := peak - idle
	verdict := "PASS"
	if growth > 64<<20 {
		verdict = "FAIL"
	}
	fmt.Printf("\nserver RSS idle %.1f MB, peak during upload %.1f MB, growth %.1f MB (limit 64 MB): %s\n",
		mb(idle), mb(peak), mb(growth), verdict)
	fmt.Println("(dd write uses conv=fsync as the local store does; both reads come from the page cache)")
	if verdict == "FAIL" {
		return errors.New("the upload does not stream: server RSS grew by more than 64 MB")
	}
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeRandom(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := io.CopyN(f, rand.Reader, size); err != nil {
		return err
	}
	return f.Sync()
}

// rss reads VmRSS of pid in bytes.
func rss(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("VmRSS not found")
}

// sampleRSS records the peak RSS of pid every 5ms until stop is called.
func sampleRSS(pid int, peak *atomic.Int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := rss(pid); err == nil && v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }
}

type apiClient struct {
	base, key string
}

func (c *apiClient) call(ctx context.Context, method, path string, body, out any) error {
	_, err := load.Call(ctx, http.DefaultClient, method, c.base+path, c.key, body, 0, out)
	return err
}

type uploadTimes struct{ put, confirm time.Duration }

// uploadAndConfirm runs the three steps, timing the PUT and the confirm.
func (c *apiClient) uploadAndConfirm(ctx context.Context, body io.Reader, size int64, tm *uploadTimes) (string, error) {
	var tk struct {
		FileID, UploadURL string
	}
	if err := c.call(ctx, "POST", "/api/v1/files/upload-url", map[string]any{
		"fileName": "bench.bin", "mimeType": "application/octet-stream", "sizeBytes": size}, &tk); err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, tk.UploadURL, body)
	if err != nil {
		return "", err
	}
	req.ContentLength = size
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set("If-None-Match", "*") // one of storage.PutHeaders: refuse to replace a stored object
	t0 := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("PUT: status %d", resp.StatusCode)
	}
	t1 := time.Now()
	err = c.call(ctx, "POST", "/api/v1/files/"+tk.FileID+"/confirm", nil, nil)
	if tm != nil {
		tm.put, tm.confirm = t1.Sub(t0), time.Since(t1)
	}
	return tk.FileID, err
}

func (c *apiClient) download(ctx context.Context, id string) (time.Duration, int64, error) {
	var dl struct{ URL string }
	if err := c.call(ctx, "GET", "/api/v1/files/"+id+"/download-url", nil, &dl); err != nil {
		return 0, 0, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, dl.URL, nil)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return time.Since(start), n, err
}

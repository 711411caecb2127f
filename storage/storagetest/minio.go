// Package storagetest provides test fixtures for the storage drivers: a
// MinIO server of the test's own (from DDS_MINIO_BIN) or the S3 endpoint
// named by DDS_TEST_S3_ENDPOINT.
package storagetest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/storage"
)

// MinIO returns the configuration of a fresh bucket on an S3-compatible
// store: DDS_TEST_S3_ENDPOINT (with DDS_TEST_S3_ACCESS_KEY/SECRET_KEY) when
// set, otherwise a MinIO started from DDS_MINIO_BIN on a free 127.0.0.1 port
// with a temporary data directory, stopped when the test ends. The bucket is
// created. When neither is available the test is skipped (failed where the
// stack is required, see package teststack).
func MinIO(t testing.TB) storage.S3Config {
	t.Helper()
	cfg := storage.S3Config{Region: "us-east-1", PathStyle: true, Bucket: "dds-test-" + randHex(6)}
	if ep := os.Getenv("DDS_TEST_S3_ENDPOINT"); ep != "" {
		cfg.Endpoint = ep
		cfg.AccessKey = os.Getenv("DDS_TEST_S3_ACCESS_KEY")
		cfg.SecretKey = os.Getenv("DDS_TEST_S3_SECRET_KEY")
	} else {
		teststack.Need(t, "DDS_MINIO_BIN")
		bin := os.Getenv("DDS_MINIO_BIN")
		cfg.AccessKey, cfg.SecretKey = "ddstest", "ddstest-"+randHex(8)
		addr, console := freeAddr(t), freeAddr(t)
		cmd := exec.Command(bin, "server", "--quiet", "--address", addr, "--console-address", console, t.TempDir())
		cmd.Env = append(os.Environ(), "MINIO_ROOT_USER="+cfg.AccessKey, "MINIO_ROOT_PASSWORD="+cfg.SecretKey,
			"MINIO_BROWSER=off", "MINIO_UPDATE=off")
		if testing.Verbose() {
			cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start minio: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		cfg.Endpoint = "http://" + addr
		deadline := time.Now().Add(60 * time.Second)
		for {
			resp, err := http.Get(cfg.Endpoint + "/minio/health/live")
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-exited:
				t.Fatalf("minio exited before becoming healthy")
			default:
			}
			if time.Now().After(deadline) {
				t.Fatalf("minio not healthy at %s after 60s: %v", cfg.Endpoint, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	d, err := storage.NewS3(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err = d.EnsureBucket(ctx)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // MinIO may answer health before it accepts writes
	}
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	return cfg
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

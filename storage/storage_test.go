package storage_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/storage/storagetest"
)

// drivers returns both drivers, each ready to receive presigned requests.
func drivers(t *testing.T) map[string]storage.Driver {
	t.Helper()
	s3cfg := storagetest.MinIO(t)
	s3d, err := storage.NewS3(context.Background(), s3cfg)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]storage.Driver{"s3": s3d, "local": storagetest.Local(t)}
}

func put(t *testing.T, url, contentType string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("If-None-Match", "*") // one of storage.PutHeaders: refuse to replace a stored object
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// tamper flips one character of the URL's signature.
func tamper(u string) string {
	i := strings.Index(u, "X-Amz-Signature=")
	if i >= 0 {
		i += len("X-Amz-Signature=")
	} else {
		i = len(u) - 5
	}
	c := byte('0')
	if u[i] == '0' {
		c = '1'
	}
	return u[:i] + string(c) + u[i+1:]
}

func mustNotExist(t *testing.T, d storage.Driver, key string) {
	t.Helper()
	if _, err := d.Head(context.Background(), key); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Head(%s) = %v, want ErrNotFound", key, err)
	}
}

func TestDriverContract(t *testing.T) {
	ctx := context.Background()
	payload := []byte(strings.Repeat("dds-file-bytes\n", 1000))
	const ct = "application/pdf"

	cases := []struct {
		name string
		run  func(t *testing.T, d storage.Driver, key string)
	}{
		{"put head get", func(t *testing.T, d storage.Driver, key string) {
			u, err := d.PresignPut(ctx, key, ct, int64(len(payload)), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if st := put(t, u, ct, payload); st != http.StatusOK {
				t.Fatalf("PUT status %d, want 200", st)
			}
			info, err := d.Head(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if info.Size != int64(len(payload)) || info.ContentType != ct {
				t.Fatalf("Head = %+v, want size %d type %s", info, len(payload), ct)
			}
			g, err := d.PresignGet(ctx, key, "Résumé 2026.pdf", ct, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.Get(g)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			got, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 200 || !bytes.Equal(got, payload) {
				t.Fatalf("GET status %d, %d bytes; want 200 and the uploaded bytes", resp.StatusCode, len(got))
			}
			cd := resp.Header.Get("Content-Disposition")
			if !strings.Contains(cd, "attachment") || !strings.Contains(cd, "R%C3%A9sum%C3%A9%202026.pdf") {
				t.Fatalf("Content-Disposition %q does not carry the original name", cd)
			}
			if got := resp.Header.Get("Content-Type"); got != ct {
				t.Fatalf("GET Content-Type %q, want %q", got, ct)
			}
			rc, err := d.Open(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			defer rc.Close()
			if got, err := io.ReadAll(rc); err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("Open read %d bytes (%v); want the uploaded bytes", len(got), err)
			}
			if _, err := d.Open(ctx, key+"-missing"); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("Open of a missing key = %v, want ErrNotFound", err)
			}
		}},
		{"oversize upload refused by the store", func(t *testing.T, d storage.Driver, key string) {
			u, _ := d.PresignPut(ctx, key, ct, 100, time.Minute)
			if st := put(t, u, ct, make([]byte, 101)); st < 400 || st >= 500 {
				t.Fatalf("PUT of 101 bytes to a 100-byte URL: status %d, want 4xx", st)
			}
			if st := put(t, u, ct, make([]byte, 99)); st < 400 || st >= 500 {
				t.Fatalf("PUT of 99 bytes to a 100-byte URL: status %d, want 4xx", st)
			}
			mustNotExist(t, d, key)
		}},
		{"a stored object cannot be replaced through its URL", func(t *testing.T, d storage.Driver, key string) {
			u, err := d.PresignPut(ctx, key, ct, int64(len(payload)), time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if st := put(t, u, ct, payload); st != http.StatusOK {
				t.Fatalf("first PUT: status %d, want 200", st)
			}
			other := bytes.Repeat([]byte("X"), len(payload))
			if st := put(t, u, ct, other); st != http.StatusConflict && st != http.StatusPreconditionFailed {
				t.Fatalf("second PUT to the same URL: status %d, want 409 or 412", st)
			}
			// Leaving out If-None-Match does not help: S3 signed it, local refuses anyway.
			req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(other))
			req.Header.Set("Content-Type", ct)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode < 400 || resp.StatusCode >= 500 {
				t.Fatalf("PUT without If-None-Match: status %d, want 4xx", resp.StatusCode)
			}
			g, err := d.PresignGet(ctx, key, "f.pdf", ct, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			resp, err = http.Get(g)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if got, _ := io.ReadAll(resp.Body); !bytes.Equal(got, payload) {
				t.Fatal("the stored object changed after the refused PUTs")
			}
		}},
		{"wrong content type refused", func(t *testing.T, d storage.Driver, key string) {
			u, _ := d.PresignPut(ctx, key, ct, int64(len(payload)), time.Minute)
			if st := put(t, u, "text/html", payload); st < 400 || st >= 500 {
				t.Fatalf("PUT with another Content-Type: status %d, want 4xx", st)
			}
			mustNotExist(t, d, key)
		}},
		{"tampered URL refused", func(t *testing.T, d storage.Driver, key string) {
			u, _ := d.PresignPut(ctx, key, ct, int64(len(payload)), time.Minute)
			if st := put(t, tamper(u), ct, payload); st != http.StatusForbidden {
				t.Fatalf("PUT to a URL whose signature was changed: status %d, want 403", st)
			}
			mustNotExist(t, d, key)
		}},
		{"expired URL refused", func(t *testing.T, d storage.Driver, key string) {
			u, _ := d.PresignPut(ctx, key, ct, 4, time.Second)
			g, _ := d.PresignGet(ctx, key, "a.bin", ct, time.Second)
			deadline := time.Now().Add(20 * time.Second)
			for put(t, u, ct, []byte("abcd")) != http.StatusForbidden {
				if time.Now().After(deadline) {
					t.Fatal("presigned PUT still accepted 20s after its 1s expiry")
				}
				time.Sleep(100 * time.Millisecond)
			}
			resp, err := http.Get(g)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("expired GET: status %d, want 403", resp.StatusCode)
			}
		}},
		{"delete removes the object", func(t *testing.T, d storage.Driver, key string) {
			u, _ := d.PresignPut(ctx, key, ct, int64(len(payload)), time.Minute)
			if st := put(t, u, ct, payload); st != http.StatusOK {
				t.Fatalf("PUT status %d", st)
			}
			if err := d.Delete(ctx, key); err != nil {
				t.Fatal(err)
			}
			mustNotExist(t, d, key)
			g, _ := d.PresignGet(ctx, key, "a.pdf", ct, time.Minute)
			resp, err := http.Get(g)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusNotFound {
				t.Fatalf("GET after delete: status %d, want 404", resp.StatusCode)
			}
			if err := d.Delete(ctx, key); err != nil {
				t.Fatalf("second Delete: %v (must be idempotent)", err)
			}
		}},
	}
	for name, d := range drivers(t) {
		t.Run(name, func(t *testing.T) {
			for i, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, d, "tenant-a/file-"+name+"-"+string(rune('a'+i)))
				})
			}
		})
	}
}

func TestLocalRejectsBadKeys(t *testing.T) {
	l := storagetest.Local(t)
	for _, key := range []string{"../etc/passwd", "/abs", "a/../../b", "", "a//b"} {
		if _, err := l.PresignPut(context.Background(), key, "text/plain", 1, time.Minute); err == nil {
			t.Errorf("PresignPut(%q) accepted a key escaping the storage directory", key)
		}
	}
}

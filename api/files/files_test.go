package files_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	tworker "go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/server"
	"github.com/dds-project/dds/storage"
	"github.com/dds-project/dds/storage/storagetest"
)

// stack is one storage driver behind two real DDS servers (normal URL
// lifetime, and 1s URLs with a 2s grace for the expiry cases) sharing a
// Temporal worker.
type stack struct {
	app, short *testenv.App
	store      storage.Driver
}

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

func startServer(t *testing.T, base func() *testenvConfig, ttl, grace time.Duration) *testenv.App {
	t.Helper()
	ln := listen(t)
	c := base()
	cfg := testenv.Config(t)
	cfg.PublicURL = "http://" + ln.Addr().String()
	cfg.TemporalAddress = c.temporal
	cfg.TemporalTaskQueue = c.queue
	cfg.FileStorageDriver = c.driver
	cfg.FileStorageLocalDir = c.localDir
	cfg.FileStorageS3Endpoint, cfg.FileStorageS3Region, cfg.FileStorageS3Bucket = c.s3.Endpoint, c.s3.Region, c.s3.Bucket
	cfg.FileStorageS3AccessKey, cfg.FileStorageS3SecretKey, cfg.FileStorageS3PathStyle = c.s3.AccessKey, c.s3.SecretKey, true
	cfg.FileStorageURLTTL, cfg.FileUploadGrace = ttl, grace
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Serve(ctx, ln); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done; s.Close() })
	return &testenv.App{URL: cfg.PublicURL, Server: s, Client: &http.Client{Timeout: 60 * time.Second}}
}

type testenvConfig struct {
	temporal, queue, driver, localDir string
	s3                                storage.S3Config
}

func newStack(t *testing.T, tc client.Client, hostPort, driver, run string) *stack {
	t.Helper()
	c := &testenvConfig{temporal: hostPort, queue: "files-test-" + driver + "-" + run, driver: driver}
	var store storage.Driver
	var err error
	switch driver {
	case "local":
		c.localDir = t.TempDir()
		store, err = storage.NewLocal(c.localDir, "", "http://127.0.0.1:1")
	case "s3":
		c.s3 = storagetest.MinIO(t)
		store, err = storage.NewS3(context.Background(), c.s3)
	}
	if err != nil {
		t.Fatal(err)
	}
	w := tworker.New(tc, c.queue, tworker.Options{})
	files.Register(w, testenv.DB(t), store)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	base := func() *testenvConfig { return c }
	return &stack{
		app:   startServer(t, base, 15*time.Minute, 10*time.Minute),
		short: startServer(t, base, time.Second, 2*time.Second),
		store: store,
	}
}

type ticket struct {
	FileID    string            `json:"fileId"`
	UploadURL string            `json:"uploadUrl"`
	ExpiresAt time.Time         `json:"expiresAt"`
	Headers   map[string]string `json:"headers"`
}

type fileMeta struct {
	ID         string     `json:"id"`
	TenantID   string     `json:"tenantId"`
	FileName   string     `json:"fileName"`
	MimeType   string     `json:"mimeType"`
	SizeBytes  int64      `json:"sizeBytes"`
	EntityName string     `json:"entityName"`
	Status     string     `json:"status"`
	CreatedAt  *time.Time `json:"createdAt"`
}

func requestUpload(t *testing.T, a *testenv.App, key string, body map[string]any) ticket {
	t.Helper()
	var tk ticket
	a.Must(t, http.StatusCreated, "POST", "/api/v1/files/upload-url", key, body).Decode(t, &tk)
	if tk.FileID == "" || tk.UploadURL == "" || tk.ExpiresAt.IsZero() {
		t.Fatalf("incomplete upload ticket %+v", tk)
	}
	return tk
}

func putBytes(t *testing.T, url, contentType string, body []byte) int {
	t.Helper()
	return putWithHeaders(t, url, storage.PutHeaders(contentType), body)
}

// putWithHeaders uploads as a client does: with the headers the ticket names.
func putWithHeaders(t *testing.T, url string, headers map[string]string, body []byte) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func objectExists(t *testing.T, s storage.Driver, tenant, id string) bool {
	t.Helper()
	_, err := s.Head(context.Background(), tenant+"/"+id)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// upload runs the three steps and returns the confirmed file.
func upload(t *testing.T, a *testenv.App, key string, name, ct string, body []byte, extra map[string]any) fileMeta {
	t.Helper()
	req := map[string]any{"fileName": name, "mimeType": ct, "sizeBytes": len(body)}
	for k, v := range extra {
		req[k] = v
	}
	tk := requestUpload(t, a, key, req)
	if st := putBytes(t, tk.UploadURL, ct, body); st != http.StatusOK {
		t.Fatalf("PUT to upload URL: status %d", st)
	}
	var f fileMeta
	a.Must(t, http.StatusOK, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil).Decode(t, &f)
	return f
}

func TestFilesAPI(t *testing.T) {
	// The Temporal dev server of `make test`; each run gets its own task
	// queues, so workflows of earlier runs (kept in .dds/) are not ours.
	teststack.Need(t, "TEMPORAL_ADDRESS")
	hostPort := os.Getenv("TEMPORAL_ADDRESS")
	testenv.DB(t)
	tc, err := client.Dial(client.Options{HostPort: hostPort,
		Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tc.Close)
	run := strconv.FormatInt(time.Now().UnixNano(), 36)

	payload := []byte(strings.Repeat("DDS file body 0123456789\n", 4000)) // 100,000 bytes
	const pdf = "application/pdf"

	cases := []struct {
		name string
		run  func(t *testing.T, s *stack)
	}{
		{"a confirmed file cannot be overwritten through its upload URL", func(t *testing.T, s *stack) {
			_, key := s.app.Tenant(t)
			tk := requestUpload(t, s.app, key, map[string]any{"fileName": "contract.pdf", "mimeType": pdf, "sizeBytes": len(payload)})
			if st := putWithHeaders(t, tk.UploadURL, tk.Headers, payload); st != http.StatusOK {
				t.Fatalf("PUT with the ticket's headers: status %d", st)
			}
			s.app.Must(t, 200, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
			forged := bytes.Repeat([]byte("!"), len(payload))
			if st := putWithHeaders(t, tk.UploadURL, tk.Headers, forged); st != http.StatusConflict && st != http.StatusPreconditionFailed {
				t.Fatalf("second PUT after confirm: status %d, want 409 or 412", st)
			}
			var dl struct{ URL string }
			s.app.Must(t, 200, "GET", "/api/v1/files/"+tk.FileID+"/download-url", key, nil).Decode(t, &dl)
			resp, err := http.Get(dl.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if !bytes.Equal(body, payload) {
				t.Fatalf("the confirmed file's bytes changed (%d bytes, status %d)", len(body), resp.StatusCode)
			}
		}},
		{"full three-step flow", func(t *testing.T, s *stack) {
			tenant, key := s.app.Tenant(t)
			tk := requestUpload(t, s.app, key, map[string]any{"fileName": "Q3 report.pdf", "mimeType": pdf,
				"sizeBytes": len(payload), "entityName": "Product", "entityId": "p-1", "fieldName": "manual"})
			if tk.Headers["Content-Type"] != pdf {
				t.Fatalf("ticket headers %v", tk.Headers)
			}
			var pending fileMeta
			s.app.Must(t, 200, "GET", "/api/v1/files/"+tk.FileID, key, nil).Decode(t, &pending)
			if pending.Status != "pending" || pending.CreatedAt != nil {
				t.Fatalf("before confirm: %+v, want pending without createdAt", pending)
			}
			if st := putBytes(t, tk.UploadURL, pdf, payload); st != 200 {
				t.Fatalf("PUT status %d", st)
			}
			var f fileMeta
			s.app.Must(t, 200, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil).Decode(t, &f)
			if f.ID != tk.FileID || f.TenantID != tenant || f.FileName != "Q3 report.pdf" || f.MimeType != pdf ||
				f.SizeBytes != int64(len(payload)) || f.CreatedAt == nil || f.Status != "confirmed" {
				t.Fatalf("confirmed metadata %+v", f)
			}
			// Confirm is idempotent.
			s.app.Must(t, 200, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
			var got fileMeta
			s.app.Must(t, 200, "GET", "/api/v1/files/"+tk.FileID, key, nil).Decode(t, &got)
			if got.EntityName != "Product" || got.Status != "confirmed" {
				t.Fatalf("metadata %+v", got)
			}
			var dl struct {
				URL, FileName, MimeType string
				ExpiresAt               time.Time
			}
			s.app.Must(t, 200, "GET", "/api/v1/files/"+tk.FileID+"/download-url", key, nil).Decode(t, &dl)
			if dl.FileName != "Q3 report.pdf" || dl.MimeType != pdf || dl.ExpiresAt.Before(time.Now()) {
				t.Fatalf("download ticket %+v", dl)
			}
			resp, err := http.Get(dl.URL)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Equal(body, payload) {
				t.Fatalf("download: status %d, %d bytes", resp.StatusCode, len(body))
			}
			if cd := resp.Header.Get("Content-Disposition"); !strings.Contains(cd, "Q3 report.pdf") {
				t.Fatalf("Content-Disposition %q lacks the original name", cd)
			}
			// List with filters.
			var list struct {
				Files []fileMeta `json:"files"`
				Total int        `json:"total"`
			}
			s.app.Must(t, 200, "GET", "/api/v1/files?entityName=Product&entityId=p-1&fieldName=manual&mimeType=application%2Fpdf&limit=10", key, nil).Decode(t, &list)
			if len(list.Files) != 1 || list.Files[0].ID != tk.FileID || list.Total != 1 {
				t.Fatalf("filtered list %+v", list)
			}
			s.app.Must(t, 200, "GET", "/api/v1/files?entityName=Order", key, nil).Decode(t, &list)
			if len(list.Files) != 0 {
				t.Fatalf("list filtered on another entity returned %+v", list.Files)
			}
		}},
		{"list paginates with limit and offset", func(t *testing.T, s *stack) {
			_, key := s.app.Tenant(t)
			for i := 0; i < 3; i++ {
				upload(t, s.app, key, "n.txt", "text/plain", []byte("x"), nil)
			}
			var page struct {
				Files []fileMeta `json:"files"`
				Total int        `json:"total"`
			}
			s.app.Must(t, 200, "GET", "/api/v1/files?limit=2", key, nil).Decode(t, &page)
			if len(page.Files) != 2 || page.Total != 3 {
				t.Fatalf("page 1: %d files, total %d", len(page.Files), page.Total)
			}
			s.app.Must(t, 200, "GET", "/api/v1/files?limit=2&offset=2", key, nil).Decode(t, &page)
			if len(page.Files) != 1 || page.Total != 3 {
				t.Fatalf("page 2: %d files, total %d", len(page.Files), page.Total)
			}
			s.app.Must(t, 400, "GET", "/api/v1/files?limit=0", key, nil)
			s.app.Must(t, 400, "GET", "/api/v1/files?limit=abc", key, nil)
		}},
		{"oversize and wrong-type uploads refused by the store", func(t *testing.T, s *stack) {
			tenant, key := s.app.Tenant(t)
			tk := requestUpload(t, s.app, key, map[string]any{"fileName": "a.pdf", "mimeType": pdf, "sizeBytes": 1000})
			if st := putBytes(t, tk.UploadURL, pdf, make([]byte, 1001)); st < 400 || st >= 500 {
				t.Fatalf("oversize PUT: status %d, want 4xx", st)
			}
			if st := putBytes(t, tk.UploadURL, "text/html", make([]byte, 1000)); st < 400 || st >= 500 {
				t.Fatalf("wrong-type PUT: status %d, want 4xx", st)
			}
			if objectExists(t, s.store, tenant, tk.FileID) {
				t.Fatal("a refused upload left an object")
			}
			s.app.Must(t, 409, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
		}},
		{"upload-url validates its body", func(t *testing.T, s *stack) {
			_, key := s.app.Tenant(t)
			for _, body := range []map[string]any{
				{"fileName": "a.bin", "mimeType": "application/octet-stream", "sizeBytes": 100<<20 + 1},
				{"fileName": "a.bin", "mimeType": "application/octet-stream"},
				{"fileName": "", "mimeType": "text/plain", "sizeBytes": 1},
				{"fileName": "../etc/passwd", "mimeType": "text/plain", "sizeBytes": 1},
				{"fileName": "a.bin", "mimeType": "not a type", "sizeBytes": 1},
				{"fileName": "a.bin", "mimeType": "text/plain", "sizeBytes": 0},
				{"fileName": "a.bin", "mimeType": "text/plain", "sizeBytes": 1, "entityName": "bad name"},
			} {
				r := s.app.Do(t, "POST", "/api/v1/files/upload-url", key, body)
				if r.Status != 400 || !strings.Contains(string(r.Body), "VALIDATION_ERROR") {
					t.Errorf("upload-url %v: status %d %s, want 400 VALIDATION_ERROR", body, r.Status, r.Body)
				}
			}
			// Exactly 100 MB is allowed.
			requestUpload(t, s.app, key, map[string]any{"fileName": "big.bin", "mimeType": "application/octet-stream", "sizeBytes": 100 << 20})
		}},
		{"expired URL refused and the unconfirmed upload expires", func(t *testing.T, s *stack) {
			tenant, key := s.short.Tenant(t)
			tk := requestUpload(t, s.short, key, map[string]any{"fileName": "late.txt", "mimeType": "text/plain", "sizeBytes": 5})
			eventually(t, "the upload URL expires", func() bool {
				return putBytes(t, tk.UploadURL, "text/plain", []byte("hello")) == http.StatusForbidden
			})
			// Whatever was stored before expiry is an orphan: the worker
			// deletes it and marks the file expired after the grace period.
			eventually(t, "the file is marked expired", func() bool {
				var f fileMeta
				s.short.Must(t, 200, "GET", "/api/v1/files/"+tk.FileID, key, nil).Decode(t, &f)
				return f.Status == "expired"
			})
			eventually(t, "the expired upload's object is deleted", func() bool {
				return !objectExists(t, s.store, tenant, tk.FileID)
			})
			s.short.Must(t, 409, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
			s.short.Must(t, 409, "GET", "/api/v1/files/"+tk.FileID+"/download-url", key, nil)
		}},
		{"confirm before upload is 409", func(t *testing.T, s *stack) {
			_, key := s.app.Tenant(t)
			tk := requestUpload(t, s.app, key, map[string]any{"fileName": "a.txt", "mimeType": "text/plain", "sizeBytes": 3})
			r := s.app.Must(t, 409, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
			if !strings.Contains(string(r.Body), "CONFLICT") {
				t.Fatalf("body %s", r.Body)
			}
			s.app.Must(t, 409, "GET", "/api/v1/files/"+tk.FileID+"/download-url", key, nil)
			// The upload stays open: upload now and confirm.
			if st := putBytes(t, tk.UploadURL, "text/plain", []byte("abc")); st != 200 {
				t.Fatalf("PUT status %d", st)
			}
			s.app.Must(t, 200, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
		}},
		{"cross-tenant access is 404", func(t *testing.T, s *stack) {
			tenantA, keyA := s.app.Tenant(t)
			_, keyB := s.app.Tenant(t)
			f := upload(t, s.app, keyA, "secret.txt", "text/plain", []byte("top secret"), nil)
			for _, c := range []struct{ method, path string }{
				{"GET", "/api/v1/files/" + f.ID},
				{"GET", "/api/v1/files/" + f.ID + "/download-url"},
				{"POST", "/api/v1/files/" + f.ID + "/confirm"},
				{"DELETE", "/api/v1/files/" + f.ID},
			} {
				s.app.Must(t, 404, c.method, c.path, keyB, nil)
			}
			var list struct {
				Files []fileMeta `json:"files"`
			}
			s.app.Must(t, 200, "GET", "/api/v1/files", keyB, nil).Decode(t, &list)
			if len(list.Files) != 0 {
				t.Fatalf("tenant B lists %d files of tenant A", len(list.Files))
			}
			if !objectExists(t, s.store, tenantA, f.ID) {
				t.Fatal("tenant B's DELETE removed tenant A's object")
			}
			s.app.Must(t, 404, "GET", "/api/v1/files/not-a-uuid", keyA, nil)
		}},
		{"delete removes the object", func(t *testing.T, s *stack) {
			tenant, key := s.app.Tenant(t)
			f := upload(t, s.app, key, "gone.txt", "text/plain", []byte("bye"), nil)
			var dl struct{ URL string }
			s.app.Must(t, 200, "GET", "/api/v1/files/"+f.ID+"/download-url", key, nil).Decode(t, &dl)
			r := s.app.Must(t, 204, "DELETE", "/api/v1/files/"+f.ID, key, nil)
			if len(r.Body) != 0 {
				t.Fatalf("204 with a body: %s", r.Body)
			}
			s.app.Must(t, 404, "GET", "/api/v1/files/"+f.ID, key, nil)
			s.app.Must(t, 404, "DELETE", "/api/v1/files/"+f.ID, key, nil)
			eventually(t, "the object is removed from storage", func() bool { return !objectExists(t, s.store, tenant, f.ID) })
			resp, err := http.Get(dl.URL)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 404 {
				t.Fatalf("old download URL after delete: status %d, want 404", resp.StatusCode)
			}
		}},
		{"scopes file:*:<op> are enforced", func(t *testing.T, s *stack) {
			_, admin := s.app.Tenant(t)
			f := upload(t, s.app, admin, "s.txt", "text/plain", []byte("s"), nil)
			var k struct{ Key string }
			s.app.Must(t, 201, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "ro", "scopes": []string{"file:*:read"}}).Decode(t, &k)
			s.app.Must(t, 200, "GET", "/api/v1/files/"+f.ID, k.Key, nil)
			s.app.Must(t, 200, "GET", "/api/v1/files", k.Key, nil)
			s.app.Must(t, 403, "POST", "/api/v1/files/upload-url", k.Key, map[string]any{"fileName": "a", "mimeType": "text/plain", "sizeBytes": 1})
			s.app.Must(t, 403, "POST", "/api/v1/files/"+f.ID+"/confirm", k.Key, nil)
			s.app.Must(t, 403, "DELETE", "/api/v1/files/"+f.ID, k.Key, nil)
			s.app.Must(t, 401, "GET", "/api/v1/files", "", nil)
		}},
		{"FILE fields hold confirmed files, expand, and go with their record", func(t *testing.T, s *stack) {
			_, key := s.app.Tenant(t)
			_, otherKey := s.app.Tenant(t)
			s.app.Schema(t, key, map[string]any{"name": "docs", "entities": []any{map[string]any{"name": "Doc", "fields": []any{
				map[string]any{"name": "title", "type": "STRING"}, map[string]any{"name": "manual", "type": "FILE"}}}}})
			f := upload(t, s.app, key, "m.pdf", pdf, []byte("%PDF-1"), nil)
			pending := requestUpload(t, s.app, key, map[string]any{"fileName": "p.pdf", "mimeType": pdf, "sizeBytes": 3})
			foreign := upload(t, s.app, otherKey, "x.pdf", pdf, []byte("%PDF-2"), nil)
			for name, id := range map[string]string{"unconfirmed": pending.FileID, "another tenant's": foreign.ID, "unknown": "01a200ae-0000-7000-8000-000000000000"} {
				r := s.app.Do(t, "POST", "/api/v1/dynamic/Doc", key, map[string]any{"title": "t", "manual": id})
				if r.Status != 400 || !strings.Contains(string(r.Body), `"field":"manual"`) {
					t.Fatalf("%s file: status %d, want 400 naming manual: %s", name, r.Status, r.Body)
				}
			}
			doc := s.app.Must(t, 201, "POST", "/api/v1/dynamic/Doc", key, map[string]any{"title": "t", "manual": f.ID}).JSON(t)
			if doc["manual"] != f.ID {
				t.Fatalf("a FILE field reads back as the file id: %v", doc)
			}
			got := s.app.Must(t, 200, "GET", "/api/v1/dynamic/Doc/"+doc["id"].(string)+"?expand=files", key, nil).JSON(t)
			meta, _ := got["_files"].(map[string]any)["manual"].(map[string]any)
			if meta["fileName"] != "m.pdf" || meta["mimeType"] != pdf || got["manual"] != f.ID {
				t.Fatalf("expand=files: %v", got)
			}
			list := s.app.Must(t, 200, "GET", "/api/v1/dynamic/Doc?expand=files", key, nil).JSON(t)
			if item := list["items"].([]any)[0].(map[string]any); item["_files"].(map[string]any)["manual"] == nil {
				t.Fatalf("expand=files on the list: %v", list)
			}
			s.app.Must(t, 204, "DELETE", "/api/v1/dynamic/Doc/"+doc["id"].(string), key, nil)
			s.app.Must(t, 404, "GET", "/api/v1/files/"+f.ID, key, nil)
			eventually(t, "the deleted record's file object is removed", func() bool { return !objectExists(t, s.store, f.TenantID, f.ID) })

			// Batches: a bad file fails its item naming the field; a batch delete takes the files along.
			g := upload(t, s.app, key, "g.pdf", pdf, []byte("%PDF-3"), nil)
			bad := s.app.Must(t, 400, "POST", "/api/v1/dynamic/Doc/batch", key, map[string]any{"items": []any{
				map[string]any{"title": "ok", "manual": g.ID}, map[string]any{"title": "bad", "manual": foreign.ID}}})
			if failed := bad.JSON(t)["failed"].([]any); len(failed) != 1 || failed[0].(map[string]any)["error"].(map[string]any)["field"] != "manual" {
				t.Fatalf("batch with another tenant's file: %s", bad.Body)
			}
			created := s.app.Must(t, 201, "POST", "/api/v1/dynamic/Doc/batch", key, map[string]any{"items": []any{map[string]any{"title": "ok", "manual": g.ID}}}).JSON(t)
			id := created["successful"].([]any)[0].(map[string]any)["id"]
			// A batch update keeps the files its records still hold.
			s.app.Must(t, 200, "PATCH", "/api/v1/dynamic/Doc/batch", key, map[string]any{"items": []any{map[string]any{"id": id, "data": map[string]any{"title": "renamed"}}}})
			s.app.Must(t, 200, "GET", "/api/v1/files/"+g.ID, key, nil)
			if !objectExists(t, s.store, g.TenantID, g.ID) {
				t.Fatal("a batch update removed a file its record still holds")
			}
			s.app.Must(t, 200, "DELETE", "/api/v1/dynamic/Doc/batch", key, map[string]any{"ids": []any{id}})
			s.app.Must(t, 404, "GET", "/api/v1/files/"+g.ID, key, nil)
			eventually(t, "a batch-deleted record's file object is removed", func() bool { return !objectExists(t, s.store, g.TenantID, g.ID) })
		}},
	}

	for _, driver := range []string{"local", "s3"} {
		t.Run(driver, func(t *testing.T) {
			s := newStack(t, tc, hostPort, driver, run)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					c.run(t, s)
				})
			}
		})
	}
}

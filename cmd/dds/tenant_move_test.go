package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"reflect"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
)

// deployment is a `dds serve` and a `dds worker` on their own database,
// task queue and file storage.
type deployment struct {
	t        *testing.T
	url      string
	operator string
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func startDeployment(t *testing.T, bin, dbURL string, storageEnv []string) *deployment {
	t.Helper()
	addr := freeAddr(t)
	op := "operator-" + uuid.NewString()
	env := append(os.Environ(), "DATABASE_URL="+dbURL, "DDS_ENV=test", "DDS_JWT_SECRET=test-jwt-secret-0123456789abcdef0123456789",
		"DDS_OPERATOR_TOKEN="+op, "DDS_HTTP_ADDR="+addr, "DDS_PUBLIC_URL=http://"+addr, "DDS_TASK_QUEUE=move-"+uuid.NewString(),
		"DDS_LOG_LEVEL=warn", "DDS_WORKER_HTTP_ADDR=127.0.0.1:0")
	env = append(env, storageEnv...)
	if out, err := (&exec.Cmd{Path: bin, Args: []string{bin, "migrate"}, Env: env}).CombinedOutput(); err != nil {
		t.Fatalf("dds migrate: %v\n%s", err, out)
	}
	for _, cmd := range []string{"serve", "worker"} {
		c := exec.Command(bin, cmd)
		c.Env, c.Stderr = env, os.Stderr
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	}
	d := &deployment{t: t, url: "http://" + addr, operator: op}
	deadline := time.Now().Add(time.Minute)
	for {
		if resp, err := http.Get(d.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return d
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dds serve on %s did not become ready", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// do sends a request and decodes the JSON answer into out (when not nil).
func (d *deployment) do(want int, method, path, cred string, body any, out any) {
	d.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, d.url+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+cred)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		d.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			d.t.Fatalf("%s %s: %v: %s", method, path, err, b)
		}
	}
}

type moveJob struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	TenantID string          `json:"tenantId"`
	Result   json.RawMessage `json:"result"`
	Error    *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (d *deployment) wait(id string) moveJob {
	d.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var j moveJob
		d.do(http.StatusOK, "GET", "/api/v1/tenant-jobs/"+id, d.operator, nil, &j)
		if j.Status == "succeeded" || j.Status == "failed" {
			if j.Status != "succeeded" {
				d.t.Fatalf("tenant job %s failed: %+v", id, j.Error)
			}
			return j
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("tenant job %s did not end", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type exported struct {
	Archive struct {
		DownloadURL string `json:"downloadUrl"`
		SizeBytes   int64  `json:"sizeBytes"`
	} `json:"archive"`
	Counts    map[string]int64  `json:"counts"`
	Checksums map[string]string `json:"checksums"`
}

func (d *deployment) export(tenant string) (exported, []byte) {
	d.t.Helper()
	var j moveJob
	d.do(http.StatusAccepted, "POST", "/api/v1/tenants/"+tenant+"/export", d.operator, nil, &j)
	j = d.wait(j.ID)
	var res exported
	if err := json.Unmarshal(j.Result, &res); err != nil {
		d.t.Fatal(err)
	}
	resp, err := http.Get(res.Archive.DownloadURL)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || int64(len(b)) != res.Archive.SizeBytes {
		d.t.Fatalf("download the archive: %d, %d bytes of %d", resp.StatusCode, len(b), res.Archive.SizeBytes)
	}
	return res, b
}

// TestTenantMovesBetweenDeployments exports a tenant from one deployment
// (dds serve + dds worker, local file storage) and imports it into another
// (its own database, S3 storage when the stack has it): the new tenant
// answers with new keys, serves its records and files, and exports with the
// same record and file checksums.
func TestTenantMovesBetweenDeployments(t *testing.T) {
	t.Parallel() // its own task queue, processes, tenants and file store; most of its time is waits
	teststack.Need(t, "TEMPORAL_ADDRESS")
	bin := ddsBinary(t)
	src := startDeployment(t, bin, testenv.DatabaseURL(t), []string{"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR=" + t.TempDir()})
	dstStorage := []string{"FILE_STORAGE_DRIVER=local", "FILE_STORAGE_LOCAL_DIR=" + t.TempDir()}
	if os.Getenv("FILE_STORAGE_S3_ENDPOINT") != "" {
		dstStorage = []string{"FILE_STORAGE_DRIVER=s3", "FILE_STORAGE_S3_BUCKET=dds-move-test"}
	}
	dst := startDeployment(t, bin, testenv.OwnDatabase(t, "2"), dstStorage)

	var created struct {
		TenantID string `json:"tenantId"`
		APIKey   string `json:"apiKey"`
	}
	src.do(http.StatusCreated, "POST", "/api/v1/tenants", src.operator, map[string]any{"name": "moving"}, &created)
	key := created.APIKey
	src.do(http.StatusCreated, "POST", "/api/v1/schemas", key, map[string]any{"name": "shop", "entities": []any{
		map[string]any{"name": "Product", "fields": []any{map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "price", "type": "NUMBER"}, map[string]any{"name": "manual", "type": "FILE"}}},
		map[string]any{"name": "Category", "history": true, "fields": []any{map[string]any{"name": "title", "type": "STRING"}}}},
		"relationships": []any{map[string]any{"name": "IN_CATEGORY", "from": "Product", "to": "Category"}}}, nil)
	var ticket struct {
		FileID    string            `json:"fileId"`
		UploadURL string            `json:"uploadUrl"`
		Headers   map[string]string `json:"headers"`
	}
	manual := []byte("the manual, moved byte for byte")
	src.do(http.StatusCreated, "POST", "/api/v1/files/upload-url", key, map[string]any{"fileName": "m.txt", "mimeType": "text/plain", "sizeBytes": len(manual)}, &ticket)
	put(t, ticket.UploadURL, ticket.Headers, manual)
	src.do(http.StatusOK, "POST", "/api/v1/files/"+ticket.FileID+"/confirm", key, nil, nil)
	var cat struct {
		ID string `json:"id"`
	}
	src.do(http.StatusCreated, "POST", "/api/v1/dynamic/Category", key, map[string]any{"title": "tools"}, &cat)
	src.do(http.StatusOK, "PATCH", "/api/v1/dynamic/Category/"+cat.ID, key, map[string]any{"title": "tools and parts"}, nil)
	type version struct {
		ID, Op, At, KeyID string
		Changed           []string
	}
	var srcHistory, dstHistory struct{ Items []version }
	src.do(http.StatusOK, "GET", "/api/v1/dynamic/Category/"+cat.ID+"/history", key, nil, &srcHistory)
	if len(srcHistory.Items) != 2 || srcHistory.Items[0].Op != "update" || srcHistory.Items[1].Op != "create" {
		t.Fatalf("history on the source: %+v", srcHistory.Items)
	}
	for i := range 30 {
		var p struct {
			ID string `json:"id"`
		}
		src.do(http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": fmt.Sprint("p", i), "price": float64(i) + 0.1, "manual": ticket.FileID}, &p)
		src.do(http.StatusCreated, "POST", "/api/v1/dynamic/Product/"+p.ID+"/relationships/IN_CATEGORY", key, map[string]any{"targetId": cat.ID}, nil)
	}

	first, archive := src.export(created.TenantID)
	var up struct {
		FileID    string            `json:"fileId"`
		UploadURL string            `json:"uploadUrl"`
		Headers   map[string]string `json:"headers"`
	}
	dst.do(http.StatusCreated, "POST", "/api/v1/tenant-archives", dst.operator, map[string]any{"sizeBytes": len(archive)}, &up)
	put(t, up.UploadURL, up.Headers, archive)
	var j moveJob
	dst.do(http.StatusAccepted, "POST", "/api/v1/tenants/import", dst.operator, map[string]any{"fileId": up.FileID}, &j)
	j = dst.wait(j.ID)
	var res struct {
		TenantID string `json:"tenantId"`
		APIKeys  []struct {
			Key string `json:"key"`
		} `json:"apiKeys"`
	}
	if err := json.Unmarshal(j.Result, &res); err != nil || len(res.APIKeys) != 1 || res.APIKeys[0].Key == "" || res.APIKeys[0].Key == key {
		t.Fatalf("import result: %s", j.Result)
	}
	newKey := res.APIKeys[0].Key
	var page struct {
		Count float64 `json:"count"`
	}
	dst.do(http.StatusOK, "GET", "/api/v1/dynamic/Product?includeCount=true&limit=1", newKey, nil, &page)
	if page.Count != 30 {
		t.Fatalf("the moved tenant has %v products", page.Count)
	}
	var dl struct {
		URL string `json:"url"`
	}
	dst.do(http.StatusOK, "GET", "/api/v1/files/"+ticket.FileID+"/download-url", newKey, nil, &dl)
	if got := get(t, dl.URL); !bytes.Equal(got, manual) {
		t.Fatalf("the moved file reads %q", got)
	}
	// The category's history moved as it was: the same versions, times
	// and writer, and no version of the import's own.
	dst.do(http.StatusOK, "GET", "/api/v1/dynamic/Category/"+cat.ID+"/history", newKey, nil, &dstHistory)
	if !reflect.DeepEqual(srcHistory, dstHistory) {
		t.Fatalf("the history changed on the way:\n%+v\n%+v", srcHistory, dstHistory)
	}
	if first.Counts["versions"] != 2 {
		t.Fatalf("the export counted %d versions, want 2", first.Counts["versions"])
	}
	// The old key is unknown to the new deployment.
	dst.do(http.StatusUnauthorized, "GET", "/api/v1/dynamic/Product", key, nil, nil)
	second, _ := dst.export(res.TenantID)
	if !reflect.DeepEqual(first.Checksums, second.Checksums) || !reflect.DeepEqual(first.Counts, second.Counts) {
		t.Fatalf("the tenant changed on the way:\n%+v\n%+v", first, second)
	}
	// The import left the history trigger on: a write now is recorded.
	dst.do(http.StatusOK, "PATCH", "/api/v1/dynamic/Category/"+cat.ID, newKey, map[string]any{"title": "moved"}, nil)
	dst.do(http.StatusOK, "GET", "/api/v1/dynamic/Category/"+cat.ID+"/history", newKey, nil, &dstHistory)
	if len(dstHistory.Items) != 3 || dstHistory.Items[0].Op != "update" || !reflect.DeepEqual(dstHistory.Items[1], srcHistory.Items[0]) {
		t.Fatalf("history after a write on the new deployment: %+v", dstHistory.Items)
	}
}

func put(t *testing.T, u string, headers map[string]string, body []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT: %d", resp.StatusCode)
	}
}

func get(t *testing.T, u string) []byte {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b
}

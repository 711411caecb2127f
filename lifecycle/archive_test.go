package lifecycle_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/lifecycle"
)

// exportTenant exports a tenant through the API and returns the result and
// the archive's bytes, downloaded through its presigned URL.
func (s *stack) exportTenant(t *testing.T, tenant string) (lifecycle.ExportResult, []byte) {
	t.Helper()
	var j lifecycle.Job
	s.operator(t, http.StatusAccepted, "POST", "/api/v1/tenants/"+tenant+"/export", nil).Decode(t, &j)
	end := s.waitJob(t, j.ID)
	if end.Status != "succeeded" || end.Progress.Total == nil || end.Progress.Processed != *end.Progress.Total {
		t.Fatalf("export ended %+v %s", end, end.Result)
	}
	var res lifecycle.ExportResult
	var url struct {
		Archive struct {
			DownloadURL string `json:"downloadUrl"`
		} `json:"archive"`
	}
	if err := json.Unmarshal(end.Result, &res); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(end.Result, &url); err != nil || url.Archive.DownloadURL == "" {
		t.Fatalf("export result without a download URL: %s", end.Result)
	}
	resp, err := http.Get(url.Archive.DownloadURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || int64(len(body)) != res.Archive.SizeBytes {
		t.Fatalf("download: %d, %d bytes (%v), want %d", resp.StatusCode, len(body), err, res.Archive.SizeBytes)
	}
	return res, body
}

// importArchive uploads an archive and imports it; it returns the job.
func (s *stack) importArchive(t *testing.T, archive []byte, name string) *lifecycle.Job {
	t.Helper()
	var up lifecycle.Upload
	s.operator(t, http.StatusCreated, "POST", "/api/v1/tenant-archives", map[string]any{"sizeBytes": len(archive)}).Decode(t, &up)
	req, err := http.NewRequest(http.MethodPut, up.UploadURL, bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("upload the archive: %d", resp.StatusCode)
	}
	var j lifecycle.Job
	s.operator(t, http.StatusAccepted, "POST", "/api/v1/tenants/import", map[string]any{"fileId": up.FileID, "name": name}).Decode(t, &j)
	return s.waitJob(t, j.ID)
}

type importResult struct {
	TenantID     string           `json:"tenantId"`
	Counts       map[string]int64 `json:"counts"`
	SecretsShown bool             `json:"secretsShown"`
	APIKeys      []struct {
		Name   string   `json:"name"`
		Key    string   `json:"key"`
		Scopes []string `json:"scopes"`
	} `json:"apiKeys"`
	Webhooks []struct {
		TargetURL     string `json:"targetUrl"`
		SigningSecret string `json:"signingSecret"`
	} `json:"webhooks"`
}

// TestExportImportRoundTrip exports a tenant, deletes it, imports the
// archive as a new tenant and exports that: every record, edge and file
// checksum is identical; the keys and webhook secrets are new and shown
// once; the restored tenant serves its records.
func TestExportImportRoundTrip(t *testing.T) {
	s := newStack(t)
	tenant, key := s.app.Tenant(t)
	s.populate(t, key, 50)
	s.app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "reader", "scopes": []string{"entity:*:read"}})
	first, archive := s.exportTenant(t, tenant)
	if first.Counts["records"] != 50 || first.Counts["edges"] != 1 || first.Counts["files"] != 1 || len(first.Checksums) != 4 {
		t.Fatalf("first export: %+v", first)
	}
	var del lifecycle.Job
	s.operator(t, http.StatusAccepted, "DELETE", "/api/v1/tenants/"+tenant, nil).Decode(t, &del)
	if end := s.waitJob(t, del.ID); end.Status != "succeeded" {
		t.Fatalf("delete: %+v", end)
	}

	j := s.importArchive(t, archive, "restored")
	if j.Status != "succeeded" {
		t.Fatalf("import ended %+v %+v", j, j.Error)
	}
	// The read that saw the job succeed (waitJob's last) showed the
	// secrets; the next does not.
	var shown, later importResult
	if err := json.Unmarshal(j.Result, &shown); err != nil {
		t.Fatal(err)
	}
	s.operator(t, http.StatusOK, "GET", "/api/v1/tenant-jobs/"+j.ID, nil).Decode(t, &struct {
		Result *importResult `json:"result"`
	}{&later})
	if shown.SecretsShown || len(shown.APIKeys) != 2 || len(shown.Webhooks) != 1 || !strings.HasPrefix(shown.Webhooks[0].SigningSecret, "whsec_") ||
		shown.Counts["records"] != 50 || shown.TenantID != *j.TenantID {
		t.Fatalf("first read of the import result: %+v", shown)
	}
	if !later.SecretsShown || later.APIKeys[0].Key != "" || later.Webhooks[0].SigningSecret != "" || later.APIKeys[0].Name == "" {
		t.Fatalf("second read still shows secrets: %+v", later)
	}
	var admin, reader string
	for _, k := range shown.APIKeys {
		if k.Key == "" || k.Key == key {
			t.Fatalf("key %s not issued anew: %q", k.Name, k.Key)
		}
		switch k.Name {
		case "admin":
			admin = k.Key
		case "reader":
			reader = k.Key
		}
	}
	var page struct {
		Count float64 `json:"count"`
	}
	s.app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Doc?includeCount=true&limit=1", reader, nil).Decode(t, &page)
	if page.Count != 50 {
		t.Fatalf("the restored tenant has %v docs", page.Count)
	}
	if r := s.app.Do(t, "POST", "/api/v1/dynamic/Doc", reader, map[string]any{"title": "x"}); r.Status != http.StatusForbidden {
		t.Fatalf("the reader key kept its scopes? create answered %d", r.Status)
	}
	var got lifecycle.Tenant
	s.operator(t, http.StatusOK, "GET", "/api/v1/tenants/"+shown.TenantID, nil).Decode(t, &got)
	if got.Name != "restored" || *got.Schemas != 1 || *got.Files != 1 || *got.Webhooks != 1 {
		t.Fatalf("restored tenant: %+v", got)
	}
	second, _ := s.exportTenant(t, shown.TenantID)
	if !reflect.DeepEqual(first.Checksums, second.Checksums) || !reflect.DeepEqual(first.Counts, second.Counts) {
		t.Fatalf("export -> import -> export changed the data:\n%+v\n%+v", first, second)
	}
	s.app.Must(t, http.StatusOK, "GET", "/api/v1/webhooks", admin, nil)
}

// An archive that is not one fails its import job with a message naming
// what is wrong, and leaves no tenant behind.
func TestImportRefusesBadArchives(t *testing.T) {
	s := newStack(t)
	for _, c := range []struct {
		name    string
		archive []byte
		want    string
	}{
		{"not a zip", []byte("\x00\xffhello"), "not a zip file"},
		{"no manifest", zipOf(t, map[string]string{"x.txt": "x"}), "no entry manifest.json"},
		{"wrong format", zipOf(t, map[string]string{"manifest.json": `{"format":"other","formatVersion":1}`}), "manifest.json"},
		{"bad record", zipOf(t, map[string]string{
			"manifest.json":               `{"format":"dds-tenant-archive","formatVersion":1,"tenant":{"name":"t"},"schemas":[{"name":"s","active":true,"entities":[{"name":"A","rows":1}]}]}`,
			"schemas/s/versions.json":     `[{"version":1,"definition":{"name":"s","entities":[{"name":"A","fields":[{"name":"n","type":"INTEGER"}]}]},"createdAt":"2026-01-01T00:00:00Z"}]`,
			"schemas/s/entities/A.ndjson": `{"id":"0190a000-0000-7000-8000-000000000001","n":"not a number"}` + "\n",
		}), `A, record 1: invalid input syntax for type bigint: "not a number"`},
		{"history without an entity keeping it", zipOf(t, map[string]string{
			"manifest.json":               `{"format":"dds-tenant-archive","formatVersion":1,"tenant":{"name":"t"},"schemas":[{"name":"s","active":true,"entities":[{"name":"A","rows":0}],"history":{"name":"_history","rows":1}}]}`,
			"schemas/s/versions.json":     `[{"version":1,"definition":{"name":"s","entities":[{"name":"A","fields":[{"name":"n","type":"INTEGER"}]}]},"createdAt":"2026-01-01T00:00:00Z"}]`,
			"schemas/s/entities/A.ndjson": "",
			"schemas/s/history.ndjson":    `{"id":"0190a000-0000-7000-8000-000000000002","record_id":"0190a000-0000-7000-8000-000000000001","entity":"A","op":"create","at":"2026-01-01T00:00:00+00:00","record":{}}` + "\n",
		}), "the archive has history but no entity of the schema keeps it"},
		{"bad version", zipOf(t, map[string]string{
			"manifest.json":               `{"format":"dds-tenant-archive","formatVersion":1,"tenant":{"name":"t"},"schemas":[{"name":"s","active":true,"entities":[{"name":"A","rows":0}],"history":{"name":"_history","rows":1}}]}`,
			"schemas/s/versions.json":     `[{"version":1,"definition":{"name":"s","entities":[{"name":"A","history":true,"fields":[{"name":"n","type":"INTEGER"}]}]},"createdAt":"2026-01-01T00:00:00Z"}]`,
			"schemas/s/entities/A.ndjson": "",
			"schemas/s/history.ndjson":    `{"id":"0190a000-0000-7000-8000-000000000002","record_id":"not a uuid","entity":"A","op":"create","at":"2026-01-01T00:00:00+00:00","record":{}}` + "\n",
		}), `_history, record 1: invalid input syntax for type uuid: "not a uuid"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			j := s.importArchive(t, c.archive, "")
			if j.Status != "failed" || j.Error == nil || !strings.Contains(j.Error.Message, c.want) {
				t.Fatalf("import of %s: %+v %+v", c.name, j, j.Error)
			}
			s.operator(t, http.StatusNotFound, "GET", "/api/v1/tenants/"+*j.TenantID, nil)
		})
	}
	s.operator(t, http.StatusBadRequest, "POST", "/api/v1/tenants/import", map[string]any{"fileId": "nope"})
	s.operator(t, http.StatusBadRequest, "POST", "/api/v1/tenant-archives", map[string]any{})
	s.operator(t, http.StatusNotFound, "POST", "/api/v1/tenants/import", map[string]any{"fileId": "0190a000-0000-7000-8000-000000000001"})
	if r := s.app.Do(t, "POST", "/api/v1/tenants/import", "", map[string]any{}); r.Status != http.StatusUnauthorized {
		t.Fatalf("import without the operator token: %d", r.Status)
	}
	_ = testenv.OperatorToken
}

package e2e

import (
	"bytes"
	"io"
	"net/http"
	"slices"
	"testing"
)

// sharedDocs: documents with a file a member may read and one it may not.
var sharedDocs = map[string]any{
	"name": "shared_docs",
	"entities": []any{map[string]any{"name": "Doc", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true},
		map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
		map[string]any{"name": "attachment", "type": "FILE"},
		map[string]any{"name": "secret", "type": "FILE"},
	}}},
}

// docMember: a user's own docs; it reads and writes attachment, never
// secret.
var docMember = map[string]any{
	"scopes": []any{"entity:Doc:*", "file:*:*"},
	"rules": map[string]any{"Doc": map[string]any{
		"read":   map[string]any{"ownerId": "$user.id"},
		"create": map[string]any{"preset": map[string]any{"ownerId": "$user.id"}, "check": map[string]any{"ownerId": "$user.id"}},
		"update": map[string]any{"where": map[string]any{"ownerId": "$user.id"}, "check": map[string]any{"ownerId": "$user.id"}},
	}},
	"fields": map[string]any{"Doc": map[string]any{"read": []any{"title", "ownerId", "attachment"}, "write": []any{"title", "attachment"}}},
}

// upload requests an upload as cred, PUTs content to the URL as given and
// confirms it; it returns the file id.
func upload(t *testing.T, d *deployment, cred string, content []byte, target map[string]any) string {
	t.Helper()
	body := map[string]any{"fileName": "doc.txt", "mimeType": "text/plain", "sizeBytes": len(content)}
	for k, v := range target {
		body[k] = v
	}
	var up struct {
		FileID, UploadURL string
		Headers           map[string]string
	}
	d.do(t, http.StatusCreated, "POST", "/api/v1/files/upload-url", cred, body).decode(t, &up)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPut, up.UploadURL, bytes.NewReader(content))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range up.Headers {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode/100 != 2 {
		t.Fatalf("PUT to the upload URL: %d %s", res.StatusCode, b)
	}
	d.do(t, http.StatusOK, "POST", "/api/v1/files/"+up.FileID+"/confirm", cred, nil)
	return up.FileID
}

// fetch GETs a presigned URL and returns its status and body.
func fetch(t *testing.T, url string) (int, []byte) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}

// Files under rules, through the dds binary with user tokens, on the local
// driver and on S3 (MinIO): a user gets a download URL only for a file on a
// record it may read, through a FILE field it may read, or for a file it
// uploaded; another user's record is 404 and a hidden FILE field 403
// naming it, as on every other read; uploads naming a record pass the
// write rules; a URL already issued is a bearer capability until it
// expires.
func TestRulesScenarioFiles(t *testing.T) {
	t.Parallel()
	for _, d := range []*deployment{local, s3} {
		name := "local"
		if d == s3 {
			name = "s3"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tenantID, admin := d.tenant(t)
			_ = tenantID
			d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", admin, sharedDocs)
			d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/member", admin, docMember)
			tok := func(user string) string {
				return d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", admin,
					map[string]any{"userId": user, "roles": []any{"member"}}).body(t)["accessToken"].(string)
			}
			alice, bob := tok("alice"), tok("bob")
			bobDoc := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Doc", bob, map[string]any{"title": "bob's"}).body(t)["id"].(string)
			aliceDoc := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Doc", alice, map[string]any{"title": "alice's"}).body(t)["id"].(string)

			// Uploads naming a record pass the write rules.
			small := map[string]any{"fileName": "x.txt", "mimeType": "text/plain", "sizeBytes": 1, "entityName": "Doc"}
			with := func(kv ...string) map[string]any {
				m := map[string]any{}
				for k, v := range small {
					m[k] = v
				}
				for i := 0; i < len(kv); i += 2 {
					m[kv[i]] = kv[i+1]
				}
				return m
			}
			r := d.send(t, "POST", "/api/v1/files/upload-url", alice, with("fieldName", "secret"))
			if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Contains(fields, "secret") {
				t.Fatalf("upload for a field outside fields.write: %d %s", r.Status, r.Body)
			}
			r = d.send(t, "POST", "/api/v1/files/upload-url", alice, with("fieldName", "title"))
			if code, fields := errorCode(t, r); r.Status != 400 || code != "VALIDATION_ERROR" || !slices.Contains(fields, "fieldName") {
				t.Fatalf("upload for a field that holds no file: %d %s", r.Status, r.Body)
			}
			d.do(t, http.StatusNotFound, "POST", "/api/v1/files/upload-url", alice, with("fieldName", "attachment", "entityId", bobDoc))

			content := []byte("alice's attachment on " + name)
			fileID := upload(t, d, alice, content, map[string]any{"entityName": "Doc", "fieldName": "attachment", "entityId": aliceDoc})
			// Only the uploader reaches a file no record holds yet.
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+fileID+"/download-url", bob, nil)
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+fileID, bob, nil)
			d.do(t, http.StatusNotFound, "POST", "/api/v1/files/"+fileID+"/confirm", bob, nil)
			d.do(t, http.StatusNotFound, "DELETE", "/api/v1/files/"+fileID, bob, nil)
			if n := d.do(t, http.StatusOK, "GET", "/api/v1/files", bob, nil).body(t)["total"]; n != float64(0) {
				t.Fatalf("bob lists %v files, none of them his", n)
			}
			if n := d.do(t, http.StatusOK, "GET", "/api/v1/files", alice, nil).body(t)["total"]; n != float64(1) {
				t.Fatalf("alice lists %v files, want her 1", n)
			}
			// Another user's file cannot be attached to a record of one's
			// own (and so be downloaded through it): as if it did not exist.
			r = d.send(t, "PATCH", "/api/v1/dynamic/Doc/"+bobDoc, bob, map[string]any{"attachment": fileID})
			if code, _ := errorCode(t, r); r.Status != 400 || code != "VALIDATION_ERROR" {
				t.Fatalf("bob attaching alice's file: %d %s", r.Status, r.Body)
			}
			d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Doc/"+aliceDoc, alice, map[string]any{"attachment": fileID})

			// Through the record: readable record and field → a URL that
			// serves the bytes.
			recURL := "/api/v1/dynamic/Doc/" + aliceDoc + "/files/attachment/download-url"
			var dl struct{ URL string }
			d.do(t, http.StatusOK, "GET", recURL, alice, nil).decode(t, &dl)
			if st, b := fetch(t, dl.URL); st != 200 || !bytes.Equal(b, content) {
				t.Fatalf("alice's download through her doc: %d %q", st, b)
			}
			d.do(t, http.StatusNotFound, "GET", recURL, bob, nil)
			// A hidden FILE field: 403 naming it, as a select of it is.
			secret := upload(t, d, admin, []byte("admin only"), nil)
			d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Doc/"+aliceDoc, admin, map[string]any{"secret": secret})
			for path, field := range map[string]string{
				"/api/v1/dynamic/Doc/" + aliceDoc + "/files/secret/download-url": "secret",
				"/api/v1/dynamic/Doc/" + aliceDoc + "?select=secret":             "select.secret",
			} {
				r = d.send(t, "GET", path, alice, nil)
				if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Equal(fields, []string{field}) {
					t.Fatalf("%s as alice: %d %s", path, r.Status, r.Body)
				}
			}
			// By file id: the hidden field links nothing.
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+secret+"/download-url", alice, nil)
			r = d.send(t, "GET", "/api/v1/dynamic/Doc/"+aliceDoc+"?expand=files", alice, nil)
			if exp, _ := r.body(t)["_files"].(map[string]any); len(exp) != 1 || exp["attachment"] == nil {
				t.Fatalf("expand=files names only the readable FILE field: %s", r.Body)
			}
			// The admin (no roles) reaches every file, as before.
			d.do(t, http.StatusOK, "GET", "/api/v1/files/"+fileID+"/download-url", admin, nil)

			// The doc moves to bob: he reaches the file through it, by
			// record and by file id; alice keeps only what an uploader has.
			d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Doc/"+aliceDoc, admin, map[string]any{"ownerId": "bob"})
			d.do(t, http.StatusOK, "GET", recURL, bob, nil).decode(t, &dl)
			if st, b := fetch(t, dl.URL); st != 200 || !bytes.Equal(b, content) {
				t.Fatalf("bob's download through the doc he now owns: %d %q", st, b)
			}
			d.do(t, http.StatusOK, "GET", "/api/v1/files/"+fileID+"/download-url", bob, nil)
			d.do(t, http.StatusNotFound, "GET", recURL, alice, nil)
			d.do(t, http.StatusOK, "GET", "/api/v1/files/"+fileID+"/download-url", alice, nil)

			// Back to alice: bob gets no new URL, and the one he holds
			// still works until it expires (a presigned URL is a bearer
			// capability: docs/files.md).
			d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Doc/"+aliceDoc, admin, map[string]any{"ownerId": "alice"})
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+fileID+"/download-url", bob, nil)
			d.do(t, http.StatusNotFound, "GET", recURL, bob, nil)
			if st, _ := fetch(t, dl.URL); st != 200 {
				t.Fatalf("a URL issued before the rule changed: %d", st)
			}
		})
	}
}

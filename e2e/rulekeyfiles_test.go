package e2e

import (
	"bytes"
	"net/http"
	"slices"
	"testing"
)

// docClerk: a role for server keys, which have no user id: the docs of
// owner "clerk" only; it writes title and attachment, reads no secret.
var docClerk = map[string]any{
	"scopes": []any{"entity:Doc:*", "file:*:*"},
	"rules": map[string]any{"Doc": map[string]any{
		"read":   map[string]any{"ownerId": "clerk"},
		"create": map[string]any{"preset": map[string]any{"ownerId": "clerk"}, "check": map[string]any{"ownerId": "clerk"}},
		"update": map[string]any{"where": map[string]any{"ownerId": "clerk"}, "check": map[string]any{"ownerId": "clerk"}},
	}},
	"fields": map[string]any{"Doc": map[string]any{"read": []any{"title", "ownerId", "attachment"}, "write": []any{"title", "attachment"}}},
}

// Uploads by API keys bound to a role, through the dds binary, on the
// local driver and on S3 (MinIO): a bound key uploads and attaches only
// what its role allows, as a user of that role would. An upload naming a
// record outside the role's rules is 404, one for a field outside
// fields.write 403 naming it; its own upload attaches to a record the
// role may update and downloads through it; another principal's file
// does not attach. The uploader is the key, not the role: a second key
// bound to the same role does not reach the first key's file until a
// record the role reads holds it.
func TestRulesScenarioRoleKeyFiles(t *testing.T) {
	t.Parallel()
	for _, d := range []*deployment{local, s3} {
		name := "local"
		if d == s3 {
			name = "s3"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, admin := d.tenant(t)
			d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", admin, sharedDocs)
			d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/clerk", admin, docClerk)
			key := func(n string) string {
				return d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", admin,
					map[string]any{"name": n, "scopes": []any{"entity:Doc:*", "file:*:*"}, "role": "clerk"}).body(t)["key"].(string)
			}
			clerk, clerk2 := key("clerk"), key("clerk2")
			// The preset makes the key's doc the clerk's whatever it sends.
			doc := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Doc", clerk, map[string]any{"title": "clerk's"}).body(t)
			if doc["ownerId"] != "clerk" {
				t.Fatalf("a doc created by the bound key: %v", doc)
			}
			clerkDoc := doc["id"].(string)
			aliceDoc := d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Doc", admin, map[string]any{"title": "alice's", "ownerId": "alice"}).body(t)["id"].(string)

			req := func(kv ...string) map[string]any {
				m := map[string]any{"fileName": "x.txt", "mimeType": "text/plain", "sizeBytes": 1, "entityName": "Doc"}
				for i := 0; i < len(kv); i += 2 {
					m[kv[i]] = kv[i+1]
				}
				return m
			}
			// Refused uploads: a field outside fields.write (403 naming it),
			// a record the role may not update (404, as if absent).
			r := d.send(t, "POST", "/api/v1/files/upload-url", clerk, req("fieldName", "secret"))
			if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Contains(fields, "secret") {
				t.Fatalf("bound key's upload for a field outside fields.write: %d %s", r.Status, r.Body)
			}
			d.do(t, http.StatusNotFound, "POST", "/api/v1/files/upload-url", clerk, req("fieldName", "attachment", "entityId", aliceDoc))

			// Its own upload, naming its doc: attached and downloaded
			// through the doc.
			content := []byte("the clerk's attachment on " + name)
			fileID := upload(t, d, clerk, content, map[string]any{"entityName": "Doc", "fieldName": "attachment", "entityId": clerkDoc})
			// The uploader is the key: the role's other key does not reach
			// the file no record holds yet.
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+fileID+"/download-url", clerk2, nil)
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+fileID, clerk2, nil)
			d.do(t, http.StatusNotFound, "DELETE", "/api/v1/files/"+fileID, clerk2, nil)
			r = d.send(t, "PATCH", "/api/v1/dynamic/Doc/"+clerkDoc, clerk2, map[string]any{"attachment": fileID})
			if code, _ := errorCode(t, r); r.Status != 400 || code != "VALIDATION_ERROR" {
				t.Fatalf("the role's other key attaching the first key's file: %d %s", r.Status, r.Body)
			}
			d.do(t, http.StatusOK, "GET", "/api/v1/files/"+fileID, clerk, nil)
			// The key's own file into a field it may not write: 403 naming it.
			r = d.send(t, "PATCH", "/api/v1/dynamic/Doc/"+clerkDoc, clerk, map[string]any{"secret": fileID})
			if code, fields := errorCode(t, r); r.Status != 403 || code != "FORBIDDEN" || !slices.Contains(fields, "secret") {
				t.Fatalf("bound key writing secret: %d %s", r.Status, r.Body)
			}
			// Into a record its role may not update: 404.
			d.do(t, http.StatusNotFound, "PATCH", "/api/v1/dynamic/Doc/"+aliceDoc, clerk, map[string]any{"attachment": fileID})
			// Another principal's file does not attach: as if it did not exist.
			foreign := upload(t, d, admin, []byte("admin's"), nil)
			r = d.send(t, "PATCH", "/api/v1/dynamic/Doc/"+clerkDoc, clerk, map[string]any{"attachment": foreign})
			if code, _ := errorCode(t, r); r.Status != 400 || code != "VALIDATION_ERROR" {
				t.Fatalf("bound key attaching the admin's file: %d %s", r.Status, r.Body)
			}
			d.do(t, http.StatusNotFound, "GET", "/api/v1/files/"+foreign+"/download-url", clerk, nil)

			d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Doc/"+clerkDoc, clerk, map[string]any{"attachment": fileID})
			var dl struct{ URL string }
			for _, k := range []string{clerk, clerk2} { // held by a doc the role reads: both keys reach it
				d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Doc/"+clerkDoc+"/files/attachment/download-url", k, nil).decode(t, &dl)
				if st, b := fetch(t, dl.URL); st != 200 || !bytes.Equal(b, content) {
					t.Fatalf("download through the clerk's doc: %d %q", st, b)
				}
				d.do(t, http.StatusOK, "GET", "/api/v1/files/"+fileID+"/download-url", k, nil)
			}
			// Nothing of alice's doc changed.
			if got := d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Doc/"+aliceDoc, admin, nil).body(t); got["attachment"] != nil {
				t.Fatalf("alice's doc after the bound key's attempts: %v", got)
			}
		})
	}
}

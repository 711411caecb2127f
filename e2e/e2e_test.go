package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
)

// notes is the schema every test's tenant starts with.
var notes = map[string]any{"name": "notes", "entities": []any{
	map[string]any{"name": "Note", "fields": []any{
		map[string]any{"name": "title", "type": "STRING", "required": true},
		map[string]any{"name": "stars", "type": "INTEGER"},
		map[string]any{"name": "attachment", "type": "FILE"},
	}},
}}

// tenantWithSchema creates a tenant with the CLI and activates notes.
func tenantWithSchema(t *testing.T, d *deployment) (tenantID, key, schemaID string) {
	t.Helper()
	tenantID, key = d.tenant(t)
	var s struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, notes).decode(t, &s)
	return tenantID, key, s.ID
}

// A graphql-ws client (the protocol browsers and Apollo/urql use) receives
// created, updated and deleted events for writes made over REST.
func TestSubscriptionsOverWebSocket(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)
	ws := "ws" + strings.TrimPrefix(d.URL, "http") + "/api/v1/dynamic-gql/ws"
	nodePath, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make test`")
	}
	cmd := exec.CommandContext(t.Context(), nodePath, filepath.Join(npmDir, "clients", "subscribe.mjs"), ws, key,
		`subscription { noteCreated { id title } }`,
		`subscription { noteUpdated(where: {stars: {gte: 3}}) { id title stars } }`,
		`subscription { noteDeleted { id title } }`)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	events := readLines(out)
	type event struct {
		Sub       int
		Connected bool
		Payload   struct {
			Data   map[string]map[string]any
			Errors []any
		}
		Error string
	}
	parse := func(l json.RawMessage) event {
		var e event
		_ = json.Unmarshal(l, &e)
		if e.Error != "" || len(e.Payload.Errors) > 0 {
			t.Fatalf("subscription failed: %s (stderr: %s)", l, stderr.String())
		}
		return e
	}
	events.await(t, 30*time.Second, "the graphql-ws client to connect", func(l json.RawMessage) bool { return parse(l).Connected })
	// The subscribe messages are in flight once connected: create probe
	// records until one's event shows the subscriptions are live.
	for attempt := 0; ; attempt++ {
		if attempt == 30 {
			t.Fatal("no event for 30 probe records: the subscriptions never became live")
		}
		var probe struct{ ID string }
		d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "probe"}).decode(t, &probe)
		if _, ok := events.find(time.Second, func(l json.RawMessage) bool {
			n := parse(l).Payload.Data["noteCreated"]
			return n != nil && n["id"] == probe.ID
		}); ok {
			break
		}
	}

	var rec struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "first", "stars": 1}).decode(t, &rec)
	events.await(t, 15*time.Second, "noteCreated for the REST create", func(l json.RawMessage) bool {
		e := parse(l)
		n := e.Payload.Data["noteCreated"]
		return e.Sub == 0 && n != nil && n["id"] == rec.ID && n["title"] == "first"
	})
	// Filtered out by the subscription's where (stars >= 3), then matched.
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Note/"+rec.ID, key, map[string]any{"stars": 2})
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Note/"+rec.ID, key, map[string]any{"stars": 4, "title": "second"})
	upd := events.await(t, 15*time.Second, "noteUpdated for the REST patch", func(l json.RawMessage) bool {
		e := parse(l)
		return e.Sub == 1 && e.Payload.Data["noteUpdated"] != nil
	})
	if n := parse(upd).Payload.Data["noteUpdated"]; n["id"] != rec.ID || n["title"] != "second" || n["stars"] != float64(4) {
		t.Fatalf("first noteUpdated is %s, want the update to 4 stars (the one to 2 does not match the where)", upd)
	}
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Note/"+rec.ID, key, nil)
	events.await(t, 15*time.Second, "noteDeleted for the REST delete", func(l json.RawMessage) bool {
		e := parse(l)
		n := e.Payload.Data["noteDeleted"]
		return e.Sub == 2 && n != nil && n["id"] == rec.ID && n["title"] == "second"
	})

	// A burst of REST creates: the server announces them a flush (many
	// events) at a time, and the subscriber still gets each, in order (a
	// line out of order would be skipped, and its await time out).
	var burst []string
	for i := range 60 {
		var r struct{ ID string }
		d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": fmt.Sprint("burst ", i)}).decode(t, &r)
		burst = append(burst, r.ID)
	}
	for i, id := range burst {
		events.await(t, 15*time.Second, fmt.Sprint("noteCreated for burst create ", i, " in order"), func(l json.RawMessage) bool {
			e := parse(l)
			n := e.Payload.Data["noteCreated"]
			return e.Sub == 0 && n != nil && n["id"] == id && n["title"] == fmt.Sprint("burst ", i)
		})
	}
}

// graphql-http's server audit, against the binary.
func TestGraphQLHTTPAudit(t *testing.T) {
	t.Parallel()
	d := local
	tenantID, key, _ := tenantWithSchema(t, d)
	out := node(t, nil, "audit.mjs", d.URL+"/api/v1/dynamic-gql/"+tenantID, key)
	musts := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var r struct{ Name, Status, Reason string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit output: %s", sc.Text())
		}
		if strings.HasPrefix(r.Name, "MUST") {
			musts++
			if r.Status != "ok" {
				t.Errorf("%s: %s", r.Name, r.Reason)
			}
		} else if r.Status != "ok" {
			t.Logf("%s (%s): %s", r.Name, r.Status, r.Reason)
		}
	}
	if musts < 10 {
		t.Fatalf("only %d MUST audits ran: %s", musts, out)
	}
}

// GraphiQL and graphql-codegen introspect with graphql-js: the library's
// introspection data, as the binary serves it, builds a valid client schema
// holding the tenant's types and the introspection types themselves.
func TestGraphQLIntrospectionBuildsClientSchema(t *testing.T) {
	t.Parallel()
	d := local
	tenantID, key, _ := tenantWithSchema(t, d)
	var got struct {
		Types []string
		SDL   string
	}
	if err := json.Unmarshal(node(t, nil, filepath.Join("clients", "introspect.mjs"), d.URL+"/api/v1/dynamic-gql/"+tenantID, key), &got); err != nil {
		t.Fatal(err)
	}
	listed := strings.Join(got.Types, " ")
	for _, want := range []string{"Note", "NoteWhere", "__Schema", "__Type", "__TypeKind"} {
		if !slices.Contains(got.Types, want) {
			t.Errorf("__schema.types lacks %s: %s", want, listed)
		}
	}
	for _, want := range []string{"type Note {", "notes(", "createNote(", "noteCreated("} {
		if !strings.Contains(got.SDL, want) {
			t.Errorf("graphql-js printed no %q:\n%s", want, got.SDL)
		}
	}
}

// A webhook delivery from the worker reaches a receiver on 127.0.0.1
// (allowed by DDS_WEBHOOK_ALLOW_PRIVATE) and verifies with the
// standardwebhooks package, as a receiver would verify it.
func TestWebhookVerifiedByStandardWebhooks(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)
	type delivery struct {
		header http.Header
		body   []byte
	}
	var mu sync.Mutex
	var got []delivery
	arrived := make(chan struct{}, 16)
	recv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, delivery{r.Header.Clone(), b})
		mu.Unlock()
		arrived <- struct{}{}
	}))
	defer recv.Close()
	var wh struct{ ID, SigningSecret string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/webhooks", key, map[string]any{
		"targetUrl": recv.URL + "/hooks/dds", "eventTypes": []string{"entity.created"}}).decode(t, &wh)
	if !strings.HasPrefix(wh.SigningSecret, "whsec_") {
		t.Fatalf("signing secret %q", wh.SigningSecret)
	}
	var rec struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "hooked"}).decode(t, &rec)
	select {
	case <-arrived:
	case <-time.After(60 * time.Second):
		t.Fatal("no delivery within 60 s")
	}
	mu.Lock()
	first := got[0]
	mu.Unlock()
	headers := map[string]string{}
	for k := range first.header {
		headers[strings.ToLower(k)] = first.header.Get(k)
	}
	in, _ := json.Marshal(map[string]any{"headers": headers, "body": string(first.body)})
	var payload struct {
		Type string
		Data struct {
			EntityName, EntityID string
			Record               map[string]any
		}
	}
	if err := json.Unmarshal(node(t, in, "clients/verify-webhook.mjs", wh.SigningSecret), &payload); err != nil {
		t.Fatal(err)
	}
	if payload.Type != "entity.created" || payload.Data.EntityName != "Note" || payload.Data.EntityID != rec.ID || payload.Data.Record["title"] != "hooked" {
		t.Fatalf("verified payload: %+v", payload)
	}
	// A tampered body must not verify.
	bad, _ := json.Marshal(map[string]any{"headers": headers, "body": strings.Replace(string(first.body), "hooked", "hacked", 1)})
	cmd := exec.CommandContext(t.Context(), "node", filepath.Join(npmDir, "clients", "verify-webhook.mjs"), wh.SigningSecret)
	cmd.Stdin = bytes.NewReader(bad)
	if err := cmd.Run(); err == nil {
		t.Fatal("a tampered delivery verified")
	}
}

// The downloaded OpenAPI document points at the server (DDS_PUBLIC_URL is
// unset: the default follows DDS_HTTP_ADDR), and openapi-typescript turns it
// into types that tsc compiles, used as a client would use them.
func TestOpenAPITypesCompile(t *testing.T) {
	t.Parallel()
	d := local
	_, key, schemaID := tenantWithSchema(t, d)
	doc := d.do(t, http.StatusOK, "GET", "/api/v1/schemas/"+schemaID+"/openapi.json", key, nil)
	var parsed struct{ Servers []struct{ URL string } }
	doc.decode(t, &parsed)
	if len(parsed.Servers) != 1 || parsed.Servers[0].URL != d.URL {
		t.Fatalf("servers = %+v, want %s (where the server listens)", parsed.Servers, d.URL)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "openapi.json"), doc.Body, 0o600); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(npmDir, "node_modules", ".bin")
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), filepath.Join(bin, name), args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
	}
	run("openapi-typescript", "openapi.json", "--output", "dds.ts")
	client := `import type { components, paths } from "./dds";
type Note = components["schemas"]["Note"];
type NoteInput = components["schemas"]["Note.Input"];
const input: NoteInput = { title: "typed", stars: 3 };
const note: Note = { id: "x", createdAt: "t", updatedAt: "t", title: input.title, stars: null, attachment: null };
const title: string = note.title; // required: not optional
type Created = paths["/api/v1/dynamic/Note"]["post"]["responses"][201]["content"]["application/json"];
const created: Created = note;
// @ts-expect-error title is required in the input
const missing: NoteInput = { stars: 1 };
export { title, created, missing };
`
	if err := os.WriteFile(filepath.Join(dir, "client.ts"), []byte(client), 0o600); err != nil {
		t.Fatal(err)
	}
	run("tsc", "--noEmit", "--strict", "--target", "es2022", "--module", "es2022", "--moduleResolution", "bundler", "client.ts")
}

// A presigned upload and download done exactly as the URLs are given, with
// the local driver (URLs on the server itself) and the s3 driver (MinIO).
func TestPresignedFiles(t *testing.T) {
	t.Parallel()
	for _, d := range []*deployment{local, s3} {
		name := "local"
		if d == s3 {
			name = "s3"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, key, _ := tenantWithSchema(t, d)
			content := []byte("hello from the e2e test, " + name)
			var up struct {
				FileID, UploadURL string
				Headers           map[string]string
			}
			d.do(t, http.StatusCreated, "POST", "/api/v1/files/upload-url", key, map[string]any{
				"fileName": "hello.txt", "mimeType": "text/plain", "sizeBytes": len(content)}).decode(t, &up)
			if d == local && !strings.HasPrefix(up.UploadURL, d.URL+"/") {
				t.Fatalf("local upload URL %s is not on the server %s", up.UploadURL, d.URL)
			}
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
			d.do(t, http.StatusOK, "POST", "/api/v1/files/"+up.FileID+"/confirm", key, nil)
			// The file can be referenced by a record now.
			d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "with file", "attachment": up.FileID})
			var dl struct{ URL string }
			d.do(t, http.StatusOK, "GET", "/api/v1/files/"+up.FileID+"/download-url", key, nil).decode(t, &dl)
			res, err = http.Get(dl.URL)
			if err != nil {
				t.Fatal(err)
			}
			b, _ = io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusOK || !bytes.Equal(b, content) {
				t.Fatalf("GET the download URL: %d %q", res.StatusCode, b)
			}
		})
	}
}

// The Connect services answer a Connect client (and gRPC over h2c: the
// server speaks unencrypted HTTP/2).
func TestConnectClient(t *testing.T) {
	t.Parallel()
	d := local
	_, key, _ := tenantWithSchema(t, d)
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", key, map[string]any{"title": "over connect", "stars": 5})
	auth := connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+key)
			return next(ctx, req)
		}
	}))
	records := ddsv1connect.NewRecordServiceClient(http.DefaultClient, d.URL, auth)
	res, err := records.List(t.Context(), connect.NewRequest(&ddsv1.ListRequest{Entity: "Note", Select: []string{"title"}}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Msg.Items) != 1 || res.Msg.Items[0].Fields["title"].GetStringValue() != "over connect" {
		t.Fatalf("List: %v", res.Msg.Items)
	}
	rec, err := structpb.NewStruct(map[string]any{"title": "created over connect"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := records.Create(t.Context(), connect.NewRequest(&ddsv1.CreateRequest{Entity: "Note", Record: rec})); err != nil {
		t.Fatal(err)
	}
	// An unknown entity is a Connect error with a code, not a transport failure.
	_, err = records.List(t.Context(), connect.NewRequest(&ddsv1.ListRequest{Entity: "Nope"}))
	if connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("List of an unknown entity: %v", err)
	}
}

// The management surface: scoped keys, tokens, the DELETE rule, metrics.
func TestKeysAndManagement(t *testing.T) {
	t.Parallel()
	d := local
	_, admin, _ := tenantWithSchema(t, d)
	var k struct{ ID, Key string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "reader", "scopes": []string{"entity:Note:read"}}).decode(t, &k)
	if k.Key == "" {
		t.Fatalf("key: %+v", k)
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Note", k.Key, nil)
	d.do(t, http.StatusForbidden, "POST", "/api/v1/dynamic/Note", k.Key, map[string]any{"title": "no"})
	var tok struct{ AccessToken string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", k.Key, map[string]any{"scopes": []string{"entity:Note:read"}}).decode(t, &tok)
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Note", tok.AccessToken, nil)
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/api-keys/"+k.ID, admin, nil)
	// Revocation reaches the server at once (same process) — the key is refused.
	d.do(t, http.StatusUnauthorized, "GET", "/api/v1/dynamic/Note", k.Key, nil)

	// A DELETE without a body must not claim a JSON body.
	var rec struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Note", admin, map[string]any{"title": "x"}).decode(t, &rec)
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodDelete, d.URL+"/api/v1/dynamic/Note/"+rec.ID, nil)
	req.Header.Set("Authorization", "Bearer "+admin)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest {
		t.Fatalf("DELETE with Content-Type: application/json and no body: %d, want 400", res.StatusCode)
	}
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Note/"+rec.ID, admin, nil)

	m := d.do(t, http.StatusOK, "GET", "/metrics", "", nil)
	if !bytes.Contains(m.Body, []byte("go_goroutines")) {
		t.Fatalf("metrics: %.300s", m.Body)
	}
}

package jobs_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	tworker "go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/internal/testenv"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/jobs"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/searchattr"
	"github.com/dds-project/dds/server"
	"github.com/dds-project/dds/storage"
)

// env is one DDS server and one in-process worker (jobs, file uploads) on
// a task queue of this test binary, over the stack of `make test`.
type env struct {
	app *testenv.App
}

var sharedEnv teststack.Once[*env]

func setup(t *testing.T) *env {
	t.Helper()
	teststack.Need(t, "TEMPORAL_ADDRESS")
	hostPort := os.Getenv("TEMPORAL_ADDRESS")
	d := testenv.DB(t)
	cfg := testenv.Config(t)
	return sharedEnv.Get(t, func(testing.TB) (*env, error) {
		e, err := func() (*env, error) {
			ctx := context.Background()
			dir, err := os.MkdirTemp("", "dds-jobs-test-")
			if err != nil {
				return nil, err
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			cfg.PublicURL = "http://" + ln.Addr().String()
			cfg.TemporalAddress = hostPort
			cfg.TemporalTaskQueue = "jobs-test-" + uuid.NewString()
			cfg.FileStorageDriver, cfg.FileStorageLocalDir = "local", dir
			log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			s, err := server.New(ctx, cfg, log)
			if err != nil {
				return nil, err
			}
			s.Start(ctx, ln)
			store, err := storage.Open(ctx, storage.FromConfig(cfg))
			if err != nil {
				return nil, err
			}
			tc, err := client.Dial(client.Options{HostPort: hostPort, Logger: tlog.NewStructuredLogger(log)})
			if err != nil {
				return nil, err
			}
			if err := searchattr.Ensure(ctx, tc, "default"); err != nil {
				return nil, err
			}
			w := tworker.New(tc, cfg.TemporalTaskQueue, tworker.Options{})
			files.Register(w, d, store)
			jobs.Register(w, jobs.NewExecutor(d, records.NewStore(d, schema.NewService(d), nil), store, nil, log))
			if err := w.Start(); err != nil {
				return nil, err
			}
			return &env{app: &testenv.App{URL: cfg.PublicURL, Server: s, Client: &http.Client{Timeout: 60 * time.Second}}}, nil
		}()
		if err != nil {
			return nil, fmt.Errorf("start server and worker: %w", err)
		}
		return e, nil
	})
}

// productSchema has a required field, an ENUM, a unique field, a list, a
// JSON and a FILE field: everything an import validates.
var productSchema = map[string]any{"name": "shop", "entities": []any{
	map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER"},
		map[string]any{"name": "stock", "type": "INTEGER", "default": 0},
		map[string]any{"name": "status", "type": "ENUM", "values": []any{"draft", "live"}},
		map[string]any{"name": "sku", "type": "STRING", "unique": true},
		map[string]any{"name": "tags", "type": "STRING", "list": true},
		map[string]any{"name": "attributes", "type": "JSON"},
		map[string]any{"name": "manual", "type": "FILE"},
	}}}}

// tenant creates a tenant with the product schema and returns its admin key.
func (e *env) tenant(t *testing.T) (string, string) {
	t.Helper()
	id, key := e.app.Tenant(t)
	e.app.Schema(t, key, productSchema)
	return id, key
}

// upload stores body as a confirmed file and returns its id.
func (e *env) upload(t *testing.T, key, name, ct string, body []byte) string {
	t.Helper()
	return e.app.Upload(t, key, name, ct, body)
}

// job is the API's job body.
type job struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Entity   string `json:"entity"`
	Status   string `json:"status"`
	Progress struct {
		Processed int64  `json:"processed"`
		Total     *int64 `json:"total"`
	} `json:"progress"`
	Result *struct {
		SuccessCount int64 `json:"successCount"`
		FailureCount int64 `json:"failureCount"`
		Failed       []struct {
			Index int            `json:"index"`
			Item  any            `json:"item"`
			Error map[string]any `json:"error"`
		} `json:"failed"`
	} `json:"result"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Field   string `json:"field"`
	} `json:"error"`
	CreatedAt  time.Time  `json:"createdAt"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

func (e *env) start(t *testing.T, key string, body map[string]any) job {
	t.Helper()
	var j job
	e.app.Must(t, http.StatusAccepted, "POST", "/api/v1/jobs", key, body).Decode(t, &j)
	if j.ID == "" || j.Status != "queued" {
		t.Fatalf("new job %+v, want an id and status queued", j)
	}
	return j
}

// wait polls the job until it ends.
func (e *env) wait(t *testing.T, key, id string) job {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var j job
		e.app.Must(t, http.StatusOK, "GET", "/api/v1/jobs/"+id, key, nil).Decode(t, &j)
		switch j.Status {
		case "succeeded", "failed", "cancelled":
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %s after 2 minutes", id, j.Status)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (e *env) run(t *testing.T, key string, body map[string]any) job {
	t.Helper()
	return e.wait(t, key, e.start(t, key, body).ID)
}

// count returns how many Products the tenant holds, and how many events of
// type it emitted.
func count(t *testing.T, tenant, eventType string) (records, events int) {
	t.Helper()
	d := testenv.DB(t)
	var pg string
	if err := d.Get(&pg, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1 AND active`, tenant); err != nil {
		t.Fatal(err)
	}
	if err := d.Get(&records, fmt.Sprintf(`SELECT count(*) FROM %q."Product"`, pg)); err != nil {
		t.Fatal(err)
	}
	if err := d.Get(&events, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND type = $2`, tenant, eventType); err != nil {
		t.Fatal(err)
	}
	return records, events
}

func ndjson(n int, line func(i int) string) []byte {
	var b strings.Builder
	for i := range n {
		b.WriteString(line(i))
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func TestImportNDJSON(t *testing.T) {
	e := setup(t)
	tenant, key := e.tenant(t)
	const n = 2000
	file := e.upload(t, key, "products.ndjson", "application/x-ndjson", ndjson(n, func(i int) string {
		return fmt.Sprintf(`{"name": "Product %d", "price": %d.5, "status": "live", "sku": "SKU-%d", "tags": ["a", "b"], "attributes": {"i": %d}}`, i, i, i, i)
	}))
	j := e.run(t, key, map[string]any{"type": "import", "entity": "Product", "fileId": file, "format": "ndjson"})
	if j.Status != "succeeded" || j.Result == nil || j.Result.SuccessCount != n || j.Result.FailureCount != 0 || j.Error != nil {
		t.Fatalf("job %+v, want succeeded with %d records", j, n)
	}
	if j.Progress.Processed != n || j.Progress.Total == nil || *j.Progress.Total != n || j.StartedAt == nil || j.FinishedAt == nil {
		t.Fatalf("progress %+v started %v finished %v, want %d of %d", j.Progress, j.StartedAt, j.FinishedAt, n, n)
	}
	if recs, evs := count(t, tenant, "entity.created"); recs != n || evs != n {
		t.Fatalf("%d records and %d entity.created events, want %d of each", recs, evs, n)
	}
	// The records are what the lines said, defaults applied.
	r := e.app.Must(t, http.StatusOK, "POST", "/api/v1/dynamic/Product/query", key,
		map[string]any{"where": map[string]any{"sku": "SKU-7"}}).JSON(t)
	items := r["items"].([]any)
	if len(items) != 1 {
		t.Fatalf("query SKU-7: %v", r)
	}
	rec := items[0].(map[string]any)
	if rec["name"] != "Product 7" || rec["price"] != 7.5 || rec["stock"] != float64(0) || rec["attributes"].(map[string]any)["i"] != float64(7) {
		t.Fatalf("imported record %v", rec)
	}
}

func TestImportCSV(t *testing.T) {
	e := setup(t)
	tenant, key := e.tenant(t)
	body := "name,price,stock,status,tags,attributes,id\n" +
		"Lamp,39.5,3,live,\"[\"\"home\"\",\"\"light\"\"]\",\"{\"\"w\"\": 40}\",ignored\n" +
		"\"Desk, oak\",,,,,,\n" +
		"\"Multi\nline\",1,1,draft,[],null,\n"
	file := e.upload(t, key, "products.csv", "text/csv", []byte(body))
	j := e.run(t, key, map[string]any{"type": "import", "entity": "Product", "fileId": file, "format": "csv", "emitEvents": false})
	if j.Status != "succeeded" || j.Result.SuccessCount != 3 {
		t.Fatalf("job %+v, want 3 records", j)
	}
	if recs, evs := count(t, tenant, "entity.created"); recs != 3 || evs != 0 {
		t.Fatalf("%d records, %d events; want 3 records and no events (emitEvents false)", recs, evs)
	}
	r := e.app.Must(t, http.StatusOK, "POST", "/api/v1/dynamic/Product/query", key,
		map[string]any{"where": map[string]any{"name": "Desk, oak"}}).JSON(t)
	rec := r["items"].([]any)[0].(map[string]any)
	if rec["price"] != nil || rec["stock"] != nil || rec["status"] != nil {
		t.Fatalf("empty CSV values must be null: %v", rec)
	}
	r = e.app.Must(t, http.StatusOK, "POST", "/api/v1/dynamic/Product/query", key,
		map[string]any{"where": map[string]any{"name": "Lamp"}}).JSON(t)
	rec = r["items"].([]any)[0].(map[string]any)
	if tags := rec["tags"].([]any); len(tags) != 2 || tags[1] != "light" || rec["attributes"].(map[string]any)["w"] != float64(40) {
		t.Fatalf("list and JSON CSV values are parsed as JSON: %v", rec)
	}
}

// Every kind of bad item fails the job, each is listed with its line and
// field, and nothing is written.
func TestImportInvalidItemsWriteNothing(t *testing.T) {
	e := setup(t)
	tenant, key := e.tenant(t)
	e.app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "stored", "sku": "TAKEN"})
	_, otherKey := e.tenant(t)
	foreign := e.upload(t, otherKey, "x.txt", "text/plain", []byte("x"))
	lines := []string{
		`{"name": "ok 0"}`,
		`{"name": "bad price", "price": "cheap"}`, // 1: type
		`{"price": 3}`,                            // 2: required
		`{"name": "bad enum", "status": "gone"}`,  // 3: ENUM
		`[1, 2]`,                                  // 4: not an object
		`{"name": "dup a", "sku": "S1"}`,
		`{"name": "dup b", "sku": "S1"}`,                        // 6: unique within the file
		`{"name": "taken", "sku": "TAKEN"}`,                     // 7: unique against the table
		`{"name": "foreign file", "manual": "` + foreign + `"}`, // 8: another tenant's file
		`{"name": "unknown", "colour": "red"}`,                  // 9: unknown field
		`not json`,                                              // 10
	}
	file := e.upload(t, key, "bad.ndjson", "application/x-ndjson", []byte(strings.Join(lines, "\n")))
	j := e.run(t, key, map[string]any{"type": "import", "entity": "Product", "fileId": file, "format": "ndjson"})
	if j.Status != "failed" || j.Result == nil || j.Result.FailureCount != 9 || j.Result.SuccessCount != 0 {
		t.Fatalf("job %+v result %+v, want failed with 9 failures", j, j.Result)
	}
	want := map[int]string{1: "price", 2: "name", 3: "status", 4: "", 6: "sku", 7: "sku", 8: "manual", 9: "colour", 10: ""}
	got := map[int]string{}
	for _, f := range j.Result.Failed {
		field, _ := f.Error["field"].(string)
		got[f.Index] = field
		if f.Error["message"] == "" || f.Item == nil {
			t.Errorf("failure %+v lacks a message or the item", f)
		}
	}
	for i, field := range want {
		if g, ok := got[i]; !ok || g != field {
			t.Errorf("line %d: failure field %q (listed %v), want %q", i, g, ok, field)
		}
	}
	if j.Error == nil || j.Error.Code != "VALIDATION_ERROR" {
		t.Errorf("job error %+v, want a VALIDATION_ERROR", j.Error)
	}
	if recs, evs := count(t, tenant, "entity.created"); recs != 1 || evs != 1 {
		t.Fatalf("%d records, %d events after a failed import; want only the stored one", recs, evs)
	}
}

// Files that are not what the job says fail it cleanly, or are refused.
func TestImportBadFiles(t *testing.T) {
	e := setup(t)
	tenant, key := e.tenant(t)
	cases := []struct {
		name, format string
		body         []byte
		field        string
		message      string
	}{
		{"unknown header", "csv", []byte("name,colour\nLamp,red\n"), "colour", "not a field of Product"},
		{"no line breaks", "ndjson", bytes.Repeat([]byte{0xff, 0x00, 'x'}, 400_000), "", "longer than"},
		{"csv without line breaks", "csv", bytes.Repeat([]byte("a"), 1_100_000), "", "longer than"},
		{"broken quotes", "csv", []byte("name\n\"Lamp\n"), "", "not valid CSV"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := e.upload(t, key, "f", "application/octet-stream", c.body)
			j := e.run(t, key, map[string]any{"type": "import", "entity": "Product", "fileId": file, "format": c.format})
			if j.Status != "failed" || j.Error == nil || j.Error.Field != c.field || !strings.Contains(j.Error.Message, c.message) {
				t.Fatalf("job %+v error %+v, want failed naming %q with %q", j, j.Error, c.field, c.message)
			}
		})
	}
	if recs, _ := count(t, tenant, "entity.created"); recs != 0 {
		t.Fatalf("%d records written by failed imports", recs)
	}
	// Refused before the job exists.
	_, otherKey := e.tenant(t)
	foreign := e.upload(t, otherKey, "x.ndjson", "application/x-ndjson", []byte(`{"name":"x"}`))
	var pending struct {
		FileID string `json:"fileId"`
	}
	e.app.Must(t, http.StatusCreated, "POST", "/api/v1/files/upload-url", key,
		map[string]any{"fileName": "p.ndjson", "mimeType": "application/x-ndjson", "sizeBytes": 10}).Decode(t, &pending)
	for _, c := range []struct {
		body   map[string]any
		status int
		field  string
	}{
		{map[string]any{"type": "import", "entity": "Product", "fileId": foreign, "format": "ndjson"}, 404, ""},
		{map[string]any{"type": "import", "entity": "Product", "fileId": pending.FileID, "format": "ndjson"}, 400, "fileId"},
		{map[string]any{"type": "import", "entity": "Product", "fileId": foreign, "format": "xml"}, 400, "format"},
		{map[string]any{"type": "import", "entity": "Nope", "fileId": foreign, "format": "csv"}, 404, ""},
		{map[string]any{"type": "merge", "entity": "Product"}, 400, "type"},
		{map[string]any{"type": "import", "entity": "Product", "fileId": "x", "format": "csv"}, 400, "fileId"},
		{map[string]any{"type": "import", "entity": "Product", "fileId": foreign, "format": "csv", "where": map[string]any{}}, 400, "where"},
	} {
		r := e.app.Do(t, "POST", "/api/v1/jobs", key, c.body)
		if r.Status != c.status || (c.field != "" && !strings.Contains(string(r.Body), `"field":"`+c.field+`"`)) {
			t.Errorf("POST %v: %d %s, want %d naming %q", c.body, r.Status, r.Body, c.status, c.field)
		}
	}
}

func TestUpdateAndDeleteByFilter(t *testing.T) {
	e := setup(t)
	tenant, key := e.tenant(t)
	var items []any
	for i := range 300 {
		items = append(items, map[string]any{"name": fmt.Sprintf("p%d", i), "price": i, "sku": fmt.Sprintf("S%d", i)})
	}
	e.app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product/batch", key, map[string]any{"items": items[:150]})
	e.app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product/batch", key, map[string]any{"items": items[150:]})

	j := e.run(t, key, map[string]any{"type": "update", "entity": "Product",
		"where": map[string]any{"price": map[string]any{"$lt": 100}}, "set": map[string]any{"status": "live", "stock": 7}})
	if j.Status != "succeeded" || j.Result.SuccessCount != 100 || *j.Progress.Total != 100 {
		t.Fatalf("update job %+v, want 100 records", j)
	}
	r := e.app.Must(t, http.StatusOK, "POST", "/api/v1/dynamic/Product/query", key,
		map[string]any{"where": map[string]any{"status": "live", "stock": 7}, "limit": 1, "includeCount": true}).JSON(t)
	if r["count"] != float64(100) {
		t.Fatalf("%v records updated, want 100", r)
	}
	if _, evs := count(t, tenant, "entity.updated"); evs != 100 {
		t.Fatalf("%d entity.updated events, want 100", evs)
	}

	// A set that would break a unique field fails the job: nothing changes.
	j = e.run(t, key, map[string]any{"type": "update", "entity": "Product", "all": true, "set": map[string]any{"sku": "same"}})
	if j.Status != "failed" || j.Error == nil || j.Error.Code != "CONFLICT" || j.Error.Field != "sku" {
		t.Fatalf("unique-breaking update %+v %+v, want failed with CONFLICT on sku", j, j.Error)
	}
	if _, evs := count(t, tenant, "entity.updated"); evs != 100 {
		t.Fatalf("a failed update emitted events (%d, want 100)", evs)
	}

	j = e.run(t, key, map[string]any{"type": "delete", "entity": "Product", "where": map[string]any{"price": map[string]any{"$gte": 250}}})
	if j.Status != "succeeded" || j.Result.SuccessCount != 50 {
		t.Fatalf("delete job %+v, want 50 records", j)
	}
	if recs, evs := count(t, tenant, "entity.deleted"); recs != 250 || evs != 50 {
		t.Fatalf("%d records, %d entity.deleted events; want 250 and 50", recs, evs)
	}
	j = e.run(t, key, map[string]any{"type": "delete", "entity": "Product", "all": true, "emitEvents": false})
	if j.Status != "succeeded" || j.Result.SuccessCount != 250 {
		t.Fatalf("delete all %+v, want 250", j)
	}
	if recs, evs := count(t, tenant, "entity.deleted"); recs != 0 || evs != 50 {
		t.Fatalf("%d records, %d entity.deleted events; want 0 and 50 (emitEvents false)", recs, evs)
	}

	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{map[string]any{"type": "delete", "entity": "Product"}, "where"},
		{map[string]any{"type": "delete", "entity": "Product", "where": map[string]any{}}, "where"},
		{map[string]any{"type": "update", "entity": "Product", "where": map[string]any{"price": 1}}, "set"},
		{map[string]any{"type": "update", "entity": "Product", "all": true, "set": map[string]any{"price": "x"}}, "set.price"},
		{map[string]any{"type": "update", "entity": "Product", "all": true, "set": map[string]any{"nope": 1}}, "set.nope"},
		{map[string]any{"type": "delete", "entity": "Product", "where": map[string]any{"nope\"; DROP TABLE x": 1}}, ""},
		{map[string]any{"type": "delete", "entity": "Product", "where": map[string]any{"price": map[string]any{"$regex": 1}}}, ""},
		{map[string]any{"type": "delete", "entity": "Product", "all": true, "fileId": "x"}, "fileId"},
	} {
		r := e.app.Do(t, "POST", "/api/v1/jobs", key, c.body)
		if r.Status != http.StatusBadRequest || (c.field != "" && !strings.Contains(string(r.Body), `"field":"`+c.field+`"`)) {
			t.Errorf("POST %v: %d %s, want 400 naming %q", c.body, r.Status, r.Body, c.field)
		}
	}
}

func TestJobScopesAndTenants(t *testing.T) {
	e := setup(t)
	_, key := e.tenant(t)
	file := e.upload(t, key, "one.ndjson", "application/x-ndjson", []byte(`{"name":"one"}`+"\n"))
	mkKey := func(scopes ...string) string {
		var k struct {
			Key string `json:"key"`
		}
		e.app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "k", "scopes": scopes}).Decode(t, &k)
		if k.Key == "" {
			t.Fatal("no key in the api-keys response")
		}
		return k.Key
	}
	importBody := map[string]any{"type": "import", "entity": "Product", "fileId": file, "format": "ndjson"}
	if r := e.app.Do(t, "POST", "/api/v1/jobs", mkKey("job:*:create"), importBody); r.Status != http.StatusForbidden {
		t.Errorf("import without entity:Product:create: %d %s, want 403", r.Status, r.Body)
	}
	if r := e.app.Do(t, "POST", "/api/v1/jobs", mkKey("entity:*:*"), importBody); r.Status != http.StatusForbidden {
		t.Errorf("import without job:*:create: %d %s, want 403", r.Status, r.Body)
	}
	del := map[string]any{"type": "delete", "entity": "Product", "all": true}
	if r := e.app.Do(t, "POST", "/api/v1/jobs", mkKey("job:*:create", "entity:Product:create"), del); r.Status != http.StatusForbidden {
		t.Errorf("delete job with only entity create: %d %s, want 403", r.Status, r.Body)
	}
	creator := mkKey("job:*:create", "entity:Product:create")
	j := e.start(t, creator, importBody)
	reader := mkKey("job:*:read")
	if got := e.wait(t, reader, j.ID); got.Status != "succeeded" {
		t.Fatalf("job %+v", got)
	}
	if r := e.app.Do(t, "POST", "/api/v1/jobs/"+j.ID+"/cancel", reader, nil); r.Status != http.StatusForbidden {
		t.Errorf("cancel with job:*:read: %d, want 403", r.Status)
	}
	if r := e.app.Do(t, "POST", "/api/v1/jobs/"+j.ID+"/cancel", key, nil); r.Status != http.StatusConflict {
		t.Errorf("cancel of a finished job: %d %s, want 409", r.Status, r.Body)
	}
	_, otherKey := e.tenant(t)
	for _, p := range []string{"/api/v1/jobs/" + j.ID, "/api/v1/jobs/not-a-uuid"} {
		if r := e.app.Do(t, "GET", p, otherKey, nil); r.Status != http.StatusNotFound {
			t.Errorf("GET %s of another tenant: %d, want 404", p, r.Status)
		}
	}
	if r := e.app.Do(t, "POST", "/api/v1/jobs/"+j.ID+"/cancel", otherKey, nil); r.Status != http.StatusNotFound {
		t.Errorf("cancel another tenant's job: %d, want 404", r.Status)
	}
	var list struct {
		Jobs []job `json:"jobs"`
	}
	e.app.Must(t, http.StatusOK, "GET", "/api/v1/jobs", otherKey, nil).Decode(t, &list)
	if len(list.Jobs) != 0 {
		t.Errorf("another tenant lists %d jobs", len(list.Jobs))
	}
}

func TestListNewestFirst(t *testing.T) {
	e := setup(t)
	_, key := e.tenant(t)
	first := e.run(t, key, map[string]any{"type": "delete", "entity": "Product", "all": true})
	second := e.run(t, key, map[string]any{"type": "update", "entity": "Product", "where": map[string]any{"name": "none"}, "set": map[string]any{"stock": 1}})
	var list struct {
		Jobs []job `json:"jobs"`
	}
	e.app.Must(t, http.StatusOK, "GET", "/api/v1/jobs", key, nil).Decode(t, &list)
	if len(list.Jobs) != 2 || list.Jobs[0].ID != second.ID || list.Jobs[1].ID != first.ID {
		t.Fatalf("list %+v, want the update then the delete", list.Jobs)
	}
	e.app.Must(t, http.StatusOK, "GET", "/api/v1/jobs?status=failed", key, nil).Decode(t, &list)
	if len(list.Jobs) != 0 {
		t.Fatalf("?status=failed listed %d jobs", len(list.Jobs))
	}
	if r := e.app.Do(t, "GET", "/api/v1/jobs?status=done", key, nil); r.Status != http.StatusBadRequest {
		t.Fatalf("?status=done: %d, want 400", r.Status)
	}
}

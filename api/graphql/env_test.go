package graphql

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/db"
	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/graphql/live"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/tenant"
)

// countingStore returns store observed by a statement counter (the seam
// the one-statement-per-root-field tests read).
func countingStore(store *records.Store) (*records.Store, *atomic.Int64) {
	var n atomic.Int64
	return store.Observed(func(query.Statement) { n.Add(1) }), &n
}

// env is a real GraphQL server over the test database: the router, the
// authenticator, the records store and the subscription socket of
// production, on 127.0.0.1.
type env struct {
	URL     string
	DB      *sqlx.DB
	Authn   *auth.Authenticator
	Keys    *auth.Keys
	Tenants *tenant.Service
	Schemas *schema.Service
	Store   *records.Store
	Subs    *Subscriptions
	Feed    *live.Feed
}

var sharedEnv teststack.Once[*env]

const testJWTSecret = "graphql-test-secret-0123456789abcdef0123"

func testEnv(t testing.TB) *env {
	t.Helper()
	teststack.Need(t, "DATABASE_URL")
	return sharedEnv.Get(t, func(testing.TB) (*env, error) { return startEnv(os.Getenv("DATABASE_URL"), 30) })
}

// startEnv starts an env whose pool holds at most maxConns connections.
func startEnv(url string, maxConns int) (*env, error) {
	ctx := context.Background()
	d, err := db.Open(ctx, url, maxConns)
	if err != nil {
		return nil, err
	}
	if err := schema.Migrate(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	e := &env{DB: d}
	e.Schemas = schema.NewService(d)
	e.Keys = auth.NewKeys(d, "test")
	e.Tenants = tenant.NewService(d, e.Keys)
	e.Authn = auth.NewAuthenticator(d, "test", []byte(testJWTSecret), time.Minute, log)
	events := pgnotify.NewPublisher(d, log)
	go events.Run(ctx)
	e.Store = records.NewStore(d, e.Schemas, nil, records.WithEventNotifications(events))
	hub := pgnotify.New(url, log)
	limits := Limits{}
	// One engine for both transports, as server.New wires them.
	engine := gql.NewEngine(e.Store, limits, log)
	e.Feed = live.NewFeed(e.Store, engine.Executor(), log)
	e.Subs = NewSocket(e.Authn, e.Store, engine, e.Feed)
	e.Subs.InitTimeout = 2 * time.Second
	if err := hub.Subscribe("dds_events", e.Feed.Notify); err != nil {
		return nil, err
	}
	if err := hub.Subscribe("dds_schemas", e.Schemas.Invalidate); err != nil {
		return nil, err
	}
	go hub.Run(ctx)
	go e.Feed.Run(ctx)
	r := api.NewRouter(e.Authn, nil, 16<<20)
	NewHandler(engine, e.Store, e.Subs, log).Routes(r)
	srv := httptest.NewServer(r)
	e.URL = srv.URL
	return e, nil
}

// tenantWith creates a tenant with def as its active schema; it returns
// the tenant id and an admin key.
func (e *env) tenantWith(t testing.TB, def *schema.Definition) (string, string) {
	t.Helper()
	ctx := context.Background()
	c, err := e.Tenants.Create(ctx, t.Name())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Schemas.Create(ctx, c.TenantID, def); err != nil {
		t.Fatal(err)
	}
	return c.TenantID, c.APIKey
}

// key creates an API key with scopes.
func (e *env) key(t testing.TB, tenantID string, scopes ...string) string {
	t.Helper()
	sc, err := auth.ParseScopes(scopes)
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.Keys.Create(context.Background(), tenantID, "k", sc)
	if err != nil {
		t.Fatal(err)
	}
	return k.Key
}

func (e *env) scope(t testing.TB, tenantID string) *records.Scope {
	t.Helper()
	sc, err := e.Store.Scope(context.Background(), records.SystemPrincipal(tenantID))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// create inserts a record through the store and returns its id.
func (e *env) create(t testing.TB, tenantID, entity string, fields map[string]any) string {
	t.Helper()
	raw, err := e.Store.Create(context.Background(), e.scope(t, tenantID), entity, normAll(t, fields))
	if err != nil {
		t.Fatalf("create %s: %v", entity, err)
	}
	var m struct{ ID string }
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("create %s: decode %s: %v", entity, raw, err)
	}
	return m.ID
}

// normAll round-trips m through JSON with UseNumber, the form the HTTP layer hands the store.
func normAll(t testing.TB, m map[string]any) map[string]any {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var out map[string]any
	if err := d.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

// link inserts an edge (test fixture: the edge API is records' concern).
func (e *env) link(t testing.TB, tenantID, rel, from, to string, props map[string]any) string {
	t.Helper()
	sc := e.scope(t, tenantID)
	if props == nil {
		props = map[string]any{}
	}
	p, _ := json.Marshal(props)
	id := uuid.Must(uuid.NewV7()).String()
	_, err := e.DB.Exec(`INSERT INTO `+sc.Table(rel)+` (id, source_id, target_id, properties) VALUES ($1, $2, $3, $4)`, id, from, to, string(p))
	if err != nil {
		t.Fatalf("link: %v", err)
	}
	return id
}

type gqlResp struct {
	Status int
	Header http.Header
	Body   []byte
	Data   map[string]any
	Errors []struct {
		Message    string         `json:"message"`
		Path       []any          `json:"path"`
		Locations  []Location     `json:"locations"`
		Extensions map[string]any `json:"extensions"`
	}
}

func (r *gqlResp) code(i int) string {
	if i >= len(r.Errors) {
		return ""
	}
	c, _ := r.Errors[i].Extensions["code"].(string)
	return c
}

// gql posts a query as application/json with the admin key.
func (e *env) gql(t testing.TB, tenantID, key, q string, vars map[string]any) *gqlResp {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"query": q, "variables": vars})
	return e.post(t, "/api/v1/dynamic-gql/"+tenantID, key, body, "application/graphql-response+json")
}

func (e *env) post(t testing.TB, path, key string, body []byte, accept string) *gqlResp {
	t.Helper()
	req, _ := http.NewRequest("POST", e.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return do(t, req)
}

func do(t testing.TB, req *http.Request) *gqlResp {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	r := &gqlResp{Status: resp.StatusCode, Header: resp.Header, Body: b}
	if strings.Contains(resp.Header.Get("Content-Type"), "json") {
		if err := json.Unmarshal(b, r); err != nil {
			t.Fatalf("response is not JSON: %s", b)
		}
	}
	return r
}

// ok fails unless the response is 200 without errors.
func (r *gqlResp) ok(t testing.TB) map[string]any {
	t.Helper()
	if r.Status != 200 || len(r.Errors) > 0 {
		t.Fatalf("status %d: %s", r.Status, r.Body)
	}
	return r.Data
}

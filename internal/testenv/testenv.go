// Package testenv gives integration tests the real services: the migrated
// Postgres of `make test`, a real DDS server on 127.0.0.1, and a fresh tenant
// per test so tests run in parallel without seeing each other. Without the
// stack its helpers skip the test, or fail it where the stack is required
// (see package teststack, whose Main a package using them runs as TestMain).
package testenv

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/server"
)

// OperatorToken is the operator token of test servers.
const OperatorToken = "test-operator-token-0123456789abcdef"

var sharedDB teststack.Once[*sqlx.DB]

// DatabaseURL returns the test database URL; without one it skips the test
// (fails it where the stack is required).
func DatabaseURL(t testing.TB) string {
	t.Helper()
	teststack.Need(t, "DATABASE_URL")
	return os.Getenv("DATABASE_URL")
}

// DB returns a migrated connection pool shared by the test binary.
func DB(t testing.TB) *sqlx.DB {
	t.Helper()
	url := DatabaseURL(t)
	return sharedDB.Get(t, func(testing.TB) (*sqlx.DB, error) {
		ctx := context.Background()
		d, err := db.Open(ctx, url, 20)
		if err != nil {
			return nil, fmt.Errorf("test database: %w", err)
		}
		if err := schema.Migrate(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
			return nil, fmt.Errorf("test database: %w", err)
		}
		return d, nil
	})
}

// unlistenedURL is the public URL of a Config until a server listens:
// NewServer and Server replace it with the server's own URL; processes built
// from Config without listening (a worker) never hand it to a client.
const unlistenedURL = "http://127.0.0.1:0"

// Config returns a server configuration for tests: rate limits off unless
// a test turns them on.
func Config(t testing.TB) *config.Config {
	return &config.Config{
		DatabaseURL: DatabaseURL(t), HTTPAddr: "127.0.0.1:0", PublicURL: unlistenedURL, Env: "test",
		OperatorToken: OperatorToken, JWTSecret: "test-jwt-secret-0123456789abcdef0123456789",
		MaxBodyBytes: 16 << 20, DBMaxConns: 20, AuthCacheTTL: time.Minute,
		TemporalAddress: os.Getenv("TEMPORAL_ADDRESS"), TemporalNamespace: "default", TemporalTaskQueue: "dds",
	}
}

// App is a running DDS server.
type App struct {
	URL    string
	Server *server.Server
	Client *http.Client
	stop   func()
}

var sharedApp teststack.Once[*App]

// Server returns the server shared by the test binary (rate limits off).
func Server(t testing.TB) *App {
	t.Helper()
	DB(t)
	return sharedApp.Get(t, func(t testing.TB) (*App, error) {
		a, err := start(Config(t))
		if err != nil {
			return nil, fmt.Errorf("start server: %w", err)
		}
		return a, nil
	})
}

// NewServer starts a dedicated server with cfg (for tests that change
// configuration, such as rate limits); it stops when the test ends.
func NewServer(t testing.TB, cfg *config.Config) *App {
	t.Helper()
	DB(t)
	a, err := start(cfg)
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(a.stop)
	return a
}

func start(cfg *config.Config) (*App, error) {
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cfg.PublicURL == "" || cfg.PublicURL == unlistenedURL { // presigned local URLs and OpenAPI servers point at this server
		cfg.PublicURL = "http://" + ln.Addr().String()
	}
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return &App{URL: "http://" + ln.Addr().String(), Server: s, Client: &http.Client{Timeout: 60 * time.Second}, stop: s.Start(ctx, ln)}, nil
}

// Tenant creates a fresh tenant and returns its id and admin key.
func (a *App) Tenant(t testing.TB) (string, string) {
	t.Helper()
	c, err := a.Server.Tenants.Create(context.Background(), t.Name())
	if err != nil {
		t.Fatalf("create tenant: %v", err)
	}
	return c.TenantID, c.APIKey
}

// Response is a captured HTTP response.
type Response struct {
	Status int
	Header http.Header
	Body   []byte
}

// JSON decodes the body into a generic value (numbers as float64).
func (r *Response) JSON(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.Body, &m); err != nil {
		t.Fatalf("response is not a JSON object (status %d): %s", r.Status, r.Body)
	}
	return m
}

// Decode decodes the body into v.
func (r *Response) Decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode response (status %d): %v: %s", r.Status, err, r.Body)
	}
}

// Do sends a request with a bearer credential (empty for none). body may be
// nil, a string or []byte (sent as is), or any value (sent as JSON).
func (a *App) Do(t testing.TB, method, path, key string, body any, headers ...string) *Response {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req, err := http.NewRequest(method, a.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
		} else {
			req.Header.Set(headers[i], headers[i+1])
		}
	}
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return &Response{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Must is Do that fails the test unless the status is want.
func (a *App) Must(t testing.TB, want int, method, path, key string, body any) *Response {
	t.Helper()
	r := a.Do(t, method, path, key, body)
	if r.Status != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, want, r.Body)
	}
	return r
}

// Schema creates (and, for a tenant's first schema, activates) a schema.
func (a *App) Schema(t testing.TB, key string, def any) map[string]any {
	t.Helper()
	return a.Must(t, http.StatusCreated, "POST", "/api/v1/schemas", key, def).JSON(t)
}

// TenantRow inserts a bare tenant (no keys, no schema) for tests below the
// HTTP layer, and deletes it, with everything it owns, when the test ends.
func TenantRow(t testing.TB, name string) string {
	t.Helper()
	d := DB(t)
	var id string
	if err := d.Get(&id, `INSERT INTO dds.tenants (name) VALUES ($1) RETURNING id`, name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := d.Exec(`DELETE FROM dds.tenants WHERE id = $1`, id); err != nil {
			t.Errorf("cleanup: delete tenant: %v", err)
		}
	})
	return id
}

// Upload stores body as a confirmed file of the key's tenant (upload URL,
// PUT, confirm; a worker must serve the upload workflow) and returns its id.
func (a *App) Upload(t testing.TB, key, name, contentType string, body []byte) string {
	t.Helper()
	var tk struct {
		FileID    string `json:"fileId"`
		UploadURL string `json:"uploadUrl"`
	}
	a.Must(t, http.StatusCreated, "POST", "/api/v1/files/upload-url", key,
		map[string]any{"fileName": name, "mimeType": contentType, "sizeBytes": len(body)}).Decode(t, &tk)
	req, err := http.NewRequest(http.MethodPut, tk.UploadURL, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := a.Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT %s: status %d", name, resp.StatusCode)
	}
	a.Must(t, http.StatusOK, "POST", "/api/v1/files/"+tk.FileID+"/confirm", key, nil)
	return tk.FileID
}

// OwnDatabase returns the URL of a fresh, empty database of the calling
// test on the test server, named after the shared test database and
// suffix (dropped and made again when an earlier run left it), dropped
// when the test ends. For a test whose state must not reach the other
// packages sharing the test database: a schema as an earlier DDS made it,
// which every server started meanwhile would refuse to start on.
func OwnDatabase(t testing.TB, suffix string) string {
	t.Helper()
	u, err := url.Parse(DatabaseURL(t))
	if err != nil {
		t.Fatal(err)
	}
	name := pgx.Identifier{strings.TrimPrefix(u.Path, "/") + "_" + suffix}.Sanitize()
	d := DB(t)
	drop := func() error { _, err := d.Exec(`DROP DATABASE IF EXISTS ` + name + ` WITH (FORCE)`); return err }
	if err := drop(); err != nil {
		t.Fatal(err)
	}
	if _, err := d.Exec(`CREATE DATABASE ` + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Errorf("cleanup: drop database %s: %v", name, err)
		}
	})
	u.Path = "/" + strings.TrimPrefix(u.Path, "/") + "_" + suffix
	return u.String()
}

// HoldLock runs lock (a LOCK statement) in a transaction of a connection of
// its own and returns what commits it, ending the lock; the connection is
// closed when the test ends. For tests that hold another session in place
// at a lock while they line something up.
func HoldLock(ctx context.Context, t testing.TB, d *sqlx.DB, lock string) (release func()) {
	t.Helper()
	c, err := d.Connx(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.ExecContext(ctx, `BEGIN; `+lock); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if _, err := c.ExecContext(ctx, `COMMIT`); err != nil {
			t.Fatal(err)
		}
	}
}

// AwaitBackend runs query, which selects one backend's pid from
// pg_stat_activity, every 10 ms (pg_stat_activity has no notification)
// until it returns a row, and returns the pid. It fails the test on an
// error and when ctx ends; what names the wait in the failure.
func AwaitBackend(ctx context.Context, t testing.TB, d *sqlx.DB, what, query string, args ...any) int {
	t.Helper()
	for {
		var pid int
		err := d.GetContext(ctx, &pid, query, args...)
		if err == nil {
			return pid
		}
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting for %s: %v", what, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

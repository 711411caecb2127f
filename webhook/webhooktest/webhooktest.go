// Package webhooktest holds fixtures for webhook tests: the migrated test
// database, tenants, outbox events, and a local HTTPS receiver that records
// and verifies what it is sent.
package webhooktest

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"go.temporal.io/sdk/client"
	tlog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/testsuite"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/webhook"
)

// DBURL returns the URL of this test binary's own database: relays claim
// every event of the database they run on, so each test package that runs
// a relay gets a database of its own ("dds_wh_<package>"), created and
// migrated on first use. Without DATABASE_URL it skips the test (fails it
// where the stack is required, see package teststack).
func DBURL(t testing.TB) string {
	t.Helper()
	teststack.Need(t, "DATABASE_URL")
	u, err := IsolatedURL()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var (
	isoOnce sync.Once
	isoURL  string
	isoErr  error
)

// IsolatedURL is DBURL for TestMain and helper binaries.
func IsolatedURL() (string, error) {
	isoOnce.Do(func() { isoURL, isoErr = isolated() })
	return isoURL, isoErr
}

func isolated() (string, error) {
	base := os.Getenv("DATABASE_URL")
	if base == "" {
		return "", errors.New("DATABASE_URL is not set: run the tests with `make test` (it starts Postgres and exports it)")
	}
	name := strings.TrimSuffix(filepath.Base(os.Args[0]), ".test")
	name = "dds_wh_" + strings.ToLower(regexp.MustCompile(`[^A-Za-z0-9]+`).ReplaceAllString(name, "_"))
	if v := os.Getenv("DDS_WEBHOOK_TEST_DB"); v != "" {
		name = v
	}
	ctx := context.Background()
	u, err := db.EnsureDatabase(ctx, base, name)
	if err != nil {
		return "", err
	}
	d, err := db.Open(ctx, u, 2)
	if err != nil {
		return "", err
	}
	defer d.Close()
	if err := schema.Migrate(ctx, d, slog.New(slog.DiscardHandler)); err != nil {
		return "", err
	}
	return u, nil
}

// DB opens this test binary's migrated database (see DBURL).
func DB(t testing.TB) *sqlx.DB {
	t.Helper()
	d, err := db.Open(context.Background(), DBURL(t), 20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// StartTemporal starts a Temporal dev server from DDS_TEMPORAL_CLI with
// the DDS search attributes registered. Call from TestMain; stop it there.
func StartTemporal() (*testsuite.DevServer, error) {
	cli := os.Getenv("DDS_TEMPORAL_CLI")
	if cli == "" {
		return nil, errors.New("DDS_TEMPORAL_CLI is not set: run the tests with `make test` (it provides the Temporal CLI)")
	}
	return testsuite.StartDevServer(context.Background(), testsuite.DevServerOptions{
		ExistingPath:  cli,
		LogLevel:      "error",
		ClientOptions: &client.Options{Logger: tlog.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))},
		ExtraArgs: []string{
			"--search-attribute", "DdsTenant=Keyword",
			"--search-attribute", "DdsWebhook=Keyword",
			"--search-attribute", "DdsEventType=Keyword",
		},
	})
}

// Tenant inserts a fresh tenant and returns its id.
func Tenant(t testing.TB, d *sqlx.DB, name string) string {
	t.Helper()
	var id string
	if err := d.Get(&id, `INSERT INTO dds.tenants (name) VALUES ($1) RETURNING id`, name); err != nil {
		t.Fatal(err)
	}
	return id
}

// Event inserts one outbox event, as an entity write does, and returns its id.
func Event(t testing.TB, d *sqlx.DB, tenantID, schemaName, typ, entity string, record map[string]any) string {
	t.Helper()
	entityID := uuid.NewString()
	if record == nil {
		record = map[string]any{}
	}
	record["id"] = entityID
	rec, _ := json.Marshal(record)
	var id string
	if err := d.Get(&id, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
		VALUES ($1, gen_random_uuid(), $2, $3, $4, $5, $6) RETURNING id`, tenantID, schemaName, typ, entity, entityID, rec); err != nil {
		t.Fatal(err)
	}
	return id
}

// Request is one request a Receiver got.
type Request struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// Receiver is a local HTTPS webhook receiver.
type Receiver struct {
	*httptest.Server
	mu     sync.Mutex
	reqs   []Request
	status func(r Request) int
}

// NewReceiver starts a receiver answering status(req) (200 when nil).
func NewReceiver(t testing.TB, status func(Request) int) *Receiver {
	rc := &Receiver{status: status}
	rc.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := Request{Header: r.Header.Clone(), Body: body, At: time.Now()}
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, req)
		f := rc.status
		rc.mu.Unlock()
		code := 200
		if f != nil {
			code = f(req)
		}
		w.WriteHeader(code)
	}))
	rc.Config.ErrorLog = nil
	t.Cleanup(rc.Close)
	return rc
}

// SetStatus changes the answer function.
func (rc *Receiver) SetStatus(f func(Request) int) {
	rc.mu.Lock()
	rc.status = f
	rc.mu.Unlock()
}

// Requests returns a copy of what was received so far.
func (rc *Receiver) Requests() []Request {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Request(nil), rc.reqs...)
}

// Client returns a delivery client trusting the receiver's certificate,
// with private addresses allowed (the receiver is on loopback).
func (rc *Receiver) Client(t testing.TB) *webhook.Client {
	pool := x509.NewCertPool()
	pool.AddCert(rc.Certificate())
	c, err := webhook.NewClient(webhook.ClientConfig{AllowPrivate: true, RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// Eventually polls cond until it holds or the deadline passes.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// WriteCertPEM writes cert to path as PEM (a DDS_WEBHOOK_CA_FILE).
func WriteCertPEM(path string, cert *x509.Certificate) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600)
}

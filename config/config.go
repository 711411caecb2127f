// Package config loads the process configuration from the environment once,
// at start-up, reporting every missing or malformed variable at once.
package config

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/caarlos0/env/v11"

	"github.com/dds-project/dds/db"
)

// Config is the whole configuration of the server and worker processes.
type Config struct {
	DatabaseURL string `env:"DATABASE_URL,required"`
	// DatabaseDirectURL reaches Postgres without a pooler: LISTEN, the
	// migrations' session locks. Unset, it is DatabaseURL.
	DatabaseDirectURL string `env:"DATABASE_DIRECT_URL"`
	// DBPoolMode is "session" (DatabaseURL is Postgres or a pooler in
	// session mode) or "transaction" (a pooler in transaction mode, such as
	// PgBouncer: see db.ThroughTransactionPooler).
	DBPoolMode string `env:"DDS_DB_POOL_MODE" envDefault:"session"`
	// DatabaseReplicaURLs are streaming replicas of DatabaseURL's primary
	// that `dds serve` sends reads of tenant data to, behind the LSN
	// barrier (db.Replicas); opened with the same pool mode and size.
	DatabaseReplicaURLs []string `env:"DATABASE_REPLICA_URLS" envSeparator:","`
	// ReplicaMaxLag is how far behind the primary a replica may be and
	// still serve reads; ReplicaWait how long a read waits for a replica to
	// replay up to its barrier before it runs on the primary.
	ReplicaMaxLag time.Duration `env:"DDS_DB_REPLICA_MAX_LAG" envDefault:"1s"`
	ReplicaWait   time.Duration `env:"DDS_DB_REPLICA_WAIT" envDefault:"10ms"`
	HTTPAddr      string        `env:"DDS_HTTP_ADDR" envDefault:"127.0.0.1:8080"`
	// PublicURL is the base URL clients reach the server at (OpenAPI
	// servers, local presigned file URLs). Unset, it follows HTTPAddr.
	PublicURL string `env:"DDS_PUBLIC_URL"`
	// Env is the key environment of this deployment: keys of the other
	// environment are refused with 401.
	Env           string `env:"DDS_ENV" envDefault:"live"`
	OperatorToken string `env:"DDS_OPERATOR_TOKEN"`
	JWTSecret     string `env:"DDS_JWT_SECRET,required"`
	LogLevel      string `env:"DDS_LOG_LEVEL" envDefault:"info"`
	LogFormat     string `env:"DDS_LOG_FORMAT" envDefault:"text"`
	// AccessLogSample is the fraction of requests answered below 500 that
	// the access log records (1 all, 0 none); a 5xx is always recorded.
	AccessLogSample float64 `env:"DDS_ACCESS_LOG_SAMPLE" envDefault:"1"`
	// WorkerHTTPAddr is where `dds worker` serves /livez, /readyz and
	// /metrics; empty serves nothing.
	WorkerHTTPAddr string `env:"DDS_WORKER_HTTP_ADDR" envDefault:"127.0.0.1:8081"`
	MaxBodyBytes   int64  `env:"DDS_MAX_BODY_BYTES" envDefault:"16777216"`
	// BodyTimeout bounds how long a request body may take to arrive after
	// its headers; UploadTimeout replaces it for uploads to the local file
	// driver. A body still arriving then is refused and its connection closed.
	// ShutdownDrain is how long a server that was asked to stop keeps
	// serving with /readyz failing, so that a balancer takes it out first
	// (0: close at once, fine without a balancer).
	ShutdownDrain time.Duration `env:"DDS_SHUTDOWN_DRAIN" envDefault:"0s"`
	BodyTimeout   time.Duration `env:"DDS_BODY_TIMEOUT" envDefault:"60s"`
	UploadTimeout time.Duration `env:"DDS_UPLOAD_TIMEOUT" envDefault:"1h"`
	DBMaxConns    int           `env:"DDS_DB_MAX_CONNS" envDefault:"40"`
	// VectorEfSearch is the hnsw.ef_search every connection runs with
	// (db.WithVectorEfSearch); 400 is db.DefaultVectorEfSearch.
	VectorEfSearch int `env:"DDS_VECTOR_EF_SEARCH" envDefault:"400"`
	// StatementTimeout bounds each statement a request runs on tenant
	// records (records.WithStatementTimeout); 0 turns it off.
	StatementTimeout time.Duration `env:"DDS_STATEMENT_TIMEOUT" envDefault:"5s"`
	// QueryRowBudget refuses lists and aggregates Postgres estimates to
	// read more rows (records.WithRowBudget); 0 turns it off.
	QueryRowBudget int64 `env:"DDS_QUERY_ROW_BUDGET" envDefault:"1000000"`

	// Rate limits per minute; 0 disables a layer.
	RateGlobal int  `env:"DDS_RATE_GLOBAL" envDefault:"500"`
	RateAuth   int  `env:"DDS_RATE_AUTH" envDefault:"20"`
	RateTenant int  `env:"DDS_RATE_TENANT" envDefault:"300"`
	TrustProxy bool `env:"DDS_TRUST_PROXY" envDefault:"false"`
	// RateSyncInterval is how often a server adds its counts to the shared
	// counters of the cluster (dds.rate_counts) and reads the totals back;
	// 0 keeps every replica counting alone.
	RateSyncInterval time.Duration `env:"DDS_RATE_SYNC_INTERVAL" envDefault:"250ms"`

	// SubscriptionsPerSocket and SubscriptionsPerTenant cap GraphQL
	// subscriptions on one server: per WebSocket, and per tenant across
	// its sockets (0: no cap). Past either, subscribe is refused with a
	// RATE_LIMITED error naming the cap.
	SubscriptionsPerSocket int `env:"DDS_SUBSCRIPTIONS_PER_SOCKET" envDefault:"100"`
	SubscriptionsPerTenant int `env:"DDS_SUBSCRIPTIONS_PER_TENANT" envDefault:"10000"`

	// CORSOrigins are the browser origins allowed to call the API
	// (comma-separated, "*" for any); empty turns CORS off.
	CORSOrigins []string `env:"DDS_CORS_ORIGINS" envSeparator:","`

	TemporalAddress   string `env:"TEMPORAL_ADDRESS" envDefault:"127.0.0.1:7233"`
	TemporalNamespace string `env:"TEMPORAL_NAMESPACE" envDefault:"default"`
	TemporalTaskQueue string `env:"DDS_TASK_QUEUE" envDefault:"dds"`

	AuthCacheTTL time.Duration `env:"DDS_AUTH_CACHE_TTL" envDefault:"5m"`

	// GraphQL protection (0 = the built-in default).
	GraphQLMaxDocumentBytes int `env:"DDS_GRAPHQL_MAX_DOCUMENT_BYTES" envDefault:"65536"`
	GraphQLMaxDepth         int `env:"DDS_GRAPHQL_MAX_DEPTH" envDefault:"12"`
	GraphQLMaxAliases       int `env:"DDS_GRAPHQL_MAX_ALIASES" envDefault:"50"`
	GraphQLMaxComplexity    int `env:"DDS_GRAPHQL_MAX_COMPLEXITY" envDefault:"200000"`

	// Webhooks. AllowPrivate lets deliveries reach loopback/private/link-local
	// addresses (tests, closed networks); CAFile adds trusted roots (PEM).
	WebhookAllowPrivate bool   `env:"DDS_WEBHOOK_ALLOW_PRIVATE" envDefault:"false"`
	WebhookCAFile       string `env:"DDS_WEBHOOK_CA_FILE"`
	WebhookHTTPWorkers  int    `env:"DDS_WEBHOOK_HTTP_WORKERS" envDefault:"64"`
	// WebhookRetrySchedule replaces the retry waits (1m,5m,30m,2h,8h) of
	// deliveries handed over by this worker, e.g. "1s,1s" in tests; each
	// workflow carries its schedule, so replays stay deterministic.
	WebhookRetrySchedule []time.Duration `env:"DDS_WEBHOOK_RETRY_SCHEDULE" envSeparator:","`

	// Identity providers: the least time between two JWKS fetches of one
	// provider (a token naming an unknown key refetches at most this often).
	IdentityJWKSMinRefetch time.Duration `env:"DDS_IDP_JWKS_MIN_REFETCH" envDefault:"10s"`

	// Retention: relayed outbox events and finished webhook deliveries
	// (with their attempt logs) are pruned after these ages; 0 keeps them.
	EventRetention    time.Duration `env:"DDS_EVENT_RETENTION" envDefault:"168h"`
	DeliveryRetention time.Duration `env:"DDS_DELIVERY_RETENTION" envDefault:"720h"`

	// File storage (storage.Config). DDS_PUBLIC_URL is the base of local
	// presigned URLs.
	FileStorageDriver      string        `env:"FILE_STORAGE_DRIVER" envDefault:"local"`
	FileStorageLocalDir    string        `env:"FILE_STORAGE_LOCAL_DIR" envDefault:".dds/files"`
	FileStorageLocalSecret string        `env:"FILE_STORAGE_LOCAL_SECRET"`
	FileStorageS3Endpoint  string        `env:"FILE_STORAGE_S3_ENDPOINT"`
	FileStorageS3Region    string        `env:"FILE_STORAGE_S3_REGION" envDefault:"us-east-1"`
	FileStorageS3Bucket    string        `env:"FILE_STORAGE_S3_BUCKET" envDefault:"dds-files"`
	FileStorageS3AccessKey string        `env:"FILE_STORAGE_S3_ACCESS_KEY"`
	FileStorageS3SecretKey string        `env:"FILE_STORAGE_S3_SECRET_KEY"`
	FileStorageS3PathStyle bool          `env:"FILE_STORAGE_S3_PATH_STYLE" envDefault:"true"`
	FileStorageURLTTL      time.Duration `env:"FILE_STORAGE_URL_TTL" envDefault:"15m"`
	// Grace after an upload URL expires before an unconfirmed upload is
	// deleted and marked expired.
	FileUploadGrace time.Duration `env:"FILE_STORAGE_UPLOAD_GRACE" envDefault:"10m"`
}

// listenURL is the URL a client on this machine reaches a listen address
// at: a wildcard host (":8080", "0.0.0.0", "::") becomes 127.0.0.1.
func listenURL(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return "", fmt.Errorf("DDS_HTTP_ADDR must be host:port, got %q", addr)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port), nil
}

// DirectURL is where session state (LISTEN, session locks) connects:
// DatabaseDirectURL, else DatabaseURL.
func (c *Config) DirectURL() string {
	if c.DatabaseDirectURL != "" {
		return c.DatabaseDirectURL
	}
	return c.DatabaseURL
}

// DBOptions are the options of the API and worker pools (db.Open).
func (c *Config) DBOptions() []db.Option {
	opts := []db.Option{db.WithVectorEfSearch(c.VectorEfSearch)}
	if c.DBPoolMode == "transaction" {
		opts = append(opts, db.ThroughTransactionPooler())
	}
	return opts
}

// Load reads the environment. Every problem is reported in one error.
func Load() (*Config, error) {
	var c Config
	err := env.Parse(&c)
	var problems []error
	if err != nil {
		problems = append(problems, err)
	}
	if c.Env != "live" && c.Env != "test" {
		problems = append(problems, fmt.Errorf(`DDS_ENV must be "live" or "test", got %q`, c.Env))
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		problems = append(problems, fmt.Errorf(`DDS_LOG_LEVEL must be debug, info, warn or error, got %q`, c.LogLevel))
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		problems = append(problems, fmt.Errorf(`DDS_LOG_FORMAT must be "text" or "json", got %q`, c.LogFormat))
	}
	if c.AccessLogSample < 0 || c.AccessLogSample > 1 {
		problems = append(problems, fmt.Errorf("DDS_ACCESS_LOG_SAMPLE must be between 0 and 1, got %v", c.AccessLogSample))
	}
	if c.FileStorageDriver != "local" && c.FileStorageDriver != "s3" {
		problems = append(problems, fmt.Errorf(`FILE_STORAGE_DRIVER must be "local" or "s3", got %q`, c.FileStorageDriver))
	}
	if c.DBPoolMode != "session" && c.DBPoolMode != "transaction" {
		problems = append(problems, fmt.Errorf(`DDS_DB_POOL_MODE must be "session" or "transaction", got %q`, c.DBPoolMode))
	}
	if c.DBPoolMode == "transaction" && c.DatabaseDirectURL == "" {
		problems = append(problems, errors.New("DDS_DB_POOL_MODE=transaction needs DATABASE_DIRECT_URL: LISTEN and the migrations' locks cannot go through a transaction pooler"))
	}
	replicas := c.DatabaseReplicaURLs[:0]
	for i, u := range c.DatabaseReplicaURLs {
		if u = strings.TrimSpace(u); u == "" {
			continue
		}
		// The URL is not quoted back: it may hold a password.
		if p, err := url.Parse(u); err != nil || (p.Scheme != "postgres" && p.Scheme != "postgresql") || p.Host == "" {
			problems = append(problems, fmt.Errorf("DATABASE_REPLICA_URLS: entry %d is not a postgres:// URL with a host", i+1))
			continue
		}
		replicas = append(replicas, u)
	}
	c.DatabaseReplicaURLs = replicas
	if c.ReplicaMaxLag <= 0 || c.ReplicaWait < 0 {
		problems = append(problems, fmt.Errorf("DDS_DB_REPLICA_MAX_LAG must be positive and DDS_DB_REPLICA_WAIT not negative, got %s and %s", c.ReplicaMaxLag, c.ReplicaWait))
	}
	// A server's live feed keeps one connection of the pool for its polls
	// (records.EventsReader): with one in all, subscriptions would leave
	// none to the requests.
	if c.DBMaxConns < 2 {
		problems = append(problems, fmt.Errorf("DDS_DB_MAX_CONNS must be at least 2 (the live feed keeps one), got %d", c.DBMaxConns))
	}
	if c.StatementTimeout < 0 {
		problems = append(problems, fmt.Errorf("DDS_STATEMENT_TIMEOUT must not be negative, got %s", c.StatementTimeout))
	}
	if c.QueryRowBudget < 0 {
		problems = append(problems, fmt.Errorf("DDS_QUERY_ROW_BUDGET must not be negative, got %d", c.QueryRowBudget))
	}
	if c.VectorEfSearch < 1 || c.VectorEfSearch > db.MaxVectorEfSearch {
		problems = append(problems, fmt.Errorf("DDS_VECTOR_EF_SEARCH must be between 1 and %d (pgvector's limit), got %d", db.MaxVectorEfSearch, c.VectorEfSearch))
	}
	if c.JWTSecret != "" && len(c.JWTSecret) < 32 {
		problems = append(problems, errors.New("DDS_JWT_SECRET must be at least 32 characters"))
	}
	for i, o := range c.CORSOrigins {
		c.CORSOrigins[i] = strings.TrimSpace(o)
		if err := checkOrigin(c.CORSOrigins[i]); err != nil {
			problems = append(problems, fmt.Errorf("DDS_CORS_ORIGINS: %w", err))
		}
	}
	if c.PublicURL == "" {
		u, err := listenURL(c.HTTPAddr)
		if err != nil {
			problems = append(problems, err)
		}
		c.PublicURL = u
	}
	c.PublicURL = strings.TrimRight(c.PublicURL, "/")
	if err := errors.Join(problems...); err != nil {
		return nil, fmt.Errorf("configuration: %w", err)
	}
	return &c, nil
}

// checkOrigin accepts "*" or a bare origin such as https://app.example.com:8443.
func checkOrigin(o string) error {
	if o == "*" {
		return nil
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return fmt.Errorf("%q is not an origin (scheme://host[:port], or *)", o)
	}
	return nil
}

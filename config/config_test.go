package config

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/dds-project/dds/db"
)

func TestCORSOrigins(t *testing.T) {
	cases := []struct {
		env     string
		want    []string
		problem string
	}{
		{"", nil, ""},
		{"*", []string{"*"}, ""},
		{"https://app.example.com, http://localhost:5173", []string{"https://app.example.com", "http://localhost:5173"}, ""},
		{"https://app.example.com/", nil, `"https://app.example.com/" is not an origin`},
		{"app.example.com", nil, `"app.example.com" is not an origin`},
		{"ftp://x.example", nil, `"ftp://x.example" is not an origin`},
	}
	for _, c := range cases {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "postgres://x")
			t.Setenv("DDS_JWT_SECRET", strings.Repeat("s", 32))
			t.Setenv("DDS_CORS_ORIGINS", c.env)
			cfg, err := Load()
			if c.problem != "" {
				if err == nil || !strings.Contains(err.Error(), "DDS_CORS_ORIGINS: "+c.problem) {
					t.Fatalf("got %v, want an error naming %s", err, c.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(cfg.CORSOrigins, "|") != strings.Join(c.want, "|") {
				t.Fatalf("got %q, want %q", cfg.CORSOrigins, c.want)
			}
		})
	}
}

// Without DDS_PUBLIC_URL the public URL (OpenAPI servers, local presigned
// file URLs) is where the server listens, so changing the port is enough.
func TestPublicURLFollowsListenAddress(t *testing.T) {
	cases := []struct{ addr, public, want string }{
		{"", "", "http://127.0.0.1:8080"},
		{"127.0.0.1:8120", "", "http://127.0.0.1:8120"},
		{":9000", "", "http://127.0.0.1:9000"},
		{"0.0.0.0:9001", "", "http://127.0.0.1:9001"},
		{"[::]:9002", "", "http://127.0.0.1:9002"},
		{"[::1]:9003", "", "http://[::1]:9003"},
		{"localhost:9004", "", "http://localhost:9004"},
		{"127.0.0.1:8120", "https://api.example.com/", "https://api.example.com"},
	}
	for _, c := range cases {
		t.Run(c.addr+"|"+c.public, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "postgres://x")
			t.Setenv("DDS_JWT_SECRET", "0123456789abcdef0123456789abcdef")
			t.Setenv("DDS_HTTP_ADDR", c.addr)
			t.Setenv("DDS_PUBLIC_URL", c.public)
			cfg, err := Load()
			if err != nil {
				t.Fatal(err)
			}
			if cfg.PublicURL != c.want {
				t.Errorf("PublicURL = %q, want %q", cfg.PublicURL, c.want)
			}
		})
	}
}

func TestBadListenAddressIsReported(t *testing.T) {
	t.Setenv("DATABASE_URL", "postgres://x")
	t.Setenv("DDS_JWT_SECRET", "0123456789abcdef0123456789abcdef")
	t.Setenv("DDS_HTTP_ADDR", "8080")
	t.Setenv("DDS_PUBLIC_URL", "")
	if _, err := Load(); err == nil {
		t.Fatal("DDS_HTTP_ADDR without a port was accepted")
	}
}

// Integer settings with bounds default to what the rest of DDS assumes
// without them and are refused by name outside their bounds:
// DDS_VECTOR_EF_SEARCH within pgvector's 1 to 1000, DDS_DB_MAX_CONNS at
// least 2 (the pool would otherwise quietly take another size, and the
// live feed keeps one connection).
func TestBoundedIntegers(t *testing.T) {
	type tc struct {
		env  string
		want int // 0: refused
	}
	for _, v := range []struct {
		name  string
		get   func(*Config) int
		cases []tc
	}{
		{"DDS_VECTOR_EF_SEARCH", func(c *Config) int { return c.VectorEfSearch },
			[]tc{{"", db.DefaultVectorEfSearch}, {"250", 250}, {"1000", 1000}, {"0", 0}, {"1001", 0}, {"-3", 0}, {"many", 0}}},
		{"DDS_DB_MAX_CONNS", func(c *Config) int { return c.DBMaxConns },
			[]tc{{"", 40}, {"7", 7}, {"2", 2}, {"1", 0}, {"0", 0}, {"-2", 0}, {"lots", 0}}},
	} {
		for _, c := range v.cases {
			t.Run(v.name+"="+c.env, func(t *testing.T) {
				t.Setenv("DATABASE_URL", "postgres://x")
				t.Setenv("DDS_JWT_SECRET", strings.Repeat("s", 32))
				t.Setenv(v.name, c.env)
				if c.env == "" {
					os.Unsetenv(v.name)
				}
				cfg, err := Load()
				if c.want == 0 {
					if err == nil || !strings.Contains(err.Error(), v.name) {
						t.Fatalf("got %v, want an error naming %s", err, v.name)
					}
					return
				}
				if err != nil || v.get(cfg) != c.want {
					t.Fatalf("got %v (%v), want %d", cfg, err, c.want)
				}
			})
		}
	}
}

// A transaction pooler in front of DATABASE_URL needs a direct URL for
// LISTEN and the migrations' session locks; a mode other than session or
// transaction is refused by name.
func TestPoolMode(t *testing.T) {
	cases := []struct {
		mode, direct string
		wantErr      string // "" accepted
		wantDirect   string
	}{
		{"", "", "", "postgres://pooler/dds"},
		{"session", "", "", "postgres://pooler/dds"},
		{"transaction", "postgres://pg/dds", "", "postgres://pg/dds"},
		{"transaction", "", "DATABASE_DIRECT_URL", ""},
		{"statement", "postgres://pg/dds", "DDS_DB_POOL_MODE", ""},
	}
	for _, c := range cases {
		t.Run(c.mode+"/"+c.direct, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "postgres://pooler/dds")
			t.Setenv("DDS_JWT_SECRET", strings.Repeat("s", 32))
			t.Setenv("DDS_DB_POOL_MODE", c.mode)
			t.Setenv("DATABASE_DIRECT_URL", c.direct)
			if c.mode == "" {
				os.Unsetenv("DDS_DB_POOL_MODE")
			}
			cfg, err := Load()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("got %v, want an error naming %s", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := cfg.DirectURL(); got != c.wantDirect {
				t.Fatalf("direct URL %q, want %q", got, c.wantDirect)
			}
		})
	}
}

// DATABASE_REPLICA_URLS: entries trimmed, empty ones dropped; a bad entry is
// named by its position and never quoted (it may hold a password); the lag
// bound must be positive.
func TestReplicaURLs(t *testing.T) {
	cases := []struct {
		urls, maxLag string
		want         []string
		wantErr      string
	}{
		{"", "", nil, ""},
		{" postgres://r1/dds , postgresql://u:pw@r2:5433/dds,", "", []string{"postgres://r1/dds", "postgresql://u:pw@r2:5433/dds"}, ""},
		{"postgres://r1/dds,mysql://u:secret@r2/dds", "", nil, "entry 2"},
		{"postgres:///dds", "", nil, "entry 1"},
		{"postgres://r1/dds", "0s", nil, "DDS_DB_REPLICA_MAX_LAG"},
	}
	for _, c := range cases {
		t.Run(c.urls+"/"+c.maxLag, func(t *testing.T) {
			t.Setenv("DATABASE_URL", "postgres://pg/dds")
			t.Setenv("DDS_JWT_SECRET", strings.Repeat("s", 32))
			t.Setenv("DATABASE_REPLICA_URLS", c.urls)
			if c.maxLag != "" {
				t.Setenv("DDS_DB_REPLICA_MAX_LAG", c.maxLag)
			}
			cfg, err := Load()
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "secret") {
					t.Fatalf("got %v, want an error naming %s without the URL", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(cfg.DatabaseReplicaURLs) != fmt.Sprint(c.want) {
				t.Fatalf("replica URLs %q, want %q", cfg.DatabaseReplicaURLs, c.want)
			}
		})
	}
}

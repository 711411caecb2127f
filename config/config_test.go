package config

import (
	"strings"
	"testing"
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

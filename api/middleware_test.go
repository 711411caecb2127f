package api

import (
	"net/http/httptest"
	"testing"
)

func TestClientIP(t *testing.T) {
	cases := []struct {
		name  string
		xff   []string
		trust bool
		want  string
	}{
		{"no proxy trusted: the peer", []string{"1.2.3.4"}, false, "10.0.0.9"},
		{"trusted proxy, one hop", []string{"1.2.3.4"}, true, "1.2.3.4"},
		{"a client-forged entry is not used", []string{"6.6.6.6, 1.2.3.4"}, true, "1.2.3.4"},
		{"repeated headers: the last one", []string{"6.6.6.6", "1.2.3.4"}, true, "1.2.3.4"},
		{"trusted but absent: the peer", nil, true, "10.0.0.9"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = "10.0.0.9:5000"
		for _, v := range c.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := clientIP(r, c.trust); got != c.want {
			t.Errorf("%s: got %s, want %s", c.name, got, c.want)
		}
	}
}

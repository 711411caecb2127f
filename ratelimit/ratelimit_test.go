package ratelimit

import (
	"testing"
	"time"
)

func TestFixedWindow(t *testing.T) {
	now := time.Date(2026, 1, 1, 10, 0, 15, 0, time.UTC)
	l := New(3, time.Minute)
	l.nowFunc = func() time.Time { return now }
	cases := []struct {
		key       string
		allowed   bool
		remaining int
	}{
		{"a", true, 2}, {"a", true, 1}, {"a", true, 0}, {"a", false, 0}, {"b", true, 2},
	}
	for i, c := range cases {
		r := l.Allow(c.key)
		if r.Allowed != c.allowed || r.Remaining != c.remaining || r.Limit != 3 || r.Reset != 45 {
			t.Fatalf("call %d: got %+v, want allowed=%v remaining=%d reset=45", i, r, c.allowed, c.remaining)
		}
	}
	now = now.Add(time.Minute)
	if r := l.Allow("a"); !r.Allowed || r.Remaining != 2 {
		t.Fatalf("next window: got %+v", r)
	}
	if r := New(0, time.Minute).Allow("x"); !r.Allowed {
		t.Fatal("limit 0 must be unlimited")
	}
}

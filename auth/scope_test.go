package auth

import (
	"strings"
	"testing"
)

func TestParseScope(t *testing.T) {
	cases := []struct {
		in      string
		wantErr string
	}{
		{"entity:Product:read", ""},
		{"entity:*:*", ""},
		{"relationship:IN_CATEGORY:delete", ""},
		{"webhook:*:create", ""},
		{"*:*:*", ""},
		{"*:*:read", ""},
		{"entity:Product", "must have the form"},
		{"entity:Product:read:extra", "must have the form"},
		{"table:Product:read", "unknown kind"},
		{"entity:Product:drop", "unknown operation"},
		{"entity:Pro duct:read", "name must be"},
		{`entity:Product";DROP TABLE x;--:read`, "name must be"},
		{"*:Product:read", "wildcard kind needs a wildcard name"},
		{"", "must have the form"},
	}
	for _, c := range cases {
		_, err := ParseScope(c.in)
		if c.wantErr == "" && err != nil {
			t.Errorf("ParseScope(%q): unexpected error %v", c.in, err)
		}
		if c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
			t.Errorf("ParseScope(%q): error %v, want one containing %q", c.in, err, c.wantErr)
		}
	}
}

func TestScopesAllows(t *testing.T) {
	cases := []struct {
		grants         []string
		kind, name, op string
		allowed        bool
	}{
		{[]string{"entity:Product:read"}, "entity", "Product", "read", true},
		{[]string{"entity:Product:read"}, "entity", "Product", "create", false},
		{[]string{"entity:Product:read"}, "entity", "product", "read", false}, // names are case-sensitive
		{[]string{"entity:Product:*"}, "entity", "Product", "delete", true},
		{[]string{"entity:Product:*"}, "entity", "Order", "read", false},
		{[]string{"entity:*:read"}, "entity", "Order", "read", true},
		{[]string{"entity:*:read"}, "entity", "Order", "update", false},
		{[]string{"entity:*:*"}, "entity", "Order", "update", true},
		{[]string{"entity:*:*"}, "relationship", "IN_CATEGORY", "read", false},
		{[]string{"relationship:*:*"}, "relationship", "IN_CATEGORY", "create", true},
		{[]string{"relationship:IN_CATEGORY:read"}, "relationship", "IN_CATEGORY", "delete", false},
		{[]string{"*:*:*"}, "webhook", "*", "delete", true},
		{[]string{"*:*:read"}, "file", "*", "read", true},
		{[]string{"*:*:read"}, "file", "*", "delete", false},
		{[]string{"webhook:*:*"}, "apikey", "*", "create", false},
		{[]string{"entity:Order:read", "entity:Product:create"}, "entity", "Product", "create", true},
		{nil, "entity", "Product", "read", false},
	}
	for _, c := range cases {
		var ss Scopes
		for _, g := range c.grants {
			s, err := ParseScope(g)
			if err != nil {
				t.Fatal(err)
			}
			ss = append(ss, s)
		}
		if got := ss.Allows(c.kind, c.name, c.op); got != c.allowed {
			t.Errorf("%v allows %s:%s:%s = %v, want %v", c.grants, c.kind, c.name, c.op, got, c.allowed)
		}
	}
}

func TestCovers(t *testing.T) {
	parse := func(s ...string) Scopes {
		ss, err := ParseScopes(s)
		if err != nil {
			t.Fatal(err)
		}
		return ss
	}
	if !parse("*:*:*").Covers(parse("entity:Product:read", "webhook:*:*")) {
		t.Error("admin must cover everything")
	}
	if !parse("entity:*:read").Covers(parse("entity:Product:read")) {
		t.Error("entity:*:read covers entity:Product:read")
	}
	if parse("entity:Product:read").Covers(parse("entity:*:read")) {
		t.Error("a narrow grant must not cover a wildcard")
	}
	if parse("entity:Product:read").Covers(parse("*:*:*")) {
		t.Error("escalation to admin must be refused")
	}
}

func TestKeyFormat(t *testing.T) {
	key, hash, prefix := NewKey("live")
	if !strings.HasPrefix(key, "dds_live_") || len(key) != len("dds_live_")+52 {
		t.Fatalf("key %q does not have the form dds_live_<52 chars>", key)
	}
	if env, ok := KeyEnv(key); !ok || env != "live" {
		t.Fatalf("KeyEnv(%q) = %q, %v", key, env, ok)
	}
	if string(HashKey(key)) != string(hash) || !strings.HasPrefix(key, prefix) {
		t.Fatal("hash or prefix does not match the key")
	}
	other, _, _ := NewKey("live")
	if other == key {
		t.Fatal("two keys are equal")
	}
	for _, bad := range []string{"dds_live_short", "dds__" + strings.Repeat("a", 52), "xyz_live_" + strings.Repeat("a", 52)} {
		if _, ok := KeyEnv(bad); ok {
			t.Errorf("KeyEnv(%q) accepted a malformed key", bad)
		}
	}
}

// FuzzParseScope checks that the parser never panics, and that whatever it
// accepts round-trips and carries only safe names.
func FuzzParseScope(f *testing.F) {
	for _, s := range []string{"entity:Product:read", "*:*:*", "relationship:IN_CATEGORY:*", "entity::read", ":::", "entity:a:b:c", "entity:Ñ:read", "entity:x\x00:read", "file:*:delete"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sc, err := ParseScope(s)
		if err != nil {
			return
		}
		if sc.String() != s {
			t.Fatalf("round trip: %q became %q", s, sc.String())
		}
		for _, part := range []string{sc.Kind, sc.Name, sc.Op} {
			if strings.ContainsAny(part, "\"'; \x00:") {
				t.Fatalf("accepted unsafe part %q in %q", part, s)
			}
		}
	})
}

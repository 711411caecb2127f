package graphql

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGraphQLHTTPAudit runs the graphql-http server audit (npm package
// graphql-http, installed by `npm ci --prefix deploy/npm`) against a real
// server: every MUST item passes.
func TestGraphQLHTTPAudit(t *testing.T) {
	t.Parallel()
	dir, _ := filepath.Abs("../../deploy/npm")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "graphql-http")); err != nil {
		t.Fatal("graphql-http is not installed: run `make test` (it runs npm ci --prefix deploy/npm)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal("node is not installed: run `make test` (its set-up installs Node.js)")
	}
	e := testEnv(t)
	s := newShop(t)
	cmd := exec.CommandContext(t.Context(), node, filepath.Join(dir, "audit.mjs"), e.URL+"/api/v1/dynamic-gql/"+s.tenant, s.key)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("audit: %v: %s", err, stderr.String())
	}
	musts, notes := 0, 0
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r struct{ Name, Status, Reason string }
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit output: %s", sc.Text())
		}
		switch {
		case strings.HasPrefix(r.Name, "MUST"):
			musts++
			if r.Status != "ok" {
				t.Errorf("%s: %s", r.Name, r.Reason)
			}
		case r.Status != "ok":
			notes++
			t.Logf("%s (%s): %s", r.Name, r.Status, r.Reason)
		}
	}
	if musts < 10 {
		t.Fatalf("only %d MUST audits ran: %s", musts, out.String())
	}
	t.Logf("%d MUST audits passed; %d SHOULD/MAY notes", musts, notes)
}

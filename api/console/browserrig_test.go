package console_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

// chromium is Debian's package, installed by deploy/install.sh.
const chromium = "/usr/bin/chromium"

// browser is what the console's Chromium tests share: Chromium, Node and
// playwright-core from deploy/npm. Without them a test is skipped, or
// fails where the stack is required (teststack).
type browser struct {
	root, node, npmDir string
}

func needBrowser(t *testing.T) browser {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b := browser{root: root, npmDir: filepath.Join(root, "deploy", "npm")}
	for _, need := range []string{chromium, filepath.Join(b.npmDir, "node_modules", "playwright-core")} {
		if _, err := os.Stat(need); err != nil {
			teststack.Missing(t, need+" is missing") // deploy/install.sh installs Chromium and deploy/npm
		}
	}
	if b.node, err = exec.LookPath("node"); err != nil {
		teststack.Missing(t, "node is not on PATH")
	}
	return b
}

// run runs testdata/<script> within limit with env (KEY=value) besides the
// browser's own, its screenshots going to test-output/<out>/ at the
// repository root (emptied first: no stale screenshots of an earlier run).
func (b browser) run(t *testing.T, script, out string, limit time.Duration, env ...string) {
	t.Helper()
	dir := filepath.Join(b.root, "test-output", out)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), limit)
	defer stop()
	cmd := exec.CommandContext(ctx, b.node, filepath.Join("testdata", script))
	cmd.Env = append(append(os.Environ(), env...),
		"OUT_DIR="+dir, "NPM_DIR="+b.npmDir, "CHROMIUM="+chromium, "USER_DATA_DIR="+t.TempDir())
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("browser script: %v (screenshots and the failing step in %s)", err, dir)
	}
}

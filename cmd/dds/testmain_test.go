package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

// Tests that need the stack skip without it, and the package says so in one line.
func TestMain(m *testing.M) {
	teststack.Main(m, func() {
		if ddsBin.dir != "" {
			_ = os.RemoveAll(ddsBin.dir)
		}
	})
}

// ddsBin is the dds binary the tests here run as users do: linked once per
// run of the package (a link of the whole server takes seconds of CPU, and
// five tests each made their own) into a directory TestMain removes.
var ddsBin struct {
	once sync.Once
	dir  string
	path string
	out  []byte
	err  error
}

// ddsBinary builds the binary on its first call and returns its path.
func ddsBinary(t *testing.T) string {
	t.Helper()
	ddsBin.once.Do(func() {
		if ddsBin.dir, ddsBin.err = os.MkdirTemp("", "dds-cmd-test-"); ddsBin.err != nil {
			return
		}
		ddsBin.path = filepath.Join(ddsBin.dir, "dds")
		ddsBin.out, ddsBin.err = exec.Command("go", "build", "-o", ddsBin.path, ".").CombinedOutput()
	})
	if ddsBin.err != nil {
		t.Fatalf("go build: %v\n%s", ddsBin.err, ddsBin.out)
	}
	return ddsBin.path
}

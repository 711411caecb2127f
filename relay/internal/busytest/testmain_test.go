package busytest

import (
	"testing"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

// Tests that need the stack skip without it, and the package says so in one line.
func TestMain(m *testing.M) { teststack.Main(m) }

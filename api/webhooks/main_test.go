package webhooks_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/relay/relaytest"
)

// stack is the worker side (dev server, delivery worker, relay) over this
// package's own database; the tests' DDS server uses the same database.
var stack *relaytest.Stack

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	if !teststack.Present("DATABASE_URL", "DDS_TEMPORAL_CLI") {
		return 1
	}
	st, err := relaytest.Start("dds", testing.Verbose())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Stop()
	stack = st
	return m.Run()
}

package relay_test

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"go.temporal.io/sdk/client"

	"github.com/dds-project/dds/internal/testenv/teststack"
	"github.com/dds-project/dds/relay/relaytest"
)

// The package's tests share one Temporal dev server, one worker and one
// relay running against this package's own database, as `dds worker` does.
var temporalClient client.Client

const taskQueue = "dds-relay-test"

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	flag.Parse()
	if !teststack.Present("DATABASE_URL", "DDS_TEMPORAL_CLI") {
		return 1
	}
	st, err := relaytest.Start(taskQueue, testing.Verbose())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer st.Stop()
	temporalClient = st.Temporal
	return m.Run()
}

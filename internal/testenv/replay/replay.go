// Package replay holds what the durable capabilities' replay tests share:
// writing a recorded workflow run's history as the JSON a replayer reads,
// and a registry through which a capability's own Register adds its
// workflows to a replayer (so a renamed workflow or activity fails the
// replay).
package replay

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"google.golang.org/protobuf/encoding/protojson"
)

// Registry lets a capability's Register add its workflows to a replayer,
// which runs no activities.
type Registry struct{ worker.WorkflowReplayer }

// RegisterActivity does nothing: a replay runs no activities.
func (Registry) RegisterActivity(any) {}

// WriteHistory writes the history of workflow id's run runID ("" for the
// latest) to path, in the JSON form ReplayWorkflowHistoryFromJSONFile reads.
func WriteHistory(t testing.TB, c client.Client, id, runID, path string) {
	t.Helper()
	it := c.GetWorkflowHistory(context.Background(), id, runID, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	var h historypb.History
	for it.HasNext() {
		ev, err := it.Next()
		if err != nil {
			t.Fatal(err)
		}
		h.Events = append(h.Events, ev)
	}
	b, err := protojson.MarshalOptions{Multiline: true, Indent: "  "}.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d events to %s", len(h.Events), path)
}

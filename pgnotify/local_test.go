package pgnotify_test

import (
	"log/slog"
	"slices"
	"testing"

	"github.com/dds-project/dds/pgnotify"
)

// TestLocalGetsThisProcesssPayloadsAtOnce: a listener in the writing
// process gets each payload as it is published, before any flush (the live
// feed of the server that took a write wakes as it commits, not up to a
// flush's pace later), lists as one "<key>:<item>,..." payload per call,
// and only for its channel.
func TestLocalGetsThisProcesssPayloadsAtOnce(t *testing.T) {
	p := pgnotify.NewPublisher(nil, slog.Default()) // never flushed: no database needed
	var got []string
	p.Local("events", func(x string) { got = append(got, x) })
	p.PublishList("events", "tenant-a", "e1", "e2")
	p.Publish("events", "plain")
	p.PublishList("other", "tenant-a", "e3")
	if want := []string{"tenant-a:e1,e2", "plain"}; !slices.Equal(got, want) {
		t.Fatalf("local payloads %q, want %q", got, want)
	}
}

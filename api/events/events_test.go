package events

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/dds-project/dds/outbox"
)

// The SSE feed writes events by hand for speed; what it writes must be
// the JSON a JSON page shows for the same event.
func TestWriteEventIsTheEventsJSON(t *testing.T) {
	ev := &outbox.Event{ID: "0196a0b2-0000-7000-8000-000000000001", Type: outbox.EntityUpdated, Name: "Note",
		SubjectID: "0196a0b2-0000-7000-8000-000000000002", Record: json.RawMessage(`{"title": "a \"quoted\" é\n", "n": 1.5, "x": null}`),
		CreatedAt: time.Date(2026, 11, 26, 22, 30, 1, 123456000, time.UTC)}
	var b bytes.Buffer
	writeEvent(&b, ev)
	want, err := json.Marshal(show(ev))
	if err != nil {
		t.Fatal(err)
	}
	var got, exp any
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatalf("not JSON: %s: %v", b.Bytes(), err)
	}
	if err := json.Unmarshal(want, &exp); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, exp) {
		t.Fatalf("wrote %s, want %s", b.Bytes(), want)
	}
}

package live

import (
	"testing"

	"github.com/dds-project/dds/graphql/exec"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/query"
)

func shape(fields ...jsonshape.OutField) *jsonshape.Shape { return &jsonshape.Shape{Fields: fields} }

// TestFrameKey: subscriptions compiled separately from the same selection
// share a frame key (their frames for an event are the same bytes); any
// difference in what the frame writes gives another key; a selection read
// per subscriber through its scope shares nothing.
func TestFrameKey(t *testing.T) {
	title := jsonshape.OutField{Key: "title", Src: "title", Kind: jsonshape.Scalar}
	a := &exec.Subscription{Key: "noteCreated", Shape: shape(title)}
	b := &exec.Subscription{Key: "noteCreated", Shape: shape(title)}
	if frameKey(a) == "" || frameKey(a) != frameKey(b) {
		t.Fatalf("same selection: %q and %q", frameKey(a), frameKey(b))
	}
	others := []*exec.Subscription{
		{Key: "n", Shape: shape(title)}, // another response key
		{Key: "noteCreated", Shape: shape(jsonshape.OutField{Key: "title", Src: "name", Kind: jsonshape.Scalar})}, // another source
		{Key: "noteCreated", Shape: shape(jsonshape.OutField{Key: "t", Src: "title", Kind: jsonshape.Scalar})},    // an alias
		{Key: "noteCreated", Shape: shape(title, title)},
		{Key: "noteCreated", Shape: shape(jsonshape.OutField{Key: "title", Kind: jsonshape.Typename, Typename: "Note"})},
		{Key: "noteCreated", Shape: shape(jsonshape.OutField{Key: "title", Src: "title", Kind: jsonshape.Object, Sub: shape(title)})},
		{Key: "noteCreated", Change: &exec.ChangeShape{Typename: "NoteChange", Fields: []exec.ChangeField{{Key: "title", Kind: exec.ChangeRecord, Shape: shape(title)}}}},
		{Key: "noteCreated", Change: &exec.ChangeShape{Typename: "NoteChange", Fields: []exec.ChangeField{{Key: "title", Kind: exec.ChangePrevious, Shape: shape(title)}}}},
	}
	seen := map[string]int{frameKey(a): -1}
	for i, o := range others {
		k := frameKey(o)
		if j, dup := seen[k]; dup {
			t.Errorf("subscription %d has the key of %d: %q", i, j, k)
		}
		seen[k] = i
	}
	if k := frameKey(&exec.Subscription{Key: "noteCreated", Shape: shape(title), Sel: &query.Selection{}}); k != "" {
		t.Fatalf("a selection read per subscriber shares its frame: %q", k)
	}
}

// TestFrameMemo: a frame is shared only within its event.
func TestFrameMemo(t *testing.T) {
	var m frameMemo
	m.put(7, "k", []byte("f7"))
	if b, ok := m.get(7, "k"); !ok || string(b) != "f7" {
		t.Fatal("the frame of event 7 is not kept")
	}
	if _, ok := m.get(8, "k"); ok {
		t.Fatal("event 8 was given event 7's frame")
	}
	m.put(8, "j", []byte("f8"))
	if _, ok := m.get(8, "k"); ok {
		t.Fatal("event 7's frame outlived it")
	}
	if _, ok := m.get(8, ""); ok {
		t.Fatal("a subscriber without a key was given a shared frame")
	}
	var none *frameMemo // a replay shares nothing
	none.put(1, "k", []byte("x"))
	if _, ok := none.get(1, "k"); ok {
		t.Fatal("nil memo kept a frame")
	}
}

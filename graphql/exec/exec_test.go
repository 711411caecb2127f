package exec

import (
	"strconv"
	"testing"

	"github.com/dds-project/dds/graphql/operation"
)

// TestCollectMergesBeyondSmallSets: fields merge by response key whether
// the set is searched in order (a few fields) or through its index.
func TestCollectMergesBeyondSmallSets(t *testing.T) {
	x := &execCtx{}
	var set operation.SelectionSet
	for i := 0; i < 12; i++ {
		set = append(set, &operation.Field{Name: "f" + strconv.Itoa(i), SelectionSet: operation.SelectionSet{&operation.Field{Name: "a"}}})
	}
	set = append(set, &operation.Field{Name: "f1", SelectionSet: operation.SelectionSet{&operation.Field{Name: "b"}}}, &operation.Field{Name: "f10", SelectionSet: operation.SelectionSet{&operation.Field{Name: "c"}}})
	got := x.collect(set, "T")
	if len(got) != 12 {
		t.Fatalf("%d fields, want 12", len(got))
	}
	for i, cf := range got {
		want := 1
		if i == 1 || i == 10 {
			want = 2
		}
		if cf.key != "f"+strconv.Itoa(i) || len(cf.sel) != want {
			t.Errorf("field %d: %s with %d selections, want %d", i, cf.key, len(cf.sel), want)
		}
	}
	if len(set[1].(*operation.Field).SelectionSet) != 1 || len(set[10].(*operation.Field).SelectionSet) != 1 {
		t.Error("merging wrote into the shared tree")
	}
}

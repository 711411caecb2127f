package operation

import (
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/operationreport"

	"github.com/dds-project/dds/graphql/protocol"
)

// locate finds a location for a library error that has none: many of
// graphql-go-tools' validation errors carry only the path of the selection
// set they were found in. The path leads to that set; the field of it the
// message names (`Cannot query field "nope"`, `on field: f`) is the
// location, else the field whose set it is. nil when the path names no
// field of doc.
func locate(doc *ast.Document, e *operationreport.ExternalError) []protocol.Location {
	if len(e.Path) == 0 || len(doc.OperationDefinitions) == 0 {
		return nil
	}
	set, ok := -1, false
	for _, n := range doc.RootNodes {
		if n.Kind == ast.NodeKindOperationDefinition {
			set, ok = doc.OperationDefinitions[n.Ref].SelectionSet, doc.OperationDefinitions[n.Ref].HasSelections
			break
		}
	}
	if !ok {
		return nil
	}
	var at *protocol.Location
	for _, item := range e.Path[1:] {
		switch item.Kind {
		case ast.InlineFragmentName:
			if item.FragmentRef < 0 || item.FragmentRef >= len(doc.InlineFragments) || !doc.InlineFragments[item.FragmentRef].HasSelections {
				return nil
			}
			set = doc.InlineFragments[item.FragmentRef].SelectionSet
		case ast.FieldName:
			ref := fieldByKey(doc, set, string(item.FieldName))
			if ref < 0 {
				return nil
			}
			l := locationOf(doc.Fields[ref].Position)
			at = &l
			if !doc.Fields[ref].HasSelections {
				return []protocol.Location{l}
			}
			set = doc.Fields[ref].SelectionSet
		default:
			return nil
		}
	}
	if ref := namedField(doc, set, e.Message); ref >= 0 {
		return []protocol.Location{locationOf(doc.Fields[ref].Position)}
	}
	if at == nil {
		return nil
	}
	return []protocol.Location{*at}
}

// fields calls f with the fields of set, inline fragments flattened, until
// f returns true; it returns the field ref f stopped at, or -1.
func fields(doc *ast.Document, set int, f func(ref int) bool) int {
	for _, sr := range doc.SelectionSets[set].SelectionRefs {
		s := doc.Selections[sr]
		switch s.Kind {
		case ast.SelectionKindField:
			if f(s.Ref) {
				return s.Ref
			}
		case ast.SelectionKindInlineFragment:
			if in := doc.InlineFragments[s.Ref]; in.HasSelections {
				if r := fields(doc, in.SelectionSet, f); r >= 0 {
					return r
				}
			}
		}
	}
	return -1
}

func fieldByKey(doc *ast.Document, set int, key string) int {
	return fields(doc, set, func(ref int) bool { return doc.FieldAliasOrNameString(ref) == key })
}

// namedField is the field of set the message names, -1 when none.
func namedField(doc *ast.Document, set int, msg string) int {
	return fields(doc, set, func(ref int) bool {
		name := doc.FieldNameString(ref)
		return strings.Contains(msg, `field "`+name+`"`) || strings.Contains(msg, "field: "+name+" ") ||
			strings.HasSuffix(msg, "field: "+name)
	})
}

package operation

import (
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"

	"github.com/dds-project/dds/graphql/protocol"
)

// mergeDocument folds repeated selections of every selection set of doc's
// operations (their fragment spreads inlined by inlineSpreads, so none is
// left) into one before validation and normalization, in time linear in
// the expanded document: identical fields (same alias, name, arguments and
// directives) become one field whose sub-selections are merged
// (recursively), identical inline fragments one. The
// library's validator compares the fields of a set pairwise and its
// normalizer deduplicates them pairwise, so 20,000 repeated `id`s would
// cost them hundreds of millions of comparisons; after merging a set holds
// each response key once per variant. Two fields of one set under one
// response key with different names or arguments can never merge: the
// first such pair is refused here, as validation would, rather than
// compared with every other.
func mergeDocument(doc *ast.Document) *protocol.Error {
	mg := merger{doc: doc}
	for _, n := range doc.RootNodes {
		if n.Kind != ast.NodeKindOperationDefinition || !doc.OperationDefinitions[n.Ref].HasSelections {
			continue // fragments are inlined by now (inlineSpreads)
		}
		if err := mg.set(doc.OperationDefinitions[n.Ref].SelectionSet); err != nil {
			return err
		}
	}
	return nil
}

type merger struct {
	doc *ast.Document
	buf []byte
}

func (mg *merger) set(ref int) *protocol.Error {
	doc := mg.doc
	refs := doc.SelectionSets[ref].SelectionRefs
	if len(refs) == 0 {
		return nil
	}
	var (
		out      = make([]int, 0, len(refs))
		fields   = map[string]int{} // key -> field ref kept
		variants = map[string]int{} // response key -> first field ref (name and arguments)
		shapes   = map[int]string{}
		inlines  = map[string]int{}
	)
	for _, sr := range refs {
		s := doc.Selections[sr]
		switch s.Kind {
		case ast.SelectionKindField:
			resp := doc.FieldAliasOrNameString(s.Ref)
			shape := doc.FieldNameString(s.Ref) + "(" + mg.arguments(doc.Fields[s.Ref].HasArguments, doc.Fields[s.Ref].Arguments.Refs) + ")"
			if first, ok := variants[resp]; ok {
				if shapes[first] != shape {
					return mg.conflict(resp, first, s.Ref)
				}
			} else {
				variants[resp] = s.Ref
				shapes[s.Ref] = shape
			}
			f := &doc.Fields[s.Ref]
			k := resp + "|" + shape + "|" + mg.directives(f.HasDirectives, f.Directives.Refs)
			if kept, ok := fields[k]; ok {
				mg.absorb(&doc.Fields[kept].SelectionSet, &doc.Fields[kept].HasSelections, f.SelectionSet, f.HasSelections)
				continue
			}
			fields[k] = s.Ref
		case ast.SelectionKindInlineFragment:
			in := &doc.InlineFragments[s.Ref]
			k := "|" + mg.directives(in.HasDirectives, in.Directives.Refs)
			if in.TypeCondition.Type != -1 {
				k = doc.InlineFragmentTypeConditionNameString(s.Ref) + k
			}
			if kept, ok := inlines[k]; ok {
				mg.absorb(&doc.InlineFragments[kept].SelectionSet, &doc.InlineFragments[kept].HasSelections, in.SelectionSet, in.HasSelections)
				continue
			}
			inlines[k] = s.Ref
		}
		out = append(out, sr)
	}
	doc.SelectionSets[ref].SelectionRefs = out
	for _, sr := range out {
		s := doc.Selections[sr]
		var err *protocol.Error
		switch s.Kind {
		case ast.SelectionKindField:
			if f := doc.Fields[s.Ref]; f.HasSelections {
				err = mg.set(f.SelectionSet)
			}
		case ast.SelectionKindInlineFragment:
			if in := doc.InlineFragments[s.Ref]; in.HasSelections {
				err = mg.set(in.SelectionSet)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// absorb appends the selections of set `from` to the kept set.
func (mg *merger) absorb(kept *int, keptHas *bool, from int, fromHas bool) {
	if !fromHas {
		return
	}
	if !*keptHas {
		*kept, *keptHas = from, true
		return
	}
	ss := &mg.doc.SelectionSets[*kept]
	ss.SelectionRefs = append(ss.SelectionRefs, mg.doc.SelectionSets[from].SelectionRefs...)
}

func (mg *merger) conflict(resp string, a, b int) *protocol.Error {
	doc := mg.doc
	reason := "they have differing arguments"
	if an, bn := doc.FieldNameString(a), doc.FieldNameString(b); an != bn {
		reason = an + " and " + bn + " are different fields"
	}
	e := protocol.Error{Message: `Fields "` + resp + `" conflict because ` + reason + `. Use different aliases on the fields to fetch both if this was intentional.`}
	for _, f := range []int{a, b} {
		e.Locations = append(e.Locations, locationOf(doc.Fields[f].Position))
	}
	return &e
}

func (mg *merger) arguments(has bool, refs []int) string {
	if !has || len(refs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, a := range refs {
		b.WriteString(mg.doc.ArgumentNameString(a))
		b.WriteByte(':')
		mg.buf, _ = mg.doc.PrintValueBytes(mg.doc.Arguments[a].Value, mg.buf[:0])
		b.Write(mg.buf)
		b.WriteByte(',')
	}
	return b.String()
}

func (mg *merger) directives(has bool, refs []int) string {
	if !has || len(refs) == 0 {
		return ""
	}
	var b strings.Builder
	for _, d := range refs {
		b.WriteString(mg.doc.DirectiveNameString(d))
		b.WriteByte('(')
		b.WriteString(mg.arguments(mg.doc.Directives[d].HasArguments, mg.doc.Directives[d].Arguments.Refs))
		b.WriteString(")")
	}
	return b.String()
}

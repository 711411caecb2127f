package model

import (
	"fmt"
	"strings"

	"github.com/dds-project/dds/schema"
)

// Upserts and nested writes (docs/graphql.md, Upserts and Nested writes).
//
// An entity with a unique field gets
//
//	upsert<E>(input: <E>CreateInput!, onConflict: <E>OnConflict!): <E>!
//	batchUpsert<E>(input: [<E>CreateInput!]!, onConflict: <E>OnConflict!): <E>BatchResult!
//
// with both its create and update scopes (an upsert may do either). The
// create input of an entity gets one member per relationship field the
// credential may create edges of, whose value connects existing records
// and creates new ones with the record:
//
//	<field>: <E><Field>NestedInput  {connect: [<E><Field>Connect!], create: [<E><Field>NestedCreate!]}

// writeRoots adds the upsert mutations of e.
func (g *gen) writeRoots(e *schema.Entity, n entityNames, rf RootField) {
	targets := e.ConflictTargets()
	if len(targets) == 0 || !g.can("entity", e.Name, "create") || !g.can("entity", e.Name, "update") {
		return
	}
	oc := e.Name + "OnConflict"
	g.typ("input", oc, "How an upsert finds the record to update.", []string{
		fmt.Sprintf("  %q\n  field: String!", "The unique field whose value finds the record: "+strings.Join(targets, ", ")+"."),
		fmt.Sprintf("  %q\n  update: [String!]", "The fields an update changes; default: every field the input sends except field."),
	})
	g.root(&g.mut, "upsert"+e.Name, with(rf, KindUpsert), "(input: "+n.CreateInput+"!, onConflict: "+oc+"!): "+n.Type+"!")
	g.root(&g.mut, "batchUpsert"+e.Name, with(rf, KindBatchUpsert), "(input: ["+n.CreateInput+"!]!, onConflict: "+oc+"!): "+n.BatchResult+"!")
}

// nestedInputs returns the create-input members of e's relationship
// fields and defines their input types: a field for each relationship
// whose edges the credential may create, from either end that names a
// field. Its create member appears only when the credential may create
// records of the far entity.
func (g *gen) nestedInputs(e *schema.Entity) []string {
	var lines []string
	for i := range g.def.Relationships {
		r := &g.def.Relationships[i]
		if !g.can("relationship", r.Name, "create") {
			continue
		}
		for _, end := range []struct{ self, far, field string }{{r.From, r.To, r.FromField}, {r.To, r.From, r.ToField}} {
			if end.self != e.Name || end.field == "" || !g.visible("entity", end.far) {
				continue
			}
			if _, clash := e.Field(end.field); clash {
				continue // schema validation keeps these apart; never shadow a field
			}
			far, ok := g.def.Entity(end.far)
			if !ok {
				continue
			}
			stem := e.Name + upperFirst(end.field)
			props := ""
			if len(r.Properties) > 0 {
				props = "  \"The edge's properties.\"\n  properties: " + g.n.relationship(r).PropsInput
			}
			connect := []string{"  \"The id of an existing " + far.Name + ".\"\n  id: ID!"}
			if props != "" {
				connect = append(connect, props)
			}
			g.typ("input", stem+"Connect", "An existing "+far.Name+" to link through "+r.Name+".", connect)
			members := []string{fmt.Sprintf("  %q\n  connect: [%sConnect!]", "Existing "+far.Name+" records to link.", stem)}
			if g.can("entity", far.Name, "create") && g.hasWritable(far, props != "") {
				var create []string
				for j := range far.Fields {
					f := &far.Fields[j]
					if !g.writable(far, f) {
						continue
					}
					create = append(create, "  "+f.Name+": "+inType(far.Name, f, f.Required && f.Default == nil))
				}
				if _, clash := far.Field("properties"); props != "" && !clash {
					create = append(create, props)
				}
				g.typ("input", stem+"NestedCreate", "A new "+far.Name+" to create and link through "+r.Name+".", create)
				members = append(members, fmt.Sprintf("  %q\n  create: [%sNestedCreate!]", "New "+far.Name+" records to create and link.", stem))
			}
			g.typ("input", stem+"NestedInput", fmt.Sprintf("Records to link to the new %s through %s, in the same transaction.", e.Name, r.Name), members)
			lines = append(lines, "  "+end.field+": "+stem+"NestedInput")
		}
	}
	return lines
}

// hasWritable reports whether a nested create of e has a member: a field
// the credential may write, or the edge's properties.
func (g *gen) hasWritable(e *schema.Entity, props bool) bool {
	if props {
		return true
	}
	for i := range e.Fields {
		if g.writable(e, &e.Fields[i]) {
			return true
		}
	}
	return false
}

package openapi

import (
	"fmt"
	"sort"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/schema"
)

// Upserts and nested writes (docs/rest.md, Upsert and Nested writes).

// createInput is the body of a create (single and batch items): the
// entity's input fields plus, for each relationship field (fromField on
// the source, toField on the target, and the relationship's name), the
// nested write {connect, create}.
func (b *builder) createInput(e *schema.Entity) {
	n := e.Name
	in := openapi3.Schemas{}
	var required []string
	for i := range e.Fields {
		f := &e.Fields[i]
		in[f.Name] = val(fieldSchema(f))
		if f.Required && f.Default == nil {
			required = append(required, f.Name)
		}
	}
	for _, r := range b.def.RelationshipsOf(n) {
		type end struct {
			key string
			far string
		}
		var ends []end
		if r.From == n {
			if r.FromField != "" {
				ends = append(ends, end{r.FromField, r.To})
			}
			ends = append(ends, end{r.Name, r.To})
		}
		if r.To == n {
			if r.ToField != "" {
				ends = append(ends, end{r.ToField, r.From})
			}
			if r.From != n {
				ends = append(ends, end{r.Name, r.From})
			}
		}
		for _, x := range ends {
			if _, clash := in[x.key]; clash {
				continue
			}
			name := fmt.Sprintf("%s.Nested.%s", n, x.key)
			b.schemas[name] = val(b.nested(r, x.far))
			in[x.key] = ref(name)
		}
	}
	input := closed(object(in, required...))
	input.Description = fmt.Sprintf("The fields of a new %s; absent fields take their default, unknown fields are rejected. "+
		"A relationship field links existing records (connect) and creates related ones (create), in the same transaction.", n)
	b.schemas[n+".CreateInput"] = val(input)
}

// nested is the {connect, create} of a relationship field whose far end is far.
func (b *builder) nested(r *schema.Relationship, far string) *openapi3.Schema {
	props := ref(r.Name + ".Properties")
	connect := array(val(closed(object(openapi3.Schemas{
		"id":         val(withFormat(str("id of an existing "+far), "uuid")),
		"properties": props,
	}, "id"))))
	nested := openapi3.Schemas{"connect": val(withDesc(connect, "existing "+far+" records to link"))}
	if fe, ok := b.def.Entity(far); ok {
		cp := openapi3.Schemas{}
		var req []string
		for i := range fe.Fields {
			f := &fe.Fields[i]
			cp[f.Name] = val(fieldSchema(f))
			if f.Required && f.Default == nil {
				req = append(req, f.Name)
			}
		}
		if _, clash := cp["properties"]; !clash {
			cp["properties"] = props
		}
		nested["create"] = val(withDesc(array(val(closed(object(cp, req...)))), "new "+far+" records to create and link; properties are the edge's"))
	}
	return withDesc(closed(object(nested)), fmt.Sprintf("Records to link through %s, in the same transaction as the new record.", r.Name))
}

// upsert adds the upsert body and result of an entity with a unique field
// and its path; an entity without one has no upsert.
func (b *builder) upsert(e *schema.Entity, base string, batchFail *openapi3.ResponseRef) {
	n := e.Name
	targets := e.ConflictTargets()
	if len(targets) == 0 {
		return
	}
	onConflict := str("the unique field whose value finds the record to update")
	for _, t := range targets {
		onConflict.Enum = append(onConflict.Enum, t)
	}
	names := []string{}
	for i := range e.Fields {
		names = append(names, e.Fields[i].Name)
	}
	sort.Strings(names)
	field := str("")
	for _, f := range names {
		field.Enum = append(field.Enum, f)
	}
	items := array(ref(n + ".Input"))
	items.MinItems, items.MaxItems = 1, uptr(MaxBatchItems)
	b.schemas[n+".Upsert"] = val(closed(object(openapi3.Schemas{
		"onConflict": val(onConflict),
		"update":     val(withDesc(array(val(field)), "the fields an update may change (of those its item sends); default: every field the item sends")),
		"items":      val(items),
	}, "onConflict", "items")))
	res := object(openapi3.Schemas{
		"successful":   val(array(ref(n))),
		"failed":       val(array(ref("dds.BatchFailure"))),
		"totalCount":   val(typed("integer")),
		"successCount": val(typed("integer")),
		"failureCount": val(typed("integer")),
		"createdCount": val(withDesc(typed("integer"), "records created")),
		"updatedCount": val(withDesc(typed("integer"), "records updated")),
		"stats":        ref("dds.BatchStats"),
	}, "successful", "failed", "totalCount", "successCount", "failureCount", "createdCount", "updatedCount", "stats")
	b.schemas[n+".UpsertResult"] = val(withDesc(res, "The result of an upsert: a batch result with how many records were created and updated."))

	scope := "entity:" + n + ":create"
	o := op{id: "upsert" + n, summary: "Create or update up to 1,000 " + n + " records by a unique field, atomically", scope: scope, tag: n,
		body:   jsonBody("The unique field to match on, the fields to update, and the records.", ref(n+".Upsert")),
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("Every item was created or updated.", ref(n+".UpsertResult")), 400: batchFail},
		errors: []string{"Conflict", "TooLarge"}}.build()
	// An upsert may create and may update: it needs both scopes.
	o.Description = "Requires scopes `entity:" + n + ":create` and `entity:" + n + ":update`. Each record's event is entity.created or entity.updated."
	o.Extensions["x-dds-scope"] = scope + " entity:" + n + ":update"
	b.item(base + "/upsert").Post = o
}

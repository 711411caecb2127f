package openapi

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// lifecycle documents an entity's softDelete and history options
// (docs/schemas.md): deletedAt on its records and filter, withDeleted on
// its reads, and the restore and history routes. An entity without
// either option is documented exactly as before.
func (b *builder) lifecycle(e *schema.Entity) {
	n := e.Name
	base := "/api/v1/dynamic/" + n
	scope := func(o string) string { return "entity:" + n + ":" + o }
	idParam := pathParam("id", "record id")
	if e.SoftDelete {
		del := withFormat(str("when the record was deleted (softDelete); null while it is live"), "date-time")
		del.ReadOnly = true
		for _, s := range []string{n, n + ".Selected"} {
			b.schemas[s].Value.Properties[schema.ColDeletedAt] = val(nullable(del))
		}
		b.schemas[n+".Filter"].Value.Properties[schema.ColDeletedAt] = filterProp(&schema.Field{Name: schema.ColDeletedAt, Type: schema.Timestamp}, true)
		wd := queryParam("withDeleted", "also show soft-deleted records (needs "+scope("delete")+"; 403 otherwise)", typed("boolean"))
		for _, o := range []*openapi3.Operation{b.item(base).Get, b.item(base + "/{id}").Get, b.item(base + "/query").Post} {
			o.Parameters = append(o.Parameters, wd)
			if o.Responses.Value("403") == nil {
				o.Responses.Set("403", errRef("Forbidden"))
			}
		}
		b.item(base + "/{id}/restore").Post = op{id: "restore" + n, summary: "Restore a soft-deleted " + n + " (emits entity.updated)", scope: scope("delete"), tag: n,
			params: openapi3.Parameters{idParam},
			ok:     map[int]*openapi3.ResponseRef{200: jsonResp("The restored record (a live one is returned unchanged).", ref(n))}}.build()
	}
	if e.History {
		changed := array(val(typed("string")))
		changed.Description = "the fields the write changed (on a create, those it set)"
		op2 := str("the write")
		op2.Enum = []any{"create", "update", "delete", "restore"}
		version := object(openapi3.Schemas{
			"id":      val(withFormat(str("version id (time-ordered)"), "uuid")),
			"op":      val(op2),
			"at":      val(withFormat(str("when the write's transaction began"), "date-time")),
			"keyId":   val(nullable(str("the API key that wrote, or that minted the access token"))),
			"userId":  val(nullable(str("the end user the credential acted for"))),
			"changed": val(changed),
			"record":  val(withDesc(typed("object"), "the record after the write (before it, for a hard delete)")),
		}, "id", "op", "at", "changed", "record")
		b.schemas[n+".History"] = val(object(openapi3.Schemas{
			"items":      val(array(val(version))),
			"nextCursor": val(str("the cursor of the next page; absent on the last")),
		}, "items"))
		limit := integer("versions per page")
		limit.Min, limit.Max, limit.Default = fptr(1), fptr(records.MaxHistoryLimit), records.DefaultHistoryLimit
		b.item(base + "/{id}/history").Get = op{id: "history" + n, summary: "The versions of a " + n + ", newest first", scope: scope("read"), tag: n,
			params: openapi3.Parameters{idParam, queryParam("limit", "versions per page", limit), queryParam("cursor", "nextCursor of the page before", typed("string"))},
			ok:     map[int]*openapi3.ResponseRef{200: jsonResp("A page of versions.", ref(n+".History"))}}.build()
	}
}

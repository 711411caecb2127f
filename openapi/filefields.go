package openapi

import (
	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/schema"
)

// fileFields documents the download URL of a file through the record that
// holds it (docs/files.md, "Files under rules"), for an entity with FILE
// fields: the record's read rule and field lists decide, as on a get. An
// entity without FILE fields (or whose FILE fields a role may not read:
// the view removes them first) gets no such path.
func (b *builder) fileFields(e *schema.Entity) {
	var names []any
	for i := range e.Fields {
		if e.Fields[i].Type == schema.File {
			names = append(names, e.Fields[i].Name)
		}
	}
	if len(names) == 0 {
		return
	}
	n := e.Name
	field := typed("string")
	field.Enum = names
	fieldParam := openapi3.NewPathParameter("field").WithSchema(field)
	fieldParam.Description = "the FILE field holding the file"
	download := object(openapi3.Schemas{
		"url":       val(str("a presigned GET of the file, valid until expiresAt (a bearer capability: anyone holding it may download until then)")),
		"fileName":  val(str("the name the file was uploaded with")),
		"mimeType":  val(str("its content type")),
		"expiresAt": val(withFormat(str("when the URL stops working (FILE_STORAGE_URL_TTL after it was issued)"), "date-time")),
	}, "url", "fileName", "mimeType", "expiresAt")
	b.schemas["FileDownload"] = val(download)
	b.item("/api/v1/dynamic/" + n + "/{id}/files/{field}/download-url").Get = op{id: "fileDownloadURL" + n,
		summary: "A download URL for the file a " + n + " holds in a FILE field (also needs file:*:read)",
		scope:   "entity:" + n + ":read", tag: n,
		params: openapi3.Parameters{pathParam("id", "record id"), &openapi3.ParameterRef{Value: fieldParam}},
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("The file's presigned URL.", ref("FileDownload"))},
		errors: []string{"Conflict"}}.build()
}

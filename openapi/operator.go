package openapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/apperr"
)

// Operator renders the document of the operator's tenant API (list, get,
// delete, export, import of tenants, and their jobs; docs/operations.md),
// served at GET /api/v1/operator/openapi.json. Its credential is the
// operator token, not a tenant's key.
func (g *Generator) Operator() ([]byte, error) {
	doc := &openapi3.T{OpenAPI: Version,
		Info:       &openapi3.Info{Title: "DDS operator API", Version: "1", Description: "Tenants: list, get, delete, export, import. Bearer: the operator token (DDS_OPERATOR_TOKEN)."},
		Servers:    openapi3.Servers{{URL: g.serverURL}},
		Paths:      openapi3.NewPaths(),
		Security:   openapi3.SecurityRequirements{{"operatorToken": []string{}}},
		Components: &openapi3.Components{Schemas: openapi3.Schemas{}, SecuritySchemes: openapi3.SecuritySchemes{}},
	}
	doc.Components.SecuritySchemes["operatorToken"] = &openapi3.SecuritySchemeRef{Value: &openapi3.SecurityScheme{Type: "http", Scheme: "bearer", Description: "DDS_OPERATOR_TOKEN"}}
	s := doc.Components.Schemas
	ts := func(desc string) *openapi3.Schema { return withFormat(str(desc), "date-time") }
	s["Error"] = val(object(openapi3.Schemas{"error": val(object(openapi3.Schemas{
		"code": val(str("machine-readable code")), "message": val(str("what is wrong")),
		"details": val(array(val(object(openapi3.Schemas{"field": val(str("")), "message": val(str(""))})))),
	}, "code", "message"))}, "error"))
	s["Tenant"] = val(object(openapi3.Schemas{
		"id": val(withFormat(str(""), "uuid")), "name": val(str("")), "status": val(withEnum(str("active, or deleting once its delete is accepted"), "active", "deleting")),
		"createdAt": val(ts("")), "deletedAt": val(ts("when its delete was accepted")),
		"schemas": val(integer("GET by id only")), "apiKeys": val(integer("live keys; GET by id only")),
		"webhooks": val(integer("GET by id only")), "files": val(integer("confirmed files; GET by id only")),
	}, "id", "name", "status", "createdAt"))
	s["TenantJob"] = val(object(openapi3.Schemas{
		"id": val(withFormat(str(""), "uuid")), "type": val(withEnum(str(""), "delete", "export", "import")),
		"tenantId":  val(withFormat(str("the tenant deleted, exported, or made by the import"), "uuid")),
		"status":    val(withEnum(str(""), "queued", "running", "succeeded", "failed", "cancelled")),
		"step":      val(nullable(str("the step running"))),
		"progress":  val(object(openapi3.Schemas{"processed": val(integer("")), "total": val(nullable(integer("")))}, "processed", "total")),
		"result":    val(nullable(withDesc(typed("object"), "delete: {removed: {step: count}}; export: {archive: {id, sizeBytes, sha256, downloadUrl, expiresAt}, counts, checksums, phasesMs}; import: {tenantId, name, counts, phasesMs, secretsShown, apiKeys: [{id, name, key, scopes}], webhooks: [{id, targetUrl, signingSecret}]} (keys and secrets in the first read that sees it succeed only)"))),
		"error":     val(nullable(object(openapi3.Schemas{"code": val(str("")), "message": val(str(""))}, "code", "message"))),
		"createdAt": val(ts("")), "startedAt": val(nullable(ts(""))), "finishedAt": val(nullable(ts(""))),
	}, "id", "type", "tenantId", "status", "progress", "result", "error", "createdAt", "startedAt", "finishedAt"))
	s["ArchiveUpload"] = val(object(openapi3.Schemas{
		"fileId":    val(withFormat(str("the archive's id, for POST /api/v1/tenants/import"), "uuid")),
		"uploadUrl": val(str("PUT the zip here within the hour")), "headers": val(withDesc(typed("object"), "headers the PUT must send")),
		"expiresAt": val(ts("")),
	}, "fileId", "uploadUrl", "headers", "expiresAt"))
	errResp := func(desc string) *openapi3.ResponseRef { return jsonResp(desc, ref("Error")) }
	job := jsonResp("a tenant job", ref("TenantJob"))
	opx := func(id, summary string, params openapi3.Parameters, body *openapi3.RequestBodyRef, ok map[int]*openapi3.ResponseRef, errs ...int) *openapi3.Operation {
		x := openapi3.NewOperation()
		x.OperationID, x.Summary, x.Tags, x.Parameters, x.RequestBody = id, summary, []string{"tenants"}, params, body
		x.Responses = openapi3.NewResponsesWithCapacity(6)
		for c, r := range ok {
			x.Responses.Set(itoa(c), r)
		}
		x.Responses.Set("401", errResp("no operator token, or another credential"))
		for _, c := range errs {
			x.Responses.Set(itoa(c), errResp(http.StatusText(c)))
		}
		return x
	}
	id := openapi3.Parameters{pathParam("id", "tenant id")}
	doc.Paths.Set("/api/v1/tenants", &openapi3.PathItem{Get: opx("listTenants", "List tenants by id", openapi3.Parameters{
		queryParam("limit", "1 to 1000 (default 100)", integer("")), queryParam("after", "the nextAfter of the previous page", withFormat(str(""), "uuid"))},
		nil, map[int]*openapi3.ResponseRef{200: jsonResp("a page of tenants", val(object(openapi3.Schemas{
			"tenants": val(array(ref("Tenant"))), "nextAfter": val(nullable(withFormat(str(""), "uuid")))}, "tenants", "nextAfter")))}, 400)})
	doc.Paths.Set("/api/v1/tenants/{id}", &openapi3.PathItem{
		Get:    opx("getTenant", "A tenant with counts of what it holds", id, nil, map[int]*openapi3.ResponseRef{200: jsonResp("the tenant", ref("Tenant"))}, 404),
		Delete: opx("deleteTenant", "Delete a tenant: its credentials answer 401 at once; the job removes everything it holds", id, nil, map[int]*openapi3.ResponseRef{202: job}, 404, 503),
	})
	doc.Paths.Set("/api/v1/tenants/{id}/export", &openapi3.PathItem{Post: opx("exportTenant", "Export a tenant to a zip archive (a job)", id, nil,
		map[int]*openapi3.ResponseRef{202: job}, 404, 409, 503)})
	doc.Paths.Set("/api/v1/tenants/import", &openapi3.PathItem{Post: opx("importTenant", "Import an archive as a new tenant (a job)", nil,
		jsonBody("the archive", val(closed(object(openapi3.Schemas{"fileId": val(withFormat(str("an uploaded archive, or an export of this deployment"), "uuid")),
			"name": val(str("the new tenant's name; default: the exported tenant's"))}, "fileId")))),
		map[int]*openapi3.ResponseRef{202: job}, 400, 404, 409, 503)})
	doc.Paths.Set("/api/v1/tenant-archives", &openapi3.PathItem{Post: opx("uploadTenantArchive", "An upload URL for an archive to import", nil,
		jsonBody("the archive's size", val(closed(object(openapi3.Schemas{"sizeBytes": val(integer("bytes of the zip"))}, "sizeBytes")))),
		map[int]*openapi3.ResponseRef{201: jsonResp("where to PUT it", ref("ArchiveUpload"))}, 400, 503)})
	doc.Paths.Set("/api/v1/tenant-jobs", &openapi3.PathItem{Get: opx("listTenantJobs", "Tenant jobs, newest first (without import secrets)", openapi3.Parameters{
		queryParam("tenantId", "only this tenant's", withFormat(str(""), "uuid")), queryParam("limit", "1 to 500 (default 50)", integer(""))},
		nil, map[int]*openapi3.ResponseRef{200: jsonResp("jobs", val(object(openapi3.Schemas{"jobs": val(array(ref("TenantJob")))}, "jobs")))}, 400)})
	doc.Paths.Set("/api/v1/tenant-jobs/{id}", &openapi3.PathItem{Get: opx("getTenantJob", "A tenant job", openapi3.Parameters{pathParam("id", "job id")}, nil,
		map[int]*openapi3.ResponseRef{200: job}, 404)})
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, apperr.Wrap(err, "render OpenAPI document")
	}
	return append(b, '\n'), nil
}

func withEnum(s *openapi3.Schema, values ...any) *openapi3.Schema { s.Enum = values; return s }

func itoa(c int) string { return strconv.Itoa(c) }

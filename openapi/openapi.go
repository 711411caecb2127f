// Package openapi generates the OpenAPI 3.1 description of the dynamic REST
// API of one schema version (GET /api/v1/schemas/{id}/openapi.json): one set
// of components per entity (record, input, patch, filter, query, list, batch
// bodies, vector search) and per relationship (properties, edge bodies, list
// items), every path of the dynamic REST API (records, query, batch, vector search, relationships), the bearer security scheme, and the
// error envelope and batch result shared by all of them. OpenAPIFor renders
// it as one credential may see it (view.go: its scopes' operations, its
// roles' fields; GET /api/v1/openapi.json).
//
// Component names of entities are the entity names (Product, Product.Input,
// ...); relationship components start with the relationship name
// (IN_CATEGORY.Properties); shared components start with "dds." — entity and
// relationship names cannot contain dots, so no two can collide.
package openapi

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Version is the OpenAPI version of the generated documents.
const Version = "3.1.0"

// MaxBatchItems is the per-request batch limit (docs/rest.md, Batches).
const MaxBatchItems = 1000

// Generator renders OpenAPI documents. It implements admin.OpenAPIGenerator.
type Generator struct {
	serverURL string
}

// New returns a generator. serverURL is the public base URL of the service
// (paths start with /api/v1); empty means "/" (the host serving the document).
func New(serverURL string) *Generator {
	return &Generator{serverURL: strings.TrimRight(serverURL, "/")}
}

// OpenAPI renders the document of a schema version as indented JSON. The
// output is deterministic for the same input.
func (g *Generator) OpenAPI(info schema.Info) ([]byte, error) {
	doc := g.Document(info)
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, apperr.Wrap(err, "render OpenAPI document")
	}
	return append(b, '\n'), nil
}

// Document builds the document of a schema version.
func (g *Generator) Document(info schema.Info) *openapi3.T {
	b := &builder{def: &info.Definition, schemas: openapi3.Schemas{}, paths: openapi3.NewPaths()}
	b.shared()
	for i := range info.Entities {
		b.entity(&info.Entities[i])
	}
	for i := range info.Relationships {
		b.relationship(&info.Relationships[i])
	}
	b.webhooks()
	server := g.serverURL
	if server == "" {
		server = "/"
	}
	desc := fmt.Sprintf("The dynamic REST API of DDS schema %q (version %d, id %s), generated from the schema definition. "+
		"Every request needs `Authorization: Bearer <API key or access token>`; each operation names the scope it needs. "+
		"Errors use the envelope `dds.Error`; rate limits are reported in X-RateLimit-* headers.", info.Name, info.Version, info.ID)
	doc := &openapi3.T{
		OpenAPI: Version,
		Info: &openapi3.Info{
			Title:       "DDS " + info.Name,
			Version:     strconv.Itoa(info.Version),
			Description: desc,
			Extensions:  map[string]any{"x-dds-schema-id": info.ID, "x-dds-schema-name": info.Name},
		},
		Servers:  openapi3.Servers{{URL: server}},
		Paths:    b.paths,
		Security: openapi3.SecurityRequirements{{"bearerAuth": []string{}}},
		Tags:     b.tags,
		Components: &openapi3.Components{
			Schemas:   b.schemas,
			Responses: b.responses(),
			SecuritySchemes: openapi3.SecuritySchemes{"bearerAuth": {Value: &openapi3.SecurityScheme{
				Type: "http", Scheme: "bearer",
				Description: "An API key (dds_<env>_<secret>) or an access token (JWT) from POST /api/v1/auth/token.",
			}}},
		},
	}
	return doc
}

type builder struct {
	def     *schema.Definition
	schemas openapi3.Schemas
	paths   *openapi3.Paths
	tags    openapi3.Tags
}

// --- schema helpers -------------------------------------------------------

func ref(name string) *openapi3.SchemaRef {
	return openapi3.NewSchemaRef("#/components/schemas/"+name, nil)
}

func val(s *openapi3.Schema) *openapi3.SchemaRef { return openapi3.NewSchemaRef("", s) }

func typed(t string) *openapi3.Schema { return &openapi3.Schema{Type: &openapi3.Types{t}} }

func str(desc string) *openapi3.Schema {
	s := typed("string")
	s.Description = desc
	return s
}

func integer(desc string) *openapi3.Schema {
	s := typed("integer")
	s.Description = desc
	return s
}

func array(items *openapi3.SchemaRef) *openapi3.Schema {
	s := typed("array")
	s.Items = items
	return s
}

func object(props openapi3.Schemas, required ...string) *openapi3.Schema {
	s := typed("object")
	s.Properties = props
	if len(required) > 0 {
		s.Required = required
	}
	return s
}

func closed(s *openapi3.Schema) *openapi3.Schema {
	f := false
	s.AdditionalProperties = openapi3.AdditionalProperties{Has: &f}
	return s
}

func uptr(n uint64) *uint64 { return &n }

func fptr(f float64) *float64 { return &f }

// nullable lets a schema also accept null (3.1: a "null" type; enums also
// list null).
func nullable(s *openapi3.Schema) *openapi3.Schema {
	if s.Type == nil || len(*s.Type) == 0 {
		return s // any value, null included
	}
	c := *s
	t := append(openapi3.Types{}, *s.Type...)
	t = append(t, "null")
	c.Type = &t
	if len(s.Enum) > 0 {
		c.Enum = append(append([]any{}, s.Enum...), nil)
	}
	return &c
}

// element is the schema of one value of a field's type (a list's element;
// the whole value for VECTOR).
func element(f *schema.Field) *openapi3.Schema {
	var s *openapi3.Schema
	switch f.Type {
	case schema.String:
		s = typed("string")
		if f.MaxLength > 0 {
			s.MaxLength = uptr(uint64(f.MaxLength))
		}
	case schema.Text:
		s = typed("string")
	case schema.Integer:
		s = typed("integer")
		s.Format = "int64"
	case schema.Number:
		s = typed("number")
		s.Format = "double"
	case schema.Boolean:
		s = typed("boolean")
	case schema.Timestamp:
		s = typed("string")
		s.Format = "date-time"
	case schema.Date:
		s = typed("string")
		s.Format = "date"
	case schema.JSON:
		s = &openapi3.Schema{Description: "any JSON value"}
	case schema.Enum:
		s = typed("string")
		for _, v := range f.Values {
			s.Enum = append(s.Enum, v)
		}
	case schema.File:
		s = typed("string")
		s.Format = "uuid"
		s.Description = "id of a confirmed file (POST /api/v1/files/upload-url, then confirm)"
	case schema.Vector:
		s = array(val(typed("number")))
		s.MinItems = uint64(f.VectorDimensions)
		s.MaxItems = uptr(uint64(f.VectorDimensions))
		s.Description = fmt.Sprintf("a vector of exactly %d numbers", f.VectorDimensions)
	default:
		s = &openapi3.Schema{}
	}
	return s
}

// value is the schema of a field's value, not null.
func value(f *schema.Field) *openapi3.Schema {
	if f.List && f.Type != schema.Vector {
		el := element(f)
		s := array(val(el))
		s.Description = "a list; " + strings.TrimSpace(strings.ToLower(string(f.Type))) + " elements"
		return s
	}
	return element(f)
}

// fieldSchema is a field's value as records show it and inputs take it:
// null allowed unless the field is required; the default documented.
func fieldSchema(f *schema.Field) *openapi3.Schema {
	s := value(f)
	if !f.Required {
		s = nullable(s)
	}
	if f.Default != nil {
		c := *s
		c.Default = f.Default
		s = &c
	}
	var notes []string
	if s.Description != "" {
		notes = append(notes, s.Description)
	}
	if f.Unique {
		notes = append(notes, "unique")
	}
	if f.Searchable {
		notes = append(notes, "searchable (full-text `search`)")
	}
	if len(notes) > 0 && s.Description != strings.Join(notes, "; ") {
		c := *s
		c.Description = strings.Join(notes, "; ")
		s = &c
	}
	return s
}

func systemFields() openapi3.Schemas {
	id := str("record id (UUIDv7, assigned by DDS)")
	id.Format = "uuid"
	id.ReadOnly = true
	created := str("when the record was created")
	created.Format = "date-time"
	created.ReadOnly = true
	updated := str("when the record was last updated")
	updated.Format = "date-time"
	updated.ReadOnly = true
	return openapi3.Schemas{"id": val(id), "createdAt": val(created), "updatedAt": val(updated)}
}

// --- shared components ----------------------------------------------------

func (b *builder) shared() {
	codes := []any{}
	for _, c := range []apperr.Code{apperr.Validation, apperr.BadRequest, apperr.Unauthenticated, apperr.Forbidden,
		apperr.NotFound, apperr.Conflict, apperr.TooLarge, apperr.RateLimited, apperr.Unavailable, apperr.Internal,
		apperr.QueryTooExpensive, apperr.QueryTimeout, apperr.IdempotencyKeyReused} {
		codes = append(codes, string(c))
	}
	code := str("machine-readable error code")
	code.Enum = codes
	b.schemas["dds.ErrorCode"] = val(code)
	b.schemas["dds.FieldError"] = val(closed(object(openapi3.Schemas{
		"field":   val(str("the invalid input field (a path such as where.price or items[3].name)")),
		"message": val(str("what is wrong with it")),
	}, "field", "message")))
	b.schemas["dds.Error"] = val(withDesc(object(openapi3.Schemas{
		"error": val(object(openapi3.Schemas{
			"code":    ref("dds.ErrorCode"),
			"message": val(str("human-readable message")),
			"details": val(array(ref("dds.FieldError"))),
		}, "code", "message")),
	}, "error"), "The error envelope of every non-batch error."))
	b.schemas["dds.BatchItemError"] = val(object(openapi3.Schemas{
		"code":    ref("dds.ErrorCode"),
		"message": val(str("")),
		"field":   val(str("the field to blame, when one is")),
		"details": val(array(ref("dds.FieldError"))),
	}, "code", "message"))
	b.schemas["dds.BatchFailure"] = val(object(openapi3.Schemas{
		"index": val(integer("position of the item in the request")),
		"item":  val(withDesc(&openapi3.Schema{}, "the item as sent")),
		"error": ref("dds.BatchItemError"),
	}, "index", "error"))
	num := func(d string) *openapi3.SchemaRef { s := typed("number"); s.Description = d; return val(s) }
	b.schemas["dds.BatchStats"] = val(object(openapi3.Schemas{
		"processingTimeMs": num("whole request"),
		"validationTimeMs": num("validating every item"),
		"databaseTimeMs":   num("the transaction"),
	}, "processingTimeMs", "validationTimeMs", "databaseTimeMs"))
	ids := array(val(withFormat(typed("string"), "uuid")))
	ids.MinItems = 1
	ids.MaxItems = uptr(MaxBatchItems)
	b.schemas["dds.BatchDelete"] = val(closed(object(openapi3.Schemas{"ids": val(ids)}, "ids")))
	dir := str("out: this record is the source; in: it is the target")
	dir.Enum = []any{"out", "in"}
	created := withFormat(str("when the edge was created"), "date-time")
	relID := withFormat(str("durable id of this exact edge (use it with the by-id endpoints)"), "uuid")
	b.schemas["dds.RelationshipMeta"] = val(object(openapi3.Schemas{
		"id":        val(relID),
		"type":      val(str("relationship name")),
		"direction": val(dir),
		"createdAt": val(created),
	}, "id", "type", "direction", "createdAt"))
}

func withDesc(s *openapi3.Schema, d string) *openapi3.Schema { s.Description = d; return s }

func withFormat(s *openapi3.Schema, f string) *openapi3.Schema { s.Format = f; return s }

func (b *builder) responses() openapi3.ResponseBodies {
	errResp := func(d string) *openapi3.ResponseRef {
		return &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(d).WithJSONSchemaRef(ref("dds.Error"))}
	}
	rl := errResp("Rate limit exceeded (per IP or per tenant); retry after X-RateLimit-Reset seconds.")
	intHeader := func(d string) *openapi3.HeaderRef {
		return &openapi3.HeaderRef{Value: &openapi3.Header{Parameter: openapi3.Parameter{Description: d, Schema: val(typed("integer"))}}}
	}
	rl.Value.Headers = openapi3.Headers{
		"X-RateLimit-Limit":     intHeader("maximum requests per window"),
		"X-RateLimit-Remaining": intHeader("requests left in the window"),
		"X-RateLimit-Reset":     intHeader("seconds until the window resets"),
		"Retry-After":           intHeader("seconds to wait"),
	}
	return openapi3.ResponseBodies{
		"BadRequest":    errResp("Invalid input (VALIDATION_ERROR with the fields in details, or BAD_REQUEST)."),
		"Unauthorized":  errResp("Missing, invalid, revoked or wrong-environment credential."),
		"Forbidden":     errResp("The credential lacks the scope this operation needs."),
		"NotFound":      errResp("The entity, relationship or record does not exist (or belongs to another tenant)."),
		"Conflict":      errResp("A unique field already holds this value, or the schema changed during the request."),
		"TooLarge":      errResp("The request body is too large."),
		"RateLimited":   rl,
		"InternalError": errResp("Server-side error; quote the X-Request-Id response header when reporting it."),
		"Unavailable":   errResp("A service the operation needs is not configured or not reachable (UNAVAILABLE): retry later."),
	}
}

// --- entities -------------------------------------------------------------

// ops is the operator object of one field in a filter.
func ops(f *schema.Field, system bool) *openapi3.Schema {
	props := openapi3.Schemas{"$isNull": val(withDesc(typed("boolean"), "true: the field is null; false: it is not"))}
	if f.Type == schema.Vector {
		return closed(object(props))
	}
	v := value(f)
	el := element(f)
	props["$eq"] = val(nullable(v))
	props["$neq"] = val(nullable(v))
	if f.Type != schema.JSON {
		props["$in"] = val(withDesc(array(val(el)), "matches any of the values (on lists: shares an element)"))
		props["$notIn"] = val(withDesc(array(val(el)), "matches none of the values (null included)"))
	}
	if f.Ordered() || system {
		for _, op := range []string{"$gt", "$gte", "$lt", "$lte"} {
			props[op] = val(el)
		}
	}
	switch {
	case f.List:
		props["$contains"] = val(withDesc(&openapi3.Schema{AnyOf: openapi3.SchemaRefs{val(el), val(array(val(el)))}},
			"an element, or an array of elements that must all be present"))
	case f.Type == schema.JSON:
		props["$contains"] = val(withDesc(&openapi3.Schema{}, "JSON containment (@>)"))
	case f.IsText() && !system:
		props["$contains"] = val(str("case-sensitive substring"))
	}
	if f.IsText() && !system {
		props["$startsWith"] = val(str("case-sensitive prefix (a literal, not a pattern)"))
		props["$endsWith"] = val(str("case-sensitive suffix (a literal, not a pattern)"))
	}
	return closed(object(props))
}

func filterProp(f *schema.Field, system bool) *openapi3.SchemaRef {
	if f.Type == schema.Vector {
		return val(&openapi3.Schema{AnyOf: openapi3.SchemaRefs{val(typed("null")), val(ops(f, system))}})
	}
	return val(&openapi3.Schema{AnyOf: openapi3.SchemaRefs{
		val(withDesc(nullable(value(f)), "equals (null: is null)")),
		val(ops(f, system)),
	}})
}

// sortable lists the fields a list can be ordered by.
func sortable(e *schema.Entity) []any {
	out := []any{"id", "createdAt", "updatedAt"}
	for i := range e.Fields {
		if e.Fields[i].Ordered() {
			out = append(out, e.Fields[i].Name)
		}
	}
	return out
}

func selectable(e *schema.Entity) []any {
	out := []any{"createdAt", "updatedAt"}
	for i := range e.Fields {
		out = append(out, e.Fields[i].Name)
	}
	return out
}

func vectorFields(e *schema.Entity) []*schema.Field {
	var out []*schema.Field
	for i := range e.Fields {
		if e.Fields[i].Type == schema.Vector {
			out = append(out, &e.Fields[i])
		}
	}
	return out
}

// recordSchema is the schema of an entity's record with every field (and
// its properties, which the callers extend).
func recordSchema(e *schema.Entity) (*openapi3.Schema, openapi3.Schemas) {
	props := systemFields()
	for i := range e.Fields {
		props[e.Fields[i].Name] = val(fieldSchema(&e.Fields[i]))
	}
	required := []string{"id", "createdAt", "updatedAt"}
	for i := range e.Fields {
		if e.Fields[i].Required {
			required = append(required, e.Fields[i].Name)
		}
	}
	rec := object(props, required...)
	rec.Description = fmt.Sprintf("A %s record with every field.", e.Name)
	return rec, props
}

func (b *builder) entity(e *schema.Entity) {
	n := e.Name
	b.tags = append(b.tags, &openapi3.Tag{Name: n, Description: "Records of entity " + n})

	// Record.
	rec, props := recordSchema(e)
	b.schemas[n] = val(rec)
	// Responses of operations taking `select` hold the id plus the
	// selected fields (createdAt/updatedAt only when selected), or every
	// field without a selection.
	selected := object(props, "id")
	selected.Description = fmt.Sprintf("A %s record as read with `select`: the id plus the selected fields (every field without `select`).", n)
	b.schemas[n+".Selected"] = val(selected)

	// Input (create and replace) and patch.
	in := openapi3.Schemas{}
	patch := openapi3.Schemas{}
	var required []string
	for i := range e.Fields {
		f := &e.Fields[i]
		in[f.Name] = val(fieldSchema(f))
		patch[f.Name] = val(fieldSchema(f))
		if f.Required && f.Default == nil {
			required = append(required, f.Name)
		}
	}
	input := closed(object(in, required...))
	input.Description = fmt.Sprintf("The fields of a %s. Absent fields take their default; on PUT, absent fields without a default become null. "+
		"Unknown fields are rejected.", n)
	b.schemas[n+".Input"] = val(input)
	p := closed(object(patch))
	p.Description = "Only the fields to change; null clears a field that is not required."
	b.schemas[n+".Patch"] = val(p)

	// Filter.
	fp := openapi3.Schemas{
		"$and": val(withDesc(array(ref(n+".Filter")), "every condition matches")),
		"$or":  val(withDesc(array(ref(n+".Filter")), "any condition matches")),
		"$not": ref(n + ".Filter"),
	}
	fp["id"] = filterProp(&schema.Field{Name: "id", Type: schema.File, Required: true}, true)
	fp["createdAt"] = filterProp(&schema.Field{Name: "createdAt", Type: schema.Timestamp, Required: true}, true)
	fp["updatedAt"] = filterProp(&schema.Field{Name: "updatedAt", Type: schema.Timestamp, Required: true}, true)
	for i := range e.Fields {
		fp[e.Fields[i].Name] = filterProp(&e.Fields[i], false)
	}
	filter := closed(object(fp))
	filter.Description = "A filter: field → value (equality) or operator object; several keys are ANDed."
	b.schemas[n+".Filter"] = val(filter)

	// Query body and list result.
	sel := array(val(&openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: selectable(e)}))
	sel.Description = "fields to return (the id is always returned; createdAt/updatedAt when named); default all"
	orderBy := str("field to sort by")
	orderBy.Enum = sortable(e)
	orderDir := str("")
	orderDir.Enum = []any{"ASC", "DESC"}
	orderDir.Default = "ASC"
	limit := integer("page size")
	limit.Min, limit.Max, limit.Default = fptr(1), fptr(query.MaxLimit), query.DefaultLimit
	offset := integer("records to skip")
	offset.Min, offset.Default = fptr(0), 0
	rels := b.def.RelationshipsOf(n)
	qprops := openapi3.Schemas{
		"where":          ref(n + ".Filter"),
		"search":         val(str("full-text search over the searchable fields")),
		"select":         val(sel),
		"orderBy":        val(orderBy),
		"orderDirection": val(orderDir),
		"offset":         val(offset),
		"limit":          val(limit),
		"includeCount":   val(withDesc(typed("boolean"), "also return the total number of matching records in count")),
		"distinctOn":     val(distinctOnSchema(e)),
	}
	if len(rels) > 0 {
		relNames := []any{}
		for _, r := range rels {
			relNames = append(relNames, r.Name)
		}
		rn := str("relationship name")
		rn.Enum = relNames
		dir := str("default: whichever end(s) this entity is on")
		dir.Enum = []any{"out", "in", "both"}
		qprops["traverse"] = val(withDesc(array(val(object(openapi3.Schemas{
			"relationship": val(rn),
			"direction":    val(dir),
			"select":       val(withDesc(array(val(typed("string"))), "fields of the related records")),
			"where":        val(withDesc(typed("object"), "filter on the related records' fields")),
		}, "relationship"))), "related records to nest in each item, built in the same statement"))
	}
	b.schemas[n+".Query"] = val(closed(object(qprops)))
	list := object(openapi3.Schemas{
		"items": val(array(ref(n + ".Selected"))),
		"count": val(integer("total number of matching records (with includeCount)")),
	}, "items")
	b.schemas[n+".List"] = val(list)

	// Batch bodies and result.
	b.createInput(e)
	items := array(ref(n + ".CreateInput"))
	items.MinItems, items.MaxItems = 1, uptr(MaxBatchItems)
	b.schemas[n+".BatchCreate"] = val(closed(object(openapi3.Schemas{"items": val(items)}, "items")))
	uid := withFormat(typed("string"), "uuid")
	upd := array(val(closed(object(openapi3.Schemas{"id": val(uid), "data": ref(n + ".Patch")}, "id", "data"))))
	upd.MinItems, upd.MaxItems = 1, uptr(MaxBatchItems)
	b.schemas[n+".BatchUpdate"] = val(closed(object(openapi3.Schemas{"items": val(upd)}, "items")))
	b.schemas[n+".BatchResult"] = val(withDesc(object(openapi3.Schemas{
		"successful":   val(array(ref(n))),
		"failed":       val(array(ref("dds.BatchFailure"))),
		"totalCount":   val(typed("integer")),
		"successCount": val(typed("integer")),
		"failureCount": val(typed("integer")),
		"stats":        ref("dds.BatchStats"),
	}, "successful", "failed", "totalCount", "successCount", "failureCount", "stats"),
		"The result of a batch. A batch is atomic: when any item fails validation nothing is written and every failed item is listed."))

	// Vector search.
	vfs := vectorFields(e)
	if len(vfs) > 0 {
		names := []any{}
		var dims []string
		for _, f := range vfs {
			names = append(names, f.Name)
			dims = append(dims, fmt.Sprintf("%s: %d", f.Name, f.VectorDimensions))
		}
		field := str("the VECTOR field to search")
		field.Enum = names
		vec := array(val(typed("number")))
		vec.Description = "the query vector; its length must equal the field's vectorDimensions (" + strings.Join(dims, ", ") + ")"
		vec.MinItems = 1
		topK := integer("number of matches")
		topK.Min, topK.Max, topK.Default = fptr(1), fptr(query.MaxTopK), query.DefaultTopK
		ef := integer("HNSW candidate list size for this search (topK to 1000); larger finds more of the true nearest neighbours and takes longer. Absent: the server's DDS_VECTOR_EF_SEARCH")
		ef.Min, ef.Max = fptr(1), fptr(query.MaxEfSearch)
		b.schemas[n+".VectorSearch"] = val(closed(object(openapi3.Schemas{
			"field":    val(field),
			"vector":   val(vec),
			"topK":     val(topK),
			"efSearch": val(ef),
			"where":    val(withDesc(&openapi3.Schema{AllOf: openapi3.SchemaRefs{ref(n + ".Filter")}}, "filter applied after similarity ranking")),
			"select":   val(sel),
		}, "field", "vector")))
		score := typed("number")
		score.Min, score.Max = fptr(0), fptr(1)
		score.Description = "cosine similarity; 1 is an exact match"
		b.schemas[n+".VectorMatch"] = val(object(openapi3.Schemas{"data": ref(n + ".Selected"), "score": val(score)}, "data", "score"))
	}

	b.entityPaths(e, len(vfs) > 0)
	b.lifecycle(e)
	b.fileFields(e)
}

// --- operations -----------------------------------------------------------

func errRef(name string) *openapi3.ResponseRef {
	return &openapi3.ResponseRef{Ref: "#/components/responses/" + name}
}

func jsonResp(desc string, s *openapi3.SchemaRef) *openapi3.ResponseRef {
	return &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(desc).WithJSONSchemaRef(s)}
}

func noContent(desc string) *openapi3.ResponseRef {
	return &openapi3.ResponseRef{Value: openapi3.NewResponse().WithDescription(desc)}
}

func jsonBody(desc string, s *openapi3.SchemaRef) *openapi3.RequestBodyRef {
	return &openapi3.RequestBodyRef{Value: openapi3.NewRequestBody().WithDescription(desc).WithRequired(true).WithJSONSchemaRef(s)}
}

type op struct {
	id, summary, scope string
	tag                string
	params             openapi3.Parameters
	body               *openapi3.RequestBodyRef
	ok                 map[int]*openapi3.ResponseRef
	errors             []string // response component names besides the common ones
}

var statusOf = map[string]string{
	"BadRequest": "400", "Unauthorized": "401", "Forbidden": "403", "NotFound": "404",
	"Conflict": "409", "TooLarge": "413", "RateLimited": "429", "InternalError": "500", "Unavailable": "503",
}

func (o op) build() *openapi3.Operation {
	x := openapi3.NewOperation()
	x.Responses = openapi3.NewResponsesWithCapacity(8)
	x.OperationID = o.id
	x.Summary = o.summary
	x.Description = "Requires scope `" + o.scope + "`."
	x.Tags = []string{o.tag}
	x.Parameters = o.params
	x.RequestBody = o.body
	x.Extensions = map[string]any{"x-dds-scope": o.scope}
	codes := make([]int, 0, len(o.ok))
	for c := range o.ok {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		x.Responses.Set(strconv.Itoa(c), o.ok[c])
	}
	names := append([]string{"BadRequest", "Unauthorized", "Forbidden", "NotFound", "RateLimited", "InternalError"}, o.errors...)
	for _, name := range names {
		if x.Responses.Value(statusOf[name]) == nil {
			x.Responses.Set(statusOf[name], errRef(name))
		}
	}
	return x
}

func pathParam(name, desc string) *openapi3.ParameterRef {
	p := openapi3.NewPathParameter(name).WithSchema(withFormat(typed("string"), "uuid"))
	p.Description = desc
	return &openapi3.ParameterRef{Value: p}
}

func queryParam(name, desc string, s *openapi3.Schema) *openapi3.ParameterRef {
	p := openapi3.NewQueryParameter(name).WithSchema(s)
	p.Description = desc
	return &openapi3.ParameterRef{Value: p}
}

func (b *builder) item(path string) *openapi3.PathItem {
	if it := b.paths.Value(path); it != nil {
		return it
	}
	it := &openapi3.PathItem{}
	b.paths.Set(path, it)
	return it
}

func (b *builder) entityPaths(e *schema.Entity, vector bool) {
	n := e.Name
	base := "/api/v1/dynamic/" + n
	scope := func(o string) string { return "entity:" + n + ":" + o }
	idParam := pathParam("id", "record id")
	selParam := queryParam("select", "comma-separated fields to return (the id is always returned; createdAt/updatedAt when named)", typed("string"))
	orderBy := str("")
	orderBy.Enum = sortable(e)
	dir := str("")
	dir.Enum = []any{"ASC", "DESC"}
	limit := integer("")
	limit.Min, limit.Max, limit.Default = fptr(1), fptr(query.MaxLimit), query.DefaultLimit
	offset := integer("")
	offset.Min, offset.Default = fptr(0), 0

	coll := b.item(base)
	coll.Get = op{id: "list" + n, summary: "List " + n + " records", scope: scope("read"), tag: n,
		params: openapi3.Parameters{
			queryParam("where", "JSON-encoded "+n+".Filter", typed("string")),
			queryParam("search", "full-text search over the searchable fields", typed("string")),
			selParam,
			queryParam("orderBy", "field to sort by", orderBy),
			queryParam("orderDirection", "sort direction", dir),
			queryParam("limit", "page size", limit),
			queryParam("offset", "records to skip", offset),
			queryParam("includeCount", "also return the total in count", typed("boolean")),
			queryParam("distinctOn", "comma-separated fields: the first record (in the order) of each group of equal values; they must lead orderBy", typed("string")),
		},
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("A page of records.", ref(n+".List"))}}.build()
	coll.Post = op{id: "create" + n, summary: "Create a " + n, scope: scope("create"), tag: n,
		body: jsonBody("The new record's fields (and nested writes of its relationships).", ref(n+".CreateInput")),
		ok:   map[int]*openapi3.ResponseRef{201: jsonResp("The created record.", ref(n))}, errors: []string{"Conflict", "TooLarge"}}.build()

	one := b.item(base + "/{id}")
	one.Get = op{id: "get" + n, summary: "Get a " + n, scope: scope("read"), tag: n,
		params: openapi3.Parameters{idParam, selParam},
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("The record.", ref(n+".Selected"))}}.build()
	one.Put = op{id: "replace" + n, summary: "Replace every field of a " + n, scope: scope("update"), tag: n,
		params: openapi3.Parameters{idParam}, body: jsonBody("All fields; absent fields become null or their default.", ref(n+".Input")),
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("The updated record.", ref(n))}, errors: []string{"Conflict", "TooLarge"}}.build()
	one.Patch = op{id: "update" + n, summary: "Change some fields of a " + n, scope: scope("update"), tag: n,
		params: openapi3.Parameters{idParam}, body: jsonBody("The fields to change.", ref(n+".Patch")),
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("The updated record.", ref(n))}, errors: []string{"Conflict", "TooLarge"}}.build()
	del := op{id: "delete" + n, summary: "Delete a " + n + " (and its relationship edges)", scope: scope("delete"), tag: n,
		params: openapi3.Parameters{idParam},
		ok:     map[int]*openapi3.ResponseRef{204: noContent("Deleted.")}}.build()
	del.Description += " Send no body and no Content-Type header."
	one.Delete = del

	b.item(base + "/query").Post = op{id: "query" + n, summary: "Query " + n + " records with the query DSL", scope: scope("read"), tag: n,
		body: jsonBody("The query.", ref(n+".Query")),
		ok:   map[int]*openapi3.ResponseRef{200: jsonResp("The matching records.", ref(n+".List"))}}.build()

	b.aggregatePath(e, base)

	batch := b.item(base + "/batch")
	batchFail := &openapi3.ResponseRef{Value: openapi3.NewResponse().
		WithDescription("The batch was rejected and nothing was written: the failed items are listed (or the body itself is invalid).").
		WithJSONSchema(&openapi3.Schema{AnyOf: openapi3.SchemaRefs{ref(n + ".BatchResult"), ref("dds.Error")}})}
	batch.Post = op{id: "batchCreate" + n, summary: "Create up to 1,000 " + n + " records atomically", scope: scope("create"), tag: n,
		body:   jsonBody("The records.", ref(n+".BatchCreate")),
		ok:     map[int]*openapi3.ResponseRef{201: jsonResp("Every item was created.", ref(n+".BatchResult")), 400: batchFail},
		errors: []string{"Conflict", "TooLarge"}}.build()
	batch.Patch = op{id: "batchUpdate" + n, summary: "Update up to 1,000 " + n + " records atomically", scope: scope("update"), tag: n,
		body:   jsonBody("The changes.", ref(n+".BatchUpdate")),
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("Every item was updated.", ref(n+".BatchResult")), 400: batchFail},
		errors: []string{"Conflict", "TooLarge"}}.build()
	batch.Delete = op{id: "batchDelete" + n, summary: "Delete up to 1,000 " + n + " records atomically", scope: scope("delete"), tag: n,
		body:   jsonBody("The ids.", ref("dds.BatchDelete")),
		ok:     map[int]*openapi3.ResponseRef{200: jsonResp("Every item was deleted.", ref(n+".BatchResult")), 400: batchFail},
		errors: []string{"TooLarge"}}.build()
	b.upsert(e, base, batchFail)

	if vector {
		b.item(base + "/vector-search").Post = op{id: "vectorSearch" + n, summary: "Find the " + n + " records most similar to a vector", scope: scope("read"), tag: n,
			body: jsonBody("The search.", ref(n+".VectorSearch")),
			ok:   map[int]*openapi3.ResponseRef{200: jsonResp("Matches, best first.", val(array(ref(n+".VectorMatch"))))}}.build()
	}
}

// --- relationships --------------------------------------------------------

func (b *builder) relationship(r *schema.Relationship) {
	n := r.Name
	props := openapi3.Schemas{}
	for i := range r.Properties {
		props[r.Properties[i].Name] = val(fieldSchema(&r.Properties[i]))
	}
	var req []string
	for i := range r.Properties {
		if r.Properties[i].Required && r.Properties[i].Default == nil {
			req = append(req, r.Properties[i].Name)
		}
	}
	pr := closed(object(props, req...))
	pr.Description = fmt.Sprintf("Properties of a %s edge (%s → %s).", n, r.From, r.To)
	b.schemas[n+".Properties"] = val(pr)
	target := withFormat(str("id of the "+r.To+" record"), "uuid")
	b.schemas[n+".Create"] = val(closed(object(openapi3.Schemas{"targetId": val(target), "properties": ref(n + ".Properties")}, "targetId")))
	b.schemas[n+".Update"] = val(closed(object(openapi3.Schemas{"properties": ref(n + ".Properties")}, "properties")))
	b.schemas[n+".Edge"] = val(withDesc(object(openapi3.Schemas{
		"id":         val(withFormat(str("durable id of the edge"), "uuid")),
		"type":       val(str("relationship name")),
		"sourceId":   val(withFormat(str("id of the "+r.From+" record"), "uuid")),
		"targetId":   val(withFormat(str("id of the "+r.To+" record"), "uuid")),
		"properties": ref(n + ".Properties"),
		"createdAt":  val(withFormat(typed("string"), "date-time")),
	}, "id", "type", "sourceId", "targetId", "properties", "createdAt"), fmt.Sprintf("One %s edge from a %s to a %s.", n, r.From, r.To)))
	b.schemas[n+".Edges"] = val(object(openapi3.Schemas{"items": val(array(ref(n + ".Edge")))}, "items"))

	ends := []string{r.From}
	if r.To != r.From {
		ends = append(ends, r.To)
	}
	for _, end := range ends {
		other := r.To
		if end == r.To && end != r.From {
			other = r.From
		}
		itemName := fmt.Sprintf("%s.ItemOf%s", n, end)
		b.schemas[itemName] = val(withDesc(&openapi3.Schema{AllOf: openapi3.SchemaRefs{ref(other + ".Selected"), val(object(openapi3.Schemas{
			"_relationship": ref("dds.RelationshipMeta"),
			"properties":    ref(n + ".Properties"),
		}, "_relationship", "properties"))}}, fmt.Sprintf("A record at the far end of a %s edge of a %s, with the edge's metadata and properties.", n, end)))
		b.schemas[fmt.Sprintf("%s.ListOf%s", n, end)] = val(object(openapi3.Schemas{"items": val(array(ref(itemName)))}, "items"))
		b.relationshipPaths(r, end, other)
	}
}

func (b *builder) relationshipPaths(r *schema.Relationship, end, other string) {
	n := r.Name
	base := fmt.Sprintf("/api/v1/dynamic/%s/{id}/relationships/%s", end, n)
	scope := func(o string) string { return "relationship:" + n + ":" + o }
	idParam := pathParam("id", "id of the "+end+" record")
	var dirs []any
	def := "both"
	switch {
	case r.From == r.To:
		dirs = []any{"out", "in", "both"}
	case end == r.From:
		dirs, def = []any{"out", "both"}, "out"
	default:
		dirs, def = []any{"in", "both"}, "in"
	}
	dir := str("")
	dir.Enum, dir.Default = dirs, def
	orderBy := str("")
	if oe, ok := b.def.Entity(other); ok {
		orderBy.Enum = sortable(oe)
	}
	od := str("")
	od.Enum = []any{"ASC", "DESC"}
	limit := integer("")
	limit.Min, limit.Max, limit.Default = fptr(1), fptr(query.MaxLimit), query.DefaultLimit
	offset := integer("")
	offset.Min, offset.Default = fptr(0), 0
	tag := end
	coll := b.item(base)
	coll.Get = op{id: fmt.Sprintf("list%s%sRelationships", end, n), summary: fmt.Sprintf("List the %s edges of a %s with the %s records they reach", n, end, other),
		scope: scope("read"), tag: tag,
		params: openapi3.Parameters{idParam,
			queryParam("direction", "which edges to follow", dir),
			queryParam("limit", "maximum edges to return", limit),
			queryParam("offset", "edges to skip", offset),
			queryParam("where", "JSON-encoded "+other+".Filter on the far records' fields", typed("string")),
			queryParam("edgeWhere", "JSON-encoded filter on the edge properties", typed("string")),
			queryParam("orderBy", "field of the far records to sort by (default: edge creation order)", orderBy),
			queryParam("orderDirection", "sort direction", od),
			queryParam("select", "comma-separated fields of the far records to return", typed("string")),
		},
		ok: map[int]*openapi3.ResponseRef{200: jsonResp("The edges.", ref(fmt.Sprintf("%s.ListOf%s", n, end)))}}.build()
	relParam := pathParam("relationshipId", "durable id of the edge")
	byID := b.item(base + "/by-id/{relationshipId}")
	byID.Patch = op{id: fmt.Sprintf("update%s%sRelationshipById", end, n), summary: fmt.Sprintf("Change the properties of one exact %s edge of a %s", n, end),
		scope: scope("update"), tag: tag, params: openapi3.Parameters{idParam, relParam},
		body: jsonBody("The new properties (null removes one).", ref(n+".Update")),
		ok:   map[int]*openapi3.ResponseRef{200: jsonResp("The updated edge.", ref(n+".Edge"))}}.build()
	byID.Delete = op{id: fmt.Sprintf("delete%s%sRelationshipById", end, n), summary: fmt.Sprintf("Remove one exact %s edge of a %s", n, end),
		scope: scope("delete"), tag: tag, params: openapi3.Parameters{idParam, relParam},
		ok: map[int]*openapi3.ResponseRef{204: noContent("Removed.")}}.build()
	if end != r.From {
		return // edges are created, and changed by target, from their source
	}
	targetParam := pathParam("targetId", "id of the "+r.To+" record")
	coll.Post = op{id: fmt.Sprintf("create%s%sRelationship", end, n), summary: fmt.Sprintf("Link a %s to a %s with a %s edge", r.From, r.To, n),
		scope: scope("create"), tag: tag, params: openapi3.Parameters{idParam},
		body: jsonBody("The target and the edge's properties.", ref(n+".Create")),
		ok:   map[int]*openapi3.ResponseRef{201: jsonResp("The created edge.", ref(n+".Edge"))}}.build()
	byTarget := b.item(base + "/{targetId}")
	byTarget.Patch = op{id: fmt.Sprintf("update%s%sRelationship", end, n), summary: fmt.Sprintf("Change the properties of the %s edges between a %s and a %s", n, r.From, r.To),
		scope: scope("update"), tag: tag, params: openapi3.Parameters{idParam, targetParam},
		body: jsonBody("The new properties (null removes one).", ref(n+".Update")),
		ok:   map[int]*openapi3.ResponseRef{200: jsonResp("Every updated edge.", ref(n+".Edges"))}}.build()
	byTarget.Delete = op{id: fmt.Sprintf("delete%s%sRelationship", end, n), summary: fmt.Sprintf("Remove the %s edges between a %s and a %s", n, r.From, r.To),
		scope: scope("delete"), tag: tag, params: openapi3.Parameters{idParam, targetParam},
		ok: map[int]*openapi3.ResponseRef{204: noContent("Removed.")}}.build()
}

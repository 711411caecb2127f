// Package model is the GraphQL view of a tenant's schema version as one
// credential may see it: the generated names, the SDL, the library's schema
// document and introspection data, the index of types and fields the
// limits and the executor read, and what each generated root field,
// relationship field and where-predicate means. A model is built once per
// schema version and visibility (ModelFor) and immutable after.
package model

import (
	"fmt"
	"sort"
	"strings"

	"github.com/wundergraph/graphql-go-tools/v2/pkg/ast"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astparser"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/asttransform"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/astvalidation"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/introspection"
	"github.com/wundergraph/graphql-go-tools/v2/pkg/operationreport"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// RootKind says what a root field does.
type RootKind int

const (
	KindList RootKind = iota
	KindOne
	KindCount
	KindConnection
	KindVectorSearch
	KindCreate
	KindUpdate
	KindDelete
	KindBatchCreate
	KindBatchUpdate
	KindBatchDelete
	KindRelCreate
	KindRelUpdate
	KindRelDelete
	KindNone // noQueriesAvailable: a credential that may read nothing
	KindCreated
	KindUpdated
	KindDeleted
	KindRelCreated
	KindRelUpdated
	KindRelDeleted
	KindChanged   // <singular>Changed: every change of an entity, with its cursor
	KindRestore   // restore<E>: an entity with softDelete
	KindAggregate // <plural>Aggregate (aggregate.go)
	KindUpsert
	KindBatchUpsert
	KindHistory // <one>History: an entity with history (history.go)
)

// RootField is the meaning of one Query/Mutation/Subscription field.
type RootField struct {
	Kind   RootKind
	Entity *schema.Entity
	Rel    *schema.Relationship
}

// RelField is a relationship field of an entity type.
type RelField struct {
	Rel    *schema.Relationship
	Dir    query.Direction
	Target *schema.Entity
	Conn   bool // <field>Connection: edges with properties
	Agg    bool // <field>Aggregate: aggregates over the related records
}

// Model is the GraphQL view of one schema version as one credential may
// see it: the SDL, the library's schema document (the SDL merged with the
// base schema), its introspection data, and what each generated field
// means. A Model is immutable once built; its identity identifies it (the
// prepared-operation cache keys on it, weakly).
type Model struct {
	Def *schema.Definition
	SDL string

	// doc is graphql-go-tools' schema document that operations are
	// normalized and validated against (read only once built).
	doc *ast.Document
	// intro is the library's introspection data of doc.
	intro *introspection.Schema
	// types indexes the object and input types' fields (limits, execution).
	types map[string]*typeInfo
	// Root type names ("" when the credential has no such operation).
	queryType, mutationType, subscriptionType string

	roots map[string]RootField
	// rels[entity][field] are the relationship fields of an entity type;
	// preds[entity][name] the <field>_some/_none/_every where-predicates.
	rels  map[string]map[string]RelField
	preds map[string]map[string]RelPred
	// objects maps an object type name to the entity it renders.
	objects map[string]*schema.Entity
	// files[entity][field] names the FILE field whose metadata the object
	// field <field>File: File renders.
	files map[string]map[string]string
}

// RelPred is a relationship where-predicate: <field>_some, _none or
// _every over the related records.
type RelPred struct {
	Rel        *schema.Relationship
	Dir        query.Direction
	Target     *schema.Entity
	Quantifier query.Quantifier
}

// Build generates the model of def. An error means the schema cannot be
// exposed over GraphQL (a generated name collides); it is reported as a
// VALIDATION_ERROR naming the collision.
func Build(def *schema.Definition) (*Model, error) { return build(def, nil) }

// Allows reports whether a credential may do op ("read", "create",
// "update", "delete") on the entity or relationship name.
type Allows func(kind, name, op string) bool

// build generates the model of what allow lets a credential see (nil: all
// of def). An entity is shown when any operation on it is allowed, each
// root field only with its operation's scope, a relationship field (and
// its where-predicates) only with read on the relationship and on the
// entity at its far end, an edge mutation only with the relationship's
// scope for it.
func build(def *schema.Definition, allow Allows) (*Model, error) { return buildView(def, allow, nil) }

// Fields reports which fields of an entity a credential's roles let it
// read and write (docs/auth.md, "A schema per role"). id, createdAt and
// updatedAt are always readable.
type Fields interface {
	Readable(entity, field string) bool
	Writable(entity, field string) bool
}

// buildView is build showing, besides, only the fields fields lets the
// credential read (object, where, aggregate and group types) and write
// (create, update and nested create inputs); nil: every field. fields is
// read only while building: the model holds no reference to it.
func buildView(def *schema.Definition, allow Allows, fields Fields) (*Model, error) {
	g := &gen{n: newNamer(), def: def, allow: allow, fields: fields, defined: map[string]bool{}, m: &Model{
		Def: def, roots: map[string]RootField{}, rels: map[string]map[string]RelField{},
		preds: map[string]map[string]RelPred{}, objects: map[string]*schema.Entity{},
		files: map[string]map[string]string{},
	}}
	sdl, err := g.sdl()
	if err != nil {
		return nil, err
	}
	g.m.SDL = sdl
	if err := g.m.load(); err != nil {
		return nil, apperr.New(apperr.Validation, "the schema cannot be exposed over GraphQL: %s", err.Error())
	}
	return g.m, nil
}

// load parses the SDL into the library's schema document, merges the base
// schema (built-in scalars, directives, introspection types and the
// __schema/__type fields) and builds the introspection data and the index.
func (m *Model) load() error {
	doc, rep := astparser.ParseGraphqlDocumentString(m.SDL)
	if rep.HasErrors() {
		return rep
	}
	if err := asttransform.MergeDefinitionWithBaseSchemaWithInternal(&doc, false); err != nil {
		return err
	}
	// The base schema declares @defer, which the executor does not
	// implement: it is dropped so introspection, validation and the SDL
	// agree (a document using @defer is refused as an unknown directive).
	for _, n := range doc.RootNodes {
		if n.Kind == ast.NodeKindDirectiveDefinition && doc.DirectiveDefinitionNameString(n.Ref) == "defer" {
			doc.RemoveRootNode(n)
			doc.Index.RemoveNodeByName([]byte("defer"))
			break
		}
	}
	var vr operationreport.Report
	astvalidation.DefaultDefinitionValidator().Validate(&doc, &vr)
	if vr.HasErrors() {
		return vr
	}
	var data introspection.Data
	introspection.NewGenerator().Generate(&doc, &vr, &data)
	if vr.HasErrors() {
		return vr
	}
	intro, err := introspectionTypes()
	if err != nil {
		return err
	}
	for _, t := range intro {
		data.Schema.AddType(t)
	}
	m.doc, m.intro = &doc, &data.Schema
	m.index()
	return nil
}

type gen struct {
	allow   Allows
	fields  Fields // nil: every field (buildView)
	n       namer
	def     *schema.Definition
	m       *Model
	b       strings.Builder
	defined map[string]bool
	errs    []string
	query   []string
	mut     []string
	sub     []string
}

func (g *gen) can(kind, name, op string) bool { return g.allow == nil || g.allow(kind, name, op) }

// readable and writable report whether field f of entity e is shown in
// output and input types.
func (g *gen) readable(e *schema.Entity, f *schema.Field) bool {
	return g.fields == nil || g.fields.Readable(e.Name, f.Name)
}

func (g *gen) writable(e *schema.Entity, f *schema.Field) bool {
	return g.fields == nil || g.fields.Writable(e.Name, f.Name)
}

// visible reports whether anything of entity or relationship name is shown.
func (g *gen) visible(kind, name string) bool {
	for _, op := range []string{"read", "create", "update", "delete"} {
		if g.can(kind, name, op) {
			return true
		}
	}
	return false
}

func (g *gen) define(name string) {
	if g.defined[name] {
		g.errs = append(g.errs, fmt.Sprintf("type %s is generated twice (rename an entity, field, or relationship)", name))
	}
	g.defined[name] = true
}

func (g *gen) root(list *[]string, name string, rf RootField, decl string) {
	if _, dup := g.m.roots[name]; dup {
		g.errs = append(g.errs, fmt.Sprintf("root field %s is generated twice", name))
	}
	g.m.roots[name] = rf
	*list = append(*list, "  "+name+decl)
}

func (g *gen) typ(kind, name, desc string, lines []string) {
	g.define(name)
	if desc != "" {
		fmt.Fprintf(&g.b, "%q\n", desc)
	}
	fmt.Fprintf(&g.b, "%s %s {\n%s\n}\n\n", kind, name, strings.Join(lines, "\n"))
}

// Shared types every generated schema has.
const prelude = `"An ISO 8601 timestamp, e.g. 2024-01-31T12:00:00Z."
scalar DateTime

"A calendar date, YYYY-MM-DD."
scalar Date

"Any JSON value."
scalar JSON

enum SortDirection {
  ASC
  DESC
}

type PageInfo {
  hasNextPage: Boolean!
  hasPreviousPage: Boolean!
  startCursor: String
  endCursor: String
}

"One item of a batch that was not processed."
type BatchFailure {
  index: Int!
  item: JSON
  error: BatchError!
}

type BatchError {
  code: String!
  message: String!
  field: String
}

"A deleted relationship edge."
type DeletedRelationship {
  id: ID!
  from: ID!
  to: ID!
}

`

// fileType is the metadata of a confirmed file, the type of the
// <field>File fields; generated when some entity has a FILE field.
var fileType = []string{"  id: ID!", "  fileName: String!", "  mimeType: String!", "  sizeBytes: Int!",
	"  \"When the upload was confirmed.\"", "  createdAt: DateTime"}

var sharedTypes = []string{"DateTime", "Date", "JSON", "SortDirection", "PageInfo", "BatchFailure", "BatchError", "DeletedRelationship"}

// Filter input types per scalar. Keys are the GraphQL element type.
var scalarFilters = []struct{ name, elem, ops string }{
	{"StringFilter", "String", "cmp str"},
	{"IntFilter", "Int", "cmp"},
	{"FloatFilter", "Float", "cmp"},
	{"BooleanFilter", "Boolean", "eq"},
	{"DateTimeFilter", "DateTime", "cmp"},
	{"DateFilter", "Date", "cmp"},
	{"IDFilter", "ID", "in"},
	{"JSONFilter", "JSON", "json"},
}

var listFilters = []struct{ name, elem string }{
	{"StringListFilter", "String"}, {"IntListFilter", "Int"}, {"FloatListFilter", "Float"},
	{"BooleanListFilter", "Boolean"}, {"DateTimeListFilter", "DateTime"}, {"DateListFilter", "Date"},
}

// filterLines renders the operators of a filter over elem. ops: "eq" =
// equals/not; "in" adds in/notIn; "cmp" adds lt..gte; "str" adds the
// string matches.
func filterLines(elem, ops string) []string {
	var l []string
	if ops == "json" {
		return []string{"  \"JSON containment (@>): the value contains this JSON.\"", "  contains: JSON", "  isNull: Boolean"}
	}
	if elem != "" {
		l = append(l, "  equals: "+elem, "  not: "+elem)
		if ops != "eq" {
			l = append(l, "  in: ["+elem+"!]", "  notIn: ["+elem+"!]")
		}
		if strings.Contains(ops, "cmp") {
			l = append(l, "  lt: "+elem, "  lte: "+elem, "  gt: "+elem, "  gte: "+elem)
		}
		if strings.Contains(ops, "str") {
			l = append(l, "  contains: "+elem, "  startsWith: "+elem, "  endsWith: "+elem)
		}
	}
	return append(l, "  isNull: Boolean")
}

func (g *gen) sdl() (string, error) {
	g.b.WriteString(prelude)
	for _, t := range sharedTypes {
		g.define(t)
	}
	for _, f := range scalarFilters {
		g.typ("input", f.name, "", filterLines(f.elem, f.ops))
	}
	for _, f := range listFilters {
		g.typ("input", f.name, "", []string{"  \"The list contains this element.\"", "  contains: " + f.elem, "  isNull: Boolean"})
	}
	for i := range g.def.Entities {
		if len(g.def.Entities[i].FileFields()) > 0 && g.visible("entity", g.def.Entities[i].Name) {
			g.typ("type", "File", "Metadata of a confirmed file held by a FILE field.", fileType)
			break
		}
	}
	// Relationship fields per entity, in schema order.
	relsOf := map[string][]RelField{}
	relNamesOf := map[string][]string{}
	for i := range g.def.Relationships {
		r := &g.def.Relationships[i]
		from, _ := g.def.Entity(r.From)
		to, _ := g.def.Entity(r.To)
		if from == nil || to == nil {
			continue
		}
		readable := g.can("relationship", r.Name, "read")
		if r.FromField != "" && readable && g.visible("entity", r.From) && g.can("entity", r.To, "read") {
			relsOf[r.From] = append(relsOf[r.From], RelField{Rel: r, Dir: query.DirOut, Target: to})
			relNamesOf[r.From] = append(relNamesOf[r.From], r.FromField)
		}
		if r.ToField != "" && readable && g.visible("entity", r.To) && g.can("entity", r.From, "read") {
			relsOf[r.To] = append(relsOf[r.To], RelField{Rel: r, Dir: query.DirIn, Target: from})
			relNamesOf[r.To] = append(relNamesOf[r.To], r.ToField)
		}
	}
	for i := range g.def.Entities {
		e := &g.def.Entities[i]
		if g.visible("entity", e.Name) {
			g.entity(e, relsOf[e.Name], relNamesOf[e.Name])
		}
	}
	for i := range g.def.Relationships {
		r := &g.def.Relationships[i]
		if g.visible("relationship", r.Name) && g.visible("entity", r.From) && g.visible("entity", r.To) {
			g.relationship(r)
		}
	}
	if len(g.query) == 0 { // a schema needs a query type with a field
		g.root(&g.query, "noQueriesAvailable", RootField{Kind: KindNone}, ": Boolean")
		g.query[0] = "  \"Always null: this credential may read nothing.\"\n" + g.query[0]
	}
	g.typ("type", "Query", "", g.query)
	if len(g.mut) > 0 {
		g.typ("type", "Mutation", "", g.mut)
	}
	if len(g.sub) > 0 {
		g.typ("type", "Subscription", "Entity events, streamed over graphql-transport-ws at /api/v1/dynamic-gql/ws.", g.sub)
	}
	if len(g.errs) > 0 {
		sort.Strings(g.errs)
		return "", apperr.New(apperr.Validation, "the schema cannot be exposed over GraphQL: %s", strings.Join(g.errs, "; "))
	}
	return g.b.String(), nil
}

// outType is the GraphQL output type of a field (required → non-null).
func outType(owner string, f *schema.Field) string {
	t := elemType(owner, f)
	if f.List {
		t = "[" + t + "!]"
	}
	if f.Required {
		t += "!"
	}
	return t
}

func elemType(owner string, f *schema.Field) string {
	switch f.Type {
	case schema.String, schema.Text:
		return "String"
	case schema.Integer:
		return "Int"
	case schema.Number:
		return "Float"
	case schema.Boolean:
		return "Boolean"
	case schema.Timestamp:
		return "DateTime"
	case schema.Date:
		return "Date"
	case schema.JSON:
		return "JSON"
	case schema.Enum:
		return enumType(owner, f)
	case schema.File:
		return "ID"
	case schema.Vector:
		return "[Float!]"
	}
	return "JSON"
}

// inType is the input type; nonNull marks a required create input.
func inType(owner string, f *schema.Field, nonNull bool) string {
	t := elemType(owner, f)
	if f.List {
		t = "[" + t + "!]"
	}
	if nonNull {
		t += "!"
	}
	return t
}

// filterType is the where-filter input of a field ("" = not filterable).
func filterType(owner string, f *schema.Field) string {
	if f.Type == schema.Vector {
		return ""
	}
	if f.Type == schema.Enum {
		if f.List {
			return enumType(owner, f) + "ListFilter"
		}
		return enumType(owner, f) + "Filter"
	}
	if f.List {
		return elemType(owner, f) + "ListFilter"
	}
	switch f.Type {
	case schema.File:
		return "IDFilter"
	case schema.JSON:
		return "JSONFilter"
	}
	return elemType(owner, f) + "Filter"
}

func (g *gen) enums(owner string, fields []schema.Field) {
	for i := range fields {
		f := &fields[i]
		if f.Type != schema.Enum {
			continue
		}
		name := enumType(owner, f)
		var vals []string
		for _, v := range f.Values {
			if v == "true" || v == "false" || v == "null" {
				g.errs = append(g.errs, fmt.Sprintf("%s.%s: %q cannot be a GraphQL enum value", owner, f.Name, v))
			}
			vals = append(vals, "  "+v)
		}
		g.typ("enum", name, "", vals)
		g.typ("input", name+"Filter", "", filterLines(name, "in"))
		g.typ("input", name+"ListFilter", "", []string{"  contains: " + name, "  isNull: Boolean"})
	}
}

func (g *gen) entity(e *schema.Entity, rels []RelField, relNames []string) {
	n := g.n.entity(e)
	g.m.objects[n.Type] = e
	g.m.rels[e.Name] = map[string]RelField{}
	g.m.preds[e.Name] = map[string]RelPred{}
	g.m.files[e.Name] = map[string]string{}
	g.enums(e.Name, e.Fields)

	fieldNames := map[string]bool{"id": true, "createdAt": true, "updatedAt": true}
	claim := func(name string) {
		if fieldNames[name] {
			g.errs = append(g.errs, fmt.Sprintf("%s.%s is generated twice", e.Name, name))
		}
		fieldNames[name] = true
	}
	obj := []string{"  id: ID!", "  createdAt: DateTime!", "  updatedAt: DateTime!"}
	if e.SoftDelete {
		claim(schema.ColDeletedAt)
		obj = append(obj, "  \"When the record was deleted (softDelete); null while it is live.\"\n  deletedAt: DateTime")
	}
	for i := range e.Fields {
		f := &e.Fields[i]
		claim(f.Name)
		if g.readable(e, f) {
			obj = append(obj, "  "+f.Name+": "+outType(e.Name, f))
		}
	}
	for i := range e.Fields {
		f := &e.Fields[i]
		if f.Type != schema.File || !g.readable(e, f) {
			continue
		}
		fn := f.Name + "File"
		claim(fn)
		g.m.files[e.Name][fn] = f.Name
		obj = append(obj, fmt.Sprintf("  %q\n  %s: File", "The metadata of the file "+f.Name+" holds; null when it is null or not a confirmed file.", fn))
	}
	for i, rf := range rels {
		name := relNames[i]
		tn := g.n.entity(rf.Target)
		claim(name)
		g.m.rels[e.Name][name] = rf
		obj = append(obj, fmt.Sprintf("  %s(where: %s, limit: Int, offset: Int, orderBy: [%s!]): [%s!]!", name, tn.Where, tn.OrderBy, tn.Type))
		an := name + "Aggregate"
		claim(an)
		ag := rf
		ag.Agg = true
		g.m.rels[e.Name][an] = ag
		obj = append(obj, fmt.Sprintf("  %s(where: %s): %s!", an, tn.Where, g.relatedAggregate(rf.Target)))
		if len(rf.Rel.Properties) > 0 {
			cn := name + "Connection"
			claim(cn)
			c := rf
			c.Conn = true
			g.m.rels[e.Name][cn] = c
			rn := g.n.relationship(rf.Rel)
			connT, edgeT := RelConnTypes(e.Name, name)
			obj = append(obj, fmt.Sprintf("  %s(nodeWhere: %s, edgeWhere: %s, limit: Int, offset: Int, orderBy: [%s!]): %s!", cn, tn.Where, rn.PropsWhere, tn.OrderBy, connT))
			g.typ("type", connT, "", []string{"  edges: [" + edgeT + "!]!"})
			g.typ("type", edgeT, fmt.Sprintf("An edge of %s with its properties and the related %s.", rf.Rel.Name, rf.Target.Name),
				[]string{"  id: ID!", "  createdAt: DateTime!", "  properties: " + rn.Properties + "!", "  node: " + tn.Type + "!"})
		}
	}
	g.typ("type", n.Type, "", obj)

	// where
	where := []string{"  id: IDFilter", "  createdAt: DateTimeFilter", "  updatedAt: DateTimeFilter"}
	if e.SoftDelete {
		where = append(where, "  deletedAt: DateTimeFilter")
	}
	for i := range e.Fields {
		if !g.readable(e, &e.Fields[i]) {
			continue
		}
		if ft := filterType(e.Name, &e.Fields[i]); ft != "" {
			where = append(where, "  "+e.Fields[i].Name+": "+ft)
		}
	}
	for i, rf := range rels {
		tn := g.n.entity(rf.Target)
		for _, q := range []query.Quantifier{query.Some, query.None, query.Every} {
			pn := relNames[i] + "_" + string(q)
			claim(pn)
			g.m.preds[e.Name][pn] = RelPred{Rel: rf.Rel, Dir: rf.Dir, Target: rf.Target, Quantifier: q}
			where = append(where, "  "+pn+": "+tn.Where)
		}
	}
	where = append(where, "  AND: ["+n.Where+"!]", "  OR: ["+n.Where+"!]", "  NOT: "+n.Where)
	g.typ("input", n.Where, "", where)
	g.typ("input", n.OrderBy, "", []string{"  \"A field of " + e.Name + " (id, createdAt, updatedAt or a sortable field).\"", "  field: String!", "  direction: SortDirection = ASC"})

	var create, update []string
	for i := range e.Fields {
		f := &e.Fields[i]
		if !g.writable(e, f) {
			continue
		}
		create = append(create, "  "+f.Name+": "+inType(e.Name, f, f.Required && f.Default == nil))
		update = append(update, "  "+f.Name+": "+inType(e.Name, f, false))
	}
	create = append(create, g.nestedInputs(e)...)
	// A role whose write list names no field of e has nothing to send: an
	// input type needs a member, so its creates and updates are not shown
	// (writing any field would be refused).
	canCreate, canUpdate := len(create) > 0, len(update) > 0
	if g.fields != nil {
		// Under field lists an input the credential cannot use is left out
		// too: it would name fields (writable, perhaps not readable) of an
		// entity it may only read. (Without field lists the inputs stay,
		// as they always were, so such schemas do not change.)
		canCreate = canCreate && g.can("entity", e.Name, "create")
		canUpdate = canUpdate && g.can("entity", e.Name, "update")
	}
	if canCreate {
		g.typ("input", n.CreateInput, "", create)
	}
	if canUpdate {
		g.typ("input", n.UpdateInput, "Only the fields present change; null clears a field.", update)
		g.typ("input", n.BatchUpdateInput, "", []string{"  id: ID!", "  data: " + n.UpdateInput + "!"})
	}
	g.typ("type", n.Connection, "", []string{"  edges: [" + n.Edge + "!]!", "  pageInfo: PageInfo!", "  totalCount: Int!"})
	g.typ("type", n.Edge, "", []string{"  cursor: String!", "  node: " + n.Type + "!"})
	g.typ("type", n.BatchResult, "", []string{"  successful: [" + n.Type + "!]!", "  failed: [BatchFailure!]!",
		"  totalCount: Int!", "  successCount: Int!", "  failureCount: Int!"})

	rf := RootField{Entity: e}
	page := fmt.Sprintf("where: %s, search: String, limit: Int, offset: Int, orderBy: [%s!], distinctOn: [String!]", n.Where, n.OrderBy)
	if g.hasVector(e) {
		g.typ("input", n.VectorInput, "", []string{"  \"A VECTOR field of " + e.Name + ".\"", "  field: String!", "  vector: [Float!]!",
			"  \"1 to 100.\"", "  topK: Int = 10",
			"  \"HNSW candidate list size for this search, topK to 1000 (default: the server's).\"", "  efSearch: Int",
			"  where: " + n.Where})
		g.typ("type", n.VectorResult, "", []string{"  \"Cosine similarity, 1 = exact match.\"", "  score: Float!", "  data: " + n.Type + "!"})
	}
	if g.can("entity", e.Name, "read") {
		g.readRoots(e, n, rf, page)
	}
	for _, m := range []struct {
		op, name string
		kind     RootKind
		decl     string
	}{
		{"create", n.Create, KindCreate, "(input: " + n.CreateInput + "!): " + n.Type + "!"},
		{"update", n.Update, KindUpdate, "(id: ID!, input: " + n.UpdateInput + "!): " + n.Type + "!"},
		{"delete", n.Delete, KindDelete, "(id: ID!): " + n.Type + "!"},
		{"create", n.BatchCreate, KindBatchCreate, "(input: [" + n.CreateInput + "!]!): " + n.BatchResult + "!"},
		{"update", n.BatchUpdate, KindBatchUpdate, "(input: [" + n.BatchUpdateInput + "!]!): " + n.BatchResult + "!"},
		{"delete", n.BatchDelete, KindBatchDelete, "(ids: [ID!]!): " + n.BatchResult + "!"},
	} {
		if g.can("entity", e.Name, m.op) && (m.op != "create" || canCreate) && (m.op != "update" || canUpdate) {
			g.root(&g.mut, m.name, with(rf, m.kind), m.decl)
		}
	}
	if e.SoftDelete && g.can("entity", e.Name, "delete") {
		g.root(&g.mut, "restore"+n.Type, with(rf, KindRestore), "(id: ID!): "+n.Type+"!")
	}
	if canCreate && canUpdate {
		g.writeRoots(e, n, rf)
	}
}

// readRoots are the queries and subscriptions of an entity (its read scope).
func (g *gen) readRoots(e *schema.Entity, n entityNames, rf RootField, page string) {
	// withDeleted: soft-deleted records shown, to a credential that may
	// delete them (the argument exists only for it).
	wd := ""
	if e.SoftDelete && g.can("entity", e.Name, "delete") {
		wd = ", withDeleted: Boolean"
	}
	g.root(&g.query, n.List, with(rf, KindList), "("+page+wd+"): ["+n.Type+"!]!")
	g.root(&g.query, n.One, with(rf, KindOne), "(id: ID!"+wd+"): "+n.Type)
	g.root(&g.query, n.Count, with(rf, KindCount), fmt.Sprintf("(where: %s, search: String%s): Int!", n.Where, wd))
	g.root(&g.query, n.ConnectionField, with(rf, KindConnection),
		fmt.Sprintf("(first: Int, after: String, last: Int, before: String, where: %s, search: String, orderBy: [%s!]%s): %s!", n.Where, n.OrderBy, wd, n.Connection))
	if g.hasVector(e) {
		g.root(&g.query, n.VectorSearch, with(rf, KindVectorSearch), "(input: "+n.VectorInput+"!): ["+n.VectorResult+"!]!")
	}
	g.aggregateRoot(e, n, rf)
	g.historyRoot(e, n, rf)
	// after: resume after an event's cursor (frames carry it in
	// extensions.cursor; <singular>Changed carries it as a field).
	g.root(&g.sub, n.Created, with(rf, KindCreated), "(where: "+n.Where+", after: String): "+n.Type+"!")
	g.root(&g.sub, n.Updated, with(rf, KindUpdated), "(where: "+n.Where+", after: String): "+n.Type+"!")
	g.root(&g.sub, n.Deleted, with(rf, KindDeleted), "(where: "+n.Where+", after: String): "+n.Type+"!")
	if !g.defined[changeTypeEnum] {
		g.typ("enum", changeTypeEnum, "What a change did to a record.", []string{"  CREATED", "  UPDATED", "  DELETED"})
	}
	g.typ("type", n.Change, "One change of a "+e.Name+": its type, its cursor (resume after it with after:), the record as written (null when a relationship selection finds it deleted since) and, on updates and deletes, the record before it (null when no longer kept).",
		[]string{"  type: " + changeTypeEnum + "!", "  cursor: String!", "  record: " + n.Type, "  previous: " + n.Type})
	g.root(&g.sub, n.Changed, with(rf, KindChanged), "(where: "+n.Where+", after: String, types: ["+changeTypeEnum+"!]): "+n.Change+"!")
}

// changeTypeEnum is the enum of <singular>Changed's type and types.
const changeTypeEnum = "ChangeType"

func with(rf RootField, k RootKind) RootField { rf.Kind = k; return rf }

// hasVector reports whether e has a VECTOR field the credential may read
// (search by it).
func (g *gen) hasVector(e *schema.Entity) bool {
	for i := range e.Fields {
		if e.Fields[i].Type == schema.Vector && g.readable(e, &e.Fields[i]) {
			return true
		}
	}
	return false
}

func (g *gen) relationship(r *schema.Relationship) {
	rn := g.n.relationship(r)
	g.enums(rn.Properties, r.Properties)
	props := []string{}
	where := []string{}
	input := []string{}
	for i := range r.Properties {
		f := &r.Properties[i]
		props = append(props, "  "+f.Name+": "+outType(rn.Properties, f))
		if ft := filterType(rn.Properties, f); ft != "" {
			where = append(where, "  "+f.Name+": "+ft)
		}
		input = append(input, "  "+f.Name+": "+inType(rn.Properties, f, false))
	}
	rf := RootField{Rel: r}
	edgeFields := []string{"  id: ID!", "  from: ID!", "  to: ID!", "  createdAt: DateTime!"}
	createArgs := "(from: ID!, to: ID!)"
	if len(r.Properties) > 0 {
		g.typ("type", rn.Properties, "", props)
		where = append(where, "  AND: ["+rn.PropsWhere+"!]", "  OR: ["+rn.PropsWhere+"!]", "  NOT: "+rn.PropsWhere)
		g.typ("input", rn.PropsWhere, "", where)
		g.typ("input", rn.PropsInput, "", input)
		edgeFields = append(edgeFields, "  properties: "+rn.Properties+"!")
		createArgs = "(from: ID!, to: ID!, properties: " + rn.PropsInput + ")"
	}
	g.typ("type", rn.Edge, fmt.Sprintf("An edge of %s from a %s to a %s.", r.Name, r.From, r.To), edgeFields)
	if g.can("relationship", r.Name, "create") {
		g.root(&g.mut, rn.Create, with(rf, KindRelCreate), createArgs+": "+rn.Edge+"!")
	}
	if len(r.Properties) > 0 && g.can("relationship", r.Name, "update") {
		g.root(&g.mut, rn.UpdateByID, with(rf, KindRelUpdate), "(id: ID!, properties: "+rn.PropsInput+"!): "+rn.Edge+"!")
	}
	if g.can("relationship", r.Name, "delete") {
		g.root(&g.mut, rn.DeleteByID, with(rf, KindRelDelete), "(id: ID!): DeletedRelationship!")
	}
	if g.can("relationship", r.Name, "read") {
		stem := lowerFirst(strings.TrimPrefix(rn.Create, "create"))
		g.root(&g.sub, stem+"Created", with(rf, KindRelCreated), "(after: String): "+rn.Edge+"!")
		g.root(&g.sub, stem+"Updated", with(rf, KindRelUpdated), "(after: String): "+rn.Edge+"!")
		g.root(&g.sub, stem+"Deleted", with(rf, KindRelDeleted), "(after: String): "+rn.Edge+"!")
	}
}

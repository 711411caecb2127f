// Package schema owns the tenant schema model: entities, typed fields and
// relationships; their validation; the mapping of each field type to a
// Postgres column; and the DDL that creates and evolves a schema's tables.
//
// Every SQL identifier DDS ever emits comes from a value that passed
// Validate, and is quoted with Ident.
package schema

import (
	"regexp"
	"strings"
)

// FieldType is the kind of a field.
type FieldType string

// Field types.
const (
	String    FieldType = "STRING"
	Text      FieldType = "TEXT"
	Integer   FieldType = "INTEGER"
	Number    FieldType = "NUMBER"
	Boolean   FieldType = "BOOLEAN"
	Timestamp FieldType = "TIMESTAMP"
	Date      FieldType = "DATE"
	JSON      FieldType = "JSON"
	Enum      FieldType = "ENUM"
	File      FieldType = "FILE"
	Vector    FieldType = "VECTOR"
)

// FieldTypes lists every field type, in documentation order.
var FieldTypes = []FieldType{String, Text, Integer, Number, Boolean, Timestamp, Date, JSON, Enum, File, Vector}

// Limits.
const (
	MaxVectorDimensions = 16000
	// MaxHNSWDimensions is pgvector's limit for an HNSW index on vector;
	// larger VECTOR fields are searched exactly (sequential scan).
	MaxHNSWDimensions = 2000
	MaxEntities       = 200
	MaxFields         = 400
)

// Definition is a whole schema as the tenant writes it (the JSON body of
// POST /api/v1/schemas).
type Definition struct {
	Name          string         `json:"name"`
	Entities      []Entity       `json:"entities"`
	Relationships []Relationship `json:"relationships,omitempty"`
}

// Entity is one record type; it becomes one table.
type Entity struct {
	Name   string  `json:"name"`
	Fields []Field `json:"fields"`
	// SoftDelete makes a delete set the system field deletedAt instead of
	// removing the row; reads hide such rows (docs/schemas.md, Soft delete).
	SoftDelete bool `json:"softDelete,omitempty"`
	// History keeps every version of every record in the Postgres
	// schema's history table (HistoryTable), written by a trigger in the
	// write's own transaction (docs/schemas.md, History).
	History bool `json:"history,omitempty"`
}

// Field is one typed attribute; it becomes one column.
type Field struct {
	Name             string    `json:"name"`
	Type             FieldType `json:"type"`
	Required         bool      `json:"required,omitempty"`
	Unique           bool      `json:"unique,omitempty"`
	Searchable       bool      `json:"searchable,omitempty"`
	Indexed          bool      `json:"indexed,omitempty"`
	List             bool      `json:"list,omitempty"`
	Default          any       `json:"default,omitempty"`
	Values           []string  `json:"values,omitempty"`
	VectorDimensions int       `json:"vectorDimensions,omitempty"`
	MaxLength        int       `json:"maxLength,omitempty"`
}

// Relationship is a typed, directed edge between two entities; it becomes one
// table (id, source_id, target_id, properties, created_at).
type Relationship struct {
	Name       string  `json:"name"`
	From       string  `json:"from"`
	To         string  `json:"to"`
	FromField  string  `json:"fromField,omitempty"` // field on From listing targets (GraphQL)
	ToField    string  `json:"toField,omitempty"`   // field on To listing sources (GraphQL)
	Properties []Field `json:"properties,omitempty"`
}

// System columns present on every entity table.
const (
	ColID        = "id"
	ColCreatedAt = "createdAt"
	ColUpdatedAt = "updatedAt"
	// ColSearch is the generated tsvector over searchable fields. It starts
	// with an underscore, which no user field name may.
	ColSearch = "_search"
	// ColDeletedAt is the system column of entities with SoftDelete: null
	// while the record is live, the time of its delete afterwards.
	ColDeletedAt = "deletedAt"
	// HistoryTable is the one table per Postgres schema holding the
	// versions of the records of entities with History. It starts with an
	// underscore, which no entity or relationship name may, so it never
	// collides with a user table.
	HistoryTable = "_history"
)

// Reserved field names (case-insensitive).
var reserved = map[string]bool{"id": true, "createdat": true, "updatedat": true}

// IsReserved reports whether name is a system field name.
func IsReserved(name string) bool { return reserved[strings.ToLower(name)] }

var (
	identRe  = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,62}$`)
	entityRe = regexp.MustCompile(`^[A-Z][A-Za-z0-9_]{0,62}$`)
)

// ValidIdent reports whether s may be used as a name (and so an identifier).
func ValidIdent(s string) bool { return identRe.MatchString(s) }

// Ident quotes a validated identifier for SQL. It panics on a name that did
// not pass validation: reaching it with one is a programming error. It is
// on every request's path, so it checks bytes rather than running identRe.
func Ident(name string) string {
	if !isIdent(name) && name != ColSearch && name != HistoryTable {
		panic("schema.Ident: unvalidated identifier " + name)
	}
	return `"` + name + `"`
}

// isIdent is identRe.MatchString without the regexp engine.
func isIdent(s string) bool {
	if len(s) == 0 || len(s) > 63 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		digit := c >= '0' && c <= '9'
		if !letter && (i == 0 || !digit && c != '_') {
			return false
		}
	}
	return true
}

// QualifiedIdent quotes schema.table.
func QualifiedIdent(pgSchema, table string) string { return Ident(pgSchema) + "." + Ident(table) }

// Entity returns the named entity (exact, case-sensitive match).
func (d *Definition) Entity(name string) (*Entity, bool) {
	for i := range d.Entities {
		if d.Entities[i].Name == name {
			return &d.Entities[i], true
		}
	}
	return nil, false
}

// Relationship returns the named relationship (exact match).
func (d *Definition) Relationship(name string) (*Relationship, bool) {
	for i := range d.Relationships {
		if d.Relationships[i].Name == name {
			return &d.Relationships[i], true
		}
	}
	return nil, false
}

// RelationshipsOf lists relationships touching entity (as From or To).
func (d *Definition) RelationshipsOf(entity string) []*Relationship {
	var out []*Relationship
	for i := range d.Relationships {
		r := &d.Relationships[i]
		if r.From == entity || r.To == entity {
			out = append(out, r)
		}
	}
	return out
}

// Field returns the named user field.
func (e *Entity) Field(name string) (*Field, bool) {
	for i := range e.Fields {
		if e.Fields[i].Name == name {
			return &e.Fields[i], true
		}
	}
	return nil, false
}

// SearchableFields lists the fields in the generated tsvector.
func (e *Entity) SearchableFields() []*Field {
	var out []*Field
	for i := range e.Fields {
		if e.Fields[i].Searchable {
			out = append(out, &e.Fields[i])
		}
	}
	return out
}

// FileFields lists the names of the entity's FILE fields.
func (e *Entity) FileFields() []string {
	var out []string
	for i := range e.Fields {
		if e.Fields[i].Type == File {
			out = append(out, e.Fields[i].Name)
		}
	}
	return out
}

// Property returns the named relationship property.
func (r *Relationship) Property(name string) (*Field, bool) {
	for i := range r.Properties {
		if r.Properties[i].Name == name {
			return &r.Properties[i], true
		}
	}
	return nil, false
}

// RelTable is the table name of a relationship: its name with a "rel_"
// prefix would overflow 63 characters, so relationship tables share the
// entity namespace and Validate refuses a relationship named like an entity.
func RelTable(r *Relationship) string { return r.Name }

// IsText reports whether values of the field's scalar type are strings.
func (f *Field) IsText() bool {
	switch f.Type {
	case String, Text, Enum:
		return true
	}
	return false
}

// Ordered reports whether values can be compared with < and >.
func (f *Field) Ordered() bool {
	switch f.Type {
	case String, Text, Enum, Integer, Number, Timestamp, Date:
		return !f.List
	}
	return false
}

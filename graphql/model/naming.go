package model

import (
	"strings"
	"unicode"

	"github.com/gertd/go-pluralize"

	"github.com/dds-project/dds/schema"
)

// namer derives GraphQL names from schema names. The rules are documented
// in docs/graphql.md; change them only together with that document and the
// golden SDL.
type namer struct{ pl *pluralize.Client }

func newNamer() namer { return namer{pl: pluralize.NewClient()} }

// lowerFirst lower-cases the leading run of capitals that forms the first
// word: "Product" → "product", "URLLink" → "urlLink", "ID" → "id".
func lowerFirst(s string) string {
	r := []rune(s)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	switch {
	case n == 0:
		return s
	case n == 1 || n == len(r):
		n = min(n, len(r))
	default:
		n-- // "URLLink": keep the L that starts "Link"
	}
	for i := 0; i < n; i++ {
		r[i] = unicode.ToLower(r[i])
	}
	return string(r)
}

// upperFirst capitalises the first letter: "groups" → "Groups".
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// pascal turns a relationship name into PascalCase: "MEMBER_OF" →
// "MemberOf", "IN_CATEGORY" → "InCategory", "follows" → "Follows",
// "hasTag" → "HasTag". Parts separated by underscores are capitalised; a
// part written entirely in capitals is lower-cased first.
func pascal(s string) string {
	var b strings.Builder
	for _, part := range strings.Split(s, "_") {
		if part == "" {
			continue
		}
		if strings.ToUpper(part) == part {
			part = strings.ToLower(part)
		}
		b.WriteString(upperFirst(part))
	}
	return b.String()
}

// plural pluralises the last word of a PascalCase entity name with the
// inflection library: "Product" → "Products", "ProductCategory" →
// "ProductCategories", "Person" → "People".
func (n namer) plural(entity string) string {
	r := []rune(entity)
	cut := 0
	for i := len(r) - 1; i > 0; i-- {
		if unicode.IsUpper(r[i]) && !unicode.IsUpper(r[i-1]) {
			cut = i
			break
		}
	}
	head, last := string(r[:cut]), string(r[cut:])
	return head + n.pl.Plural(last)
}

// entityNames are the GraphQL names generated for one entity.
type entityNames struct {
	Type, Where, OrderBy, CreateInput, UpdateInput, BatchUpdateInput string
	Connection, Edge, BatchResult, VectorInput, VectorResult         string
	One, List, Count, ConnectionField, VectorSearch                  string
	Create, Update, Delete, BatchCreate, BatchUpdate, BatchDelete    string
	Created, Updated, Deleted                                        string
	Changed, Change                                                  string
}

func (n namer) entity(e *schema.Entity) entityNames {
	one := lowerFirst(e.Name)
	list := lowerFirst(n.plural(e.Name))
	if list == one { // uncountable ("News", "Equipment")
		list = one + "List"
	}
	return entityNames{
		Type: e.Name, Where: e.Name + "Where", OrderBy: e.Name + "OrderBy",
		CreateInput: e.Name + "CreateInput", UpdateInput: e.Name + "UpdateInput", BatchUpdateInput: e.Name + "BatchUpdateInput",
		Connection: e.Name + "Connection", Edge: e.Name + "Edge", BatchResult: e.Name + "BatchResult",
		VectorInput: e.Name + "VectorSearchInput", VectorResult: e.Name + "VectorSearchResult",
		One: one, List: list, Count: list + "Count", ConnectionField: list + "Connection",
		VectorSearch: one + "VectorSearch",
		Create:       "create" + e.Name, Update: "update" + e.Name, Delete: "delete" + e.Name,
		BatchCreate: "batchCreate" + e.Name, BatchUpdate: "batchUpdate" + e.Name, BatchDelete: "batchDelete" + e.Name,
		Created: one + "Created", Updated: one + "Updated", Deleted: one + "Deleted",
		Changed: one + "Changed", Change: e.Name + "Change",
	}
}

// enumType names the GraphQL enum of an ENUM field: Product.status →
// ProductStatus.
func enumType(owner string, f *schema.Field) string { return owner + upperFirst(f.Name) }

// relNames are the GraphQL names generated for one relationship.
type relNames struct {
	Pascal     string // MEMBER_OF → MemberOf
	Edge       string // MemberOfRelationship: {id, from, to, createdAt, properties}
	Properties string // MemberOfProperties
	PropsWhere string // MemberOfPropertiesWhere
	PropsInput string // MemberOfPropertiesInput
	Create     string // createUserGroupsMemberOfRelationship
	UpdateByID string // updateUserGroupsMemberOfRelationshipById
	DeleteByID string // deleteUserGroupsMemberOfRelationshipById
}

func (n namer) relationship(r *schema.Relationship) relNames {
	p := pascal(r.Name)
	stem := r.From + upperFirst(r.FromField) + p // FromField may be empty
	return relNames{
		Pascal: p, Edge: p + "Relationship", Properties: p + "Properties",
		PropsWhere: p + "PropertiesWhere", PropsInput: p + "PropertiesInput",
		Create:     "create" + stem + "Relationship",
		UpdateByID: "update" + stem + "RelationshipById",
		DeleteByID: "delete" + stem + "RelationshipById",
	}
}

// RelConnTypes names the connection and edge types of a relationship field
// with properties: User.groupsConnection → UserGroupsRelationshipConnection
// with edges of UserGroupsRelationshipEdge.
func RelConnTypes(owner, field string) (conn, edge string) {
	stem := owner + upperFirst(field) + "Relationship"
	return stem + "Connection", stem + "Edge"
}

// EdgeType names the GraphQL type of an edge of rel, as its mutations and
// events return it: MEMBER_OF → MemberOfRelationship.
func EdgeType(rel *schema.Relationship) string { return newNamer().relationship(rel).Edge }

// PropertiesType names the GraphQL type of the properties of an edge of
// rel: MEMBER_OF → MemberOfProperties.
func PropertiesType(rel *schema.Relationship) string {
	return newNamer().relationship(rel).Properties
}

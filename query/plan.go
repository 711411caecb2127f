// Package query is the one query compiler of DDS. It turns a typed plan (a
// filter tree, full-text search, selection with nested relationships, order,
// paging, count) into a single parameterised SQL statement whose JSON result
// is built by Postgres. REST lists and queries, traversals, relationship
// lists, vector search, GraphQL and subscription filters all compile here, so
// filter semantics are defined and tested once. It knows nothing of HTTP.
package query

// Op is a comparison operator of a condition.
type Op string

// Operators. REST spells them $eq..., GraphQL equals...; both map here.
const (
	Eq         Op = "eq"
	Neq        Op = "neq"
	Gt         Op = "gt"
	Gte        Op = "gte"
	Lt         Op = "lt"
	Lte        Op = "lte"
	In         Op = "in"
	NotIn      Op = "notIn"
	IsNull     Op = "isNull"
	Contains   Op = "contains"
	StartsWith Op = "startsWith"
	EndsWith   Op = "endsWith"
)

// Filter is a node of a filter tree: And, Or, Not, Cond or Related.
type Filter interface{ isFilter() }

// And matches when every term matches (an empty And matches everything).
type And []Filter

// Or matches when any term matches (an empty Or matches nothing).
type Or []Filter

// Not negates its term.
type Not struct{ Term Filter }

// Cond compares one field (a user field, or id/createdAt/updatedAt) with a
// value decoded from JSON with UseNumber.
type Cond struct {
	Field string
	Op    Op
	Value any
}

// Direction of a relationship traversal relative to the current entity.
type Direction string

// Directions.
const (
	DirOut  Direction = "out"  // current entity is the source
	DirIn   Direction = "in"   // current entity is the target
	DirBoth Direction = "both" // either
)

// Quantifier of a relationship predicate.
type Quantifier string

// Quantifiers (GraphQL _some, _none, _every).
const (
	Some  Quantifier = "some"
	None  Quantifier = "none"
	Every Quantifier = "every"
)

// Related matches records by their related records: at least one (Some), no
// (None) or every (Every) related node over Relationship matches Where.
type Related struct {
	Relationship string
	Direction    Direction
	Quantifier   Quantifier
	Where        Filter // on the related node's fields; nil = any
}

func (And) isFilter()     {}
func (Or) isFilter()      {}
func (Not) isFilter()     {}
func (Cond) isFilter()    {}
func (Related) isFilter() {}

// Order is one sort key.
type Order struct {
	Field string
	Desc  bool
}

// Selection says which fields of a record to return, and which related
// records to nest under which keys.
type Selection struct {
	Fields []string // nil means every field (system fields always included)
	Nested []Nested
	// Files adds the metadata of the files FILE fields hold (see FileMeta).
	Files []FileMeta
	// Aggregates adds aggregates over each record's related records (see
	// RelAggregate).
	Aggregates []RelAggregate
	// TenantID scopes Files to one tenant's files (dds.files.tenant_id).
	// It is required when any selection of a plan has Files; a nested
	// selection may leave it empty (the plan's tenant is used) but may not
	// name another tenant.
	TenantID string
	// Output, when set, is the record's JSON exactly: these members, in
	// this order, and no others (the id is not added). A selection with
	// Output takes no Files, and its Nested selections and Aggregates are
	// written where Output names them (each exactly once, never with
	// Edges).
	Output []Member
}

// Member is one member of a record's JSON in Selection.Output: a column of
// the record (Field), a constant string (Const, when Field is "" and
// Nested and Aggregate 0), a nested selection or a relationship aggregate.
type Member struct {
	Key       string
	Field     string // a field, "id", "createdAt" or "updatedAt"
	Const     string
	Nested    int // 1 + the index in Selection.Nested; 0 for none
	Aggregate int // 1 + the index in Selection.Aggregates; 0 for none
}

// FileMeta selects the metadata of the file held by FILE field Field, as
// the member Key ("" means Field + "File") of the record:
//
//	{"id", "fileName", "mimeType", "sizeBytes", "createdAt"}
//
// or null when the field is null or holds no confirmed file of the
// selection's tenant. It compiles to a correlated scalar subquery on
// dds.files in the record's select list: same statement, no query per row.
type FileMeta struct {
	Field string
	Key   string
}

// Nested is a relationship selection: related records nested under Key of
// each parent, built in the same statement with a lateral join.
type Nested struct {
	Key          string
	Relationship string
	Direction    Direction
	Select       Selection
	Where        Filter // on related node fields
	EdgeWhere    Filter // on relationship properties
	OrderBy      []Order
	Limit        int // 0 means the default
	Offset       int
	// Edges renders each item as the related node's selected fields plus
	// two extra members (REST relationship lists, GraphQL connections):
	//   "_relationship": {"id", "type", "direction" ("out"|"in"), "createdAt"}
	//   "properties":    the edge's properties object
	// A node field named "properties" is shadowed by the edge's properties.
	Edges bool
}

// List is a plan over one entity's records.
type List struct {
	Entity       string
	Where        Filter
	Search       string
	Select       Selection
	OrderBy      []Order
	Limit        int // 0 means DefaultLimit
	Offset       int
	IncludeCount bool
	// Seek restricts the page to rows after (or before) a cursor: keyset
	// pagination over OrderBy plus id (GraphQL connections). Offset is
	// applied after the seek.
	Seek *Seek
	// DistinctOn keeps the first record (in OrderBy) of each group of
	// records with equal values of these fields; they must lead OrderBy,
	// which defaults to them (see distinctOn). Not with Seek.
	DistinctOn []string
}

// Seek is a decoded cursor: the values of the List's order keys followed by
// the id, in the order Keys(OrderBy) returns. Backward selects the rows
// before the cursor (last/before); the items still come back in OrderBy
// order.
type Seek struct {
	Values   []any
	Backward bool
}

// VectorSearch is a similarity search over a VECTOR field (HNSW cosine).
// Where is applied after ranking: the statement uses pgvector's iterative
// index scan so that topK matches are returned whenever that many exist.
type VectorSearch struct {
	Entity string
	Field  string
	Vector []any // JSON numbers (UseNumber) or float64s
	TopK   int   // 0 means DefaultTopK
	// EfSearch is the request's own HNSW candidate list size (topK to
	// MaxEfSearch); 0 means the connections' (see Compiler.WithVectorEfSearch).
	EfSearch int
	Where    Filter
	Select   Selection
}

// Vector search limits (docs/rest.md, Vector search).
const (
	DefaultTopK = 10
	MaxTopK     = 100
)

// Paging limits.
const (
	DefaultLimit = 50
	MaxLimit     = 1000
)

// Statement is compiled SQL with its bind arguments. It returns exactly one
// row with one JSON column.
type Statement struct {
	SQL  string
	Args []any
	// Setup lists statements (SET LOCAL ...) to run first in the same
	// transaction; empty for most plans.
	Setup []string
	// Budgeted marks lists, counts and aggregates: statements whose cost
	// grows with the table, which records checks against its row budget.
	Budgeted bool
}

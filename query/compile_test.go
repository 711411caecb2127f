package query

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/schema"
)

var update = flag.Bool("update", false, "rewrite golden files")

// testDef is the schema every compiler test runs against.
func testDef() *schema.Definition {
	return &schema.Definition{
		Name: "shop",
		Entities: []schema.Entity{
			{Name: "Product", Fields: []schema.Field{
				{Name: "name", Type: schema.String, Required: true, Searchable: true, Indexed: true},
				{Name: "body", Type: schema.Text, Searchable: true},
				{Name: "price", Type: schema.Number},
				{Name: "stock", Type: schema.Integer},
				{Name: "active", Type: schema.Boolean},
				{Name: "tags", Type: schema.String, List: true},
				{Name: "sizes", Type: schema.Integer, List: true},
				{Name: "releasedAt", Type: schema.Timestamp},
				{Name: "day", Type: schema.Date},
				{Name: "attributes", Type: schema.JSON},
				{Name: "status", Type: schema.Enum, Values: []string{"draft", "live"}},
				{Name: "manual", Type: schema.File},
				{Name: "embedding", Type: schema.Vector, VectorDimensions: 3},
				{Name: "code", Type: schema.String, MaxLength: 5},
			}},
			{Name: "Category", Fields: []schema.Field{
				{Name: "title", Type: schema.String, Required: true},
				{Name: "rank", Type: schema.Integer},
			}},
		},
		Relationships: []schema.Relationship{
			{Name: "IN_CATEGORY", From: "Product", To: "Category", Properties: []schema.Field{
				{Name: "position", Type: schema.Integer},
				{Name: "note", Type: schema.String},
				{Name: "since", Type: schema.Timestamp},
				{Name: "labels", Type: schema.String, List: true},
				{Name: "meta", Type: schema.JSON},
			}},
			{Name: "SIMILAR", From: "Product", To: "Product"},
		},
	}
}

func testCompiler(t *testing.T) *Compiler {
	t.Helper()
	d := testDef()
	if err := schema.Validate(d); err != nil {
		t.Fatalf("test schema invalid: %v", err)
	}
	return New(d, "s_test")
}

// where parses a JSON filter (UseNumber) for tests.
func where(t *testing.T, s string) Filter {
	t.Helper()
	f, err := ParseWhereJSON(s, "where")
	if err != nil {
		t.Fatalf("parse %s: %v", s, err)
	}
	return f
}

func golden(t *testing.T, name string, st Statement) {
	t.Helper()
	args, err := json.Marshal(st.Args)
	if err != nil {
		t.Fatal(err)
	}
	got := st.SQL + "\n-- args: " + string(args) + "\n"
	if len(st.Setup) > 0 {
		got = strings.Join(st.Setup, ";\n") + ";\n" + got
	}
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("missing golden file (run go test ./query -update): %v", err)
	}
	if string(want) != got {
		t.Errorf("%s: compiled SQL differs from golden file\n--- got\n%s--- want\n%s", name, got, want)
	}
}

// TestOperatorMatrix compiles each operator on each field type it supports
// and checks the SQL against golden files.
func TestOperatorMatrix(t *testing.T) {
	c := testCompiler(t)
	cases := []struct{ name, where string }{
		{"eq_string", `{"name": {"$eq": "Desk"}}`},
		{"eq_shorthand", `{"name": "Desk"}`},
		{"eq_null", `{"price": null}`},
		{"neq_string", `{"name": {"$neq": "Desk"}}`},
		{"neq_null", `{"price": {"$neq": null}}`},
		{"eq_integer", `{"stock": 5}`},
		{"eq_boolean", `{"active": true}`},
		{"eq_enum", `{"status": "live"}`},
		{"eq_json", `{"attributes": {"$eq": {"color": "red"}}}`},
		{"eq_list", `{"tags": {"$eq": ["a", "b"]}}`},
		{"eq_file", `{"manual": "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}`},
		{"eq_id", `{"id": "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}`},
		{"eq_date", `{"day": "2024-02-29"}`},
		{"gt_number", `{"price": {"$gt": 9.5}}`},
		{"gte_integer", `{"stock": {"$gte": 3}}`},
		{"lt_timestamp", `{"releasedAt": {"$lt": "2024-01-31T12:00:00+02:00"}}`},
		{"lte_date", `{"day": {"$lte": "2024-03-01"}}`},
		{"gt_created", `{"createdAt": {"$gt": "2024-01-01"}}`},
		{"gt_string", `{"name": {"$gt": "M"}}`},
		{"range", `{"price": {"$gte": 10, "$lt": 20}}`},
		{"in_string", `{"name": {"$in": ["a", "b"]}}`},
		{"in_integer", `{"stock": {"$in": [1, 2, 3]}}`},
		{"in_timestamp", `{"releasedAt": {"$in": ["2024-01-01T00:00:00Z"]}}`},
		{"in_list", `{"tags": {"$in": ["x", "y"]}}`},
		{"notin_enum", `{"status": {"$notIn": ["draft"]}}`},
		{"notin_list", `{"sizes": {"$notIn": [40]}}`},
		{"isnull_true", `{"releasedAt": {"$isNull": true}}`},
		{"isnull_false", `{"embedding": {"$isNull": false}}`},
		{"contains_string", `{"name": {"$contains": "50%_off\\"}}`},
		{"contains_text", `{"body": {"$contains": "wood"}}`},
		{"contains_list_element", `{"tags": {"$contains": "sale"}}`},
		{"contains_list_all", `{"sizes": {"$contains": [40, 42]}}`},
		{"contains_json", `{"attributes": {"$contains": {"color": "red"}}}`},
		{"startswith", `{"name": {"$startsWith": "a_b%"}}`},
		{"endswith", `{"name": {"$endsWith": "%"}}`},
		{"startswith_list", `{"tags": {"$startsWith": "new"}}`},
		{"and_or", `{"$or": [{"name": "a"}, {"$and": [{"stock": {"$gt": 1}}, {"active": false}]}]}`},
		{"not", `{"$not": {"active": true}}`},
		{"empty_or", `{"$or": []}`},
		{"injection_value", `{"name": "x'; DROP TABLE \"Product\"; --"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := c.List(List{Entity: "Product", Where: where(t, tc.where), Select: Selection{Fields: []string{"name"}}})
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			if strings.Contains(st.SQL, "DROP") || strings.Contains(st.SQL, "50%") {
				t.Fatalf("a value reached the SQL text: %s", st.SQL)
			}
			golden(t, "op_"+tc.name, st)
		})
	}
}

// TestPlans covers search, select, order, paging, count, traversals,
// relationship predicates, keyset seeks, relationship lists and vector
// search.
func TestPlans(t *testing.T) {
	c := testCompiler(t)
	cases := []struct {
		name string
		st   func() (Statement, error)
	}{
		{"list_default", func() (Statement, error) { return c.List(List{Entity: "Product"}) }},
		{"list_search_count", func() (Statement, error) {
			return c.List(List{Entity: "Product", Search: "oak desk", IncludeCount: true, Limit: 5, Offset: 10})
		}},
		{"list_order", func() (Statement, error) {
			return c.List(List{Entity: "Product", OrderBy: []Order{{Field: "price", Desc: true}, {Field: "name"}}})
		}},
		{"list_traverse", func() (Statement, error) {
			return c.List(List{Entity: "Product", Select: Selection{Fields: []string{"name"}, Nested: []Nested{{
				Relationship: "IN_CATEGORY", Direction: DirOut, Select: Selection{Fields: []string{"title"}},
				Where: where(t, `{"rank": {"$lt": 3}}`), EdgeWhere: where(t, `{"position": {"$gte": 1}}`), Limit: 5,
				OrderBy: []Order{{Field: "title"}},
			}}}})
		}},
		{"list_output", func() (Statement, error) { // members as given: keys, order, constants, nested lists
			return c.List(List{Entity: "Product", Limit: 20, Select: Selection{
				Output: []Member{{Key: "__typename", Const: "Product"}, {Key: "n", Field: "name"}, {Key: "cats", Nested: 1},
					{Key: "id", Field: "id"}, {Key: "v", Field: "embedding"}, {Key: "again", Field: "name"}, {Key: "when", Field: "createdAt"}},
				Nested: []Nested{{Key: "_n1", Relationship: "IN_CATEGORY", Direction: DirOut, Limit: 10,
					Select: Selection{Output: []Member{{Key: "title", Field: "title"}, {Key: "it's", Const: "Cat'egory"}}}}},
			}})
		}},
		{"list_output_flat", func() (Statement, error) { // GraphQL's flat list: the response's members, the filter's values bound, LIMIT written
			return c.List(List{Entity: "Product", Where: where(t, `{"price": {"$gte": 48}}`), OrderBy: []Order{{Field: "createdAt", Desc: true}}, Limit: 20, Offset: 40,
				Select: Selection{Output: []Member{{Key: "__typename", Const: "Product"}, {Key: "id", Field: "id"}, {Key: "a", Field: "name"},
					{Key: "b", Field: "name"}, {Key: "price", Field: "price"}, {Key: "tags", Field: "tags"}, {Key: "v", Field: "embedding"}, {Key: "createdAt", Field: "createdAt"}}}})
		}},
		{"list_traverse_both_edges", func() (Statement, error) {
			return c.List(List{Entity: "Product", Select: Selection{Fields: []string{"name"}, Nested: []Nested{{
				Key: "similar", Relationship: "SIMILAR", Direction: DirBoth, Edges: true, Select: Selection{Fields: []string{"name"}},
			}}}})
		}},
		{"list_related_some", func() (Statement, error) {
			return c.List(List{Entity: "Product", Where: Related{Relationship: "IN_CATEGORY", Quantifier: Some, Where: where(t, `{"title": "Chairs"}`)}})
		}},
		{"list_related_every", func() (Statement, error) {
			return c.List(List{Entity: "Category", Where: Related{Relationship: "IN_CATEGORY", Quantifier: Every, Where: where(t, `{"active": true}`)}})
		}},
		// A direction the entity is not on matches nothing (no error).
		{"list_traverse_wrong_direction", func() (Statement, error) {
			return c.List(List{Entity: "Product", Select: Selection{Nested: []Nested{{Relationship: "IN_CATEGORY", Direction: DirIn}}}})
		}},
		{"list_related_wrong_direction", func() (Statement, error) {
			return c.List(List{Entity: "Category", Where: Related{Relationship: "IN_CATEGORY", Direction: DirOut, Where: where(t, `{"active": true}`)}})
		}},
		{"list_seek", func() (Statement, error) {
			return c.List(List{Entity: "Product", OrderBy: []Order{{Field: "price"}}, Limit: 10,
				Seek: &Seek{Values: []any{json.Number("9.5"), "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}}})
		}},
		{"list_seek_backward_null", func() (Statement, error) {
			return c.List(List{Entity: "Product", OrderBy: []Order{{Field: "price", Desc: true}}, Limit: 10,
				Seek: &Seek{Values: []any{nil, "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}, Backward: true}})
		}},
		// The tie-breaking id follows the last key, so one direction is an
		// index order (read backwards here) and its seek a row comparison.
		{"list_newest_first", func() (Statement, error) {
			return c.List(List{Entity: "Product", OrderBy: []Order{{Field: "createdAt", Desc: true}}, Limit: 20})
		}},
		{"list_seek_newest_first", func() (Statement, error) {
			return c.List(List{Entity: "Product", OrderBy: []Order{{Field: "createdAt", Desc: true}}, Limit: 20,
				Seek: &Seek{Values: []any{"2024-01-01T00:00:00Z", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}}})
		}},
		{"list_seek_newest_first_backward_filtered", func() (Statement, error) {
			return c.List(List{Entity: "Product", Where: where(t, `{"price": {"$gte": 10}}`), OrderBy: []Order{{Field: "createdAt", Desc: true}}, Limit: 20,
				Seek: &Seek{Values: []any{"2024-01-01T00:00:00Z", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}, Backward: true}})
		}},
		// Mixed directions (and a nullable key) keep the expanded form.
		{"list_seek_mixed", func() (Statement, error) {
			return c.List(List{Entity: "Product", OrderBy: []Order{{Field: "createdAt", Desc: true}, {Field: "name"}}, Limit: 20,
				Seek: &Seek{Values: []any{"2024-01-01T00:00:00Z", "Desk", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"}}})
		}},
		{"get_nested", func() (Statement, error) {
			return c.Get("Product", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", Selection{Nested: []Nested{{Relationship: "IN_CATEGORY"}}})
		}},
		{"get_output", func() (Statement, error) { // GraphQL's get of a flat selection: the response's object, only the id bound
			return c.Get("Product", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", Selection{Output: []Member{{Key: "__typename", Const: "Product"},
				{Key: "a", Field: "name"}, {Key: "b", Field: "name"}, {Key: "v", Field: "embedding"}, {Key: "updatedAt", Field: "updatedAt"}, {Key: "key", Field: "id"}}})
		}},
		{"list_files", func() (Statement, error) {
			return c.List(List{Entity: "Product", Select: Selection{
				Fields: []string{"name"}, Files: []FileMeta{{Field: "manual", Key: "m"}}, TenantID: "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5c",
				Nested: []Nested{{Key: "similar", Relationship: "SIMILAR", Direction: DirOut, Select: Selection{Fields: []string{}, Files: []FileMeta{{Field: "manual"}}}}},
			}})
		}},
		{"relationship_list", func() (Statement, error) {
			return c.RelationshipList("Product", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", Nested{
				Relationship: "IN_CATEGORY", Direction: DirOut, Limit: 20,
				EdgeWhere: where(t, `{"since": {"$gt": "2024-01-01T00:00:00Z"}, "labels": {"$contains": "x"}, "meta": {"$contains": {"a": 1}}}`)})
		}},
		{"count", func() (Statement, error) { return c.Count("Product", where(t, `{"stock": {"$gt": 0}}`), "desk") }},
		{"vector_plain", func() (Statement, error) {
			return c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 0.0, 0.5}})
		}},
		{"vector", func() (Statement, error) {
			return c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{json.Number("1"), json.Number("0"), json.Number("0.5")},
				TopK: 5, Where: where(t, `{"active": true}`), Select: Selection{Fields: []string{"name"}}})
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.st()
			if err != nil {
				t.Fatalf("compile: %v", err)
			}
			golden(t, "plan_"+tc.name, st)
		})
	}
}

// TestRejected checks that bad plans are VALIDATION_ERRORs naming the field
// (or NOT_FOUND for unknown entities/relationships), before any SQL.
func TestRejected(t *testing.T) {
	c := testCompiler(t)
	cases := []struct {
		name, where string
		field       string // expected details[0].field
	}{
		{"unknown field", `{"nope": 1}`, "where.nope"},
		{"injection in field name", `{"name\" = '' OR 1=1 --": "x"}`, `where.name" = '' OR 1=1 --`},
		{"injection via quote", `{"price\"; DROP TABLE x; --": {"$gt": 1}}`, `where.price"; DROP TABLE x; --`},
		{"unknown operator", `{"name": {"$like": "a%"}}`, "where.name"},
		{"mixed operator and key", `{"name": {"$eq": "a", "b": 1}}`, "where.name"},
		{"unknown logical", `{"$nor": []}`, "where.$nor"},
		{"gt on boolean", `{"active": {"$gt": true}}`, "where.active"},
		{"gt on json", `{"attributes": {"$gt": 1}}`, "where.attributes"},
		{"gt on list", `{"tags": {"$gt": "a"}}`, "where.tags"},
		{"contains on integer", `{"stock": {"$contains": 1}}`, "where.stock"},
		{"startswith on number", `{"price": {"$startsWith": "1"}}`, "where.price"},
		{"startswith on id", `{"id": {"$startsWith": "0190"}}`, "where.id"},
		{"eq on vector", `{"embedding": {"$eq": [1, 2, 3]}}`, "where.embedding"},
		{"string for integer", `{"stock": "5"}`, "where.stock"},
		{"fraction for integer", `{"stock": {"$gt": 1.5}}`, "where.stock"},
		{"bad timestamp", `{"releasedAt": {"$gt": "yesterday"}}`, "where.releasedAt"},
		{"bad enum", `{"status": "archived"}`, "where.status"},
		{"in not array", `{"stock": {"$in": 5}}`, "where.stock"},
		{"in bad element", `{"stock": {"$in": [1, "x"]}}`, "where.stock"},
		{"isNull not bool", `{"price": {"$isNull": "yes"}}`, "where.price"},
		{"gt null", `{"price": {"$gt": null}}`, "where.price"},
		{"bad id", `{"id": "not-a-uuid"}`, "where.id"},
		{"eq list scalar", `{"tags": {"$eq": "a"}}`, "where.tags"},
		{"or not array", `{"$or": {"name": "a"}}`, "where.$or"},
		{"nested path", `{"$or": [{"name": "a"}, {"bogus": 1}]}`, "where.bogus"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseWhereJSON(tc.where, "where")
			if err == nil {
				_, err = c.List(List{Entity: "Product", Where: f})
			}
			assertField(t, err, tc.field)
		})
	}
	other := []struct {
		name  string
		err   func() error
		field string
	}{
		{"select unknown", func() error {
			_, err := c.List(List{Entity: "Product", Select: Selection{Fields: []string{"x"}}})
			return err
		}, "select"},
		{"order unknown", func() error { _, err := c.List(List{Entity: "Product", OrderBy: []Order{{Field: "x"}}}); return err }, "orderBy"},
		{"order json", func() error {
			_, err := c.List(List{Entity: "Product", OrderBy: []Order{{Field: "attributes"}}})
			return err
		}, "orderBy"},
		{"limit too big", func() error { _, err := c.List(List{Entity: "Product", Limit: 5000}); return err }, "limit"},
		{"negative offset", func() error { _, err := c.List(List{Entity: "Product", Offset: -1}); return err }, "offset"},
		{"search without searchable", func() error { _, err := c.List(List{Entity: "Category", Search: "x"}); return err }, "search"},
		{"traverse key clash", func() error {
			_, err := c.List(List{Entity: "Product", Select: Selection{Nested: []Nested{{Key: "name", Relationship: "IN_CATEGORY"}}}})
			return err
		}, "traverse[0]"},
		{"edgeWhere unknown property", func() error {
			_, err := c.RelationshipList("Product", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", Nested{Relationship: "IN_CATEGORY", EdgeWhere: where(t, `{"title": "x"}`)})
			return err
		}, "edgeWhere.title"},
		{"edgeWhere bad type", func() error {
			_, err := c.RelationshipList("Product", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", Nested{Relationship: "IN_CATEGORY", EdgeWhere: where(t, `{"position": "first"}`)})
			return err
		}, "edgeWhere.position"},
		{"vector not vector", func() error {
			_, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "name", Vector: []any{1.0, 2.0, 3.0}})
			return err
		}, "field"},
		{"vector dims", func() error {
			_, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 2.0}})
			return err
		}, "vector"},
		{"vector topK", func() error {
			_, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 2.0, 3.0}, TopK: 101})
			return err
		}, "topK"},
		{"vector efSearch below topK", func() error {
			_, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 2.0, 3.0}, TopK: 20, EfSearch: 19})
			return err
		}, "efSearch"},
		{"vector efSearch above 1000", func() error {
			_, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 2.0, 3.0}, EfSearch: 1001})
			return err
		}, "efSearch"},
		{"vector efSearch negative", func() error {
			_, err := c.VectorSearch(VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 2.0, 3.0}, EfSearch: -5})
			return err
		}, "efSearch"},
	}
	for _, tc := range other {
		t.Run(tc.name, func(t *testing.T) { assertField(t, tc.err(), tc.field) })
	}
	if _, err := c.List(List{Entity: "product"}); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("lower-case entity: want NOT_FOUND, got %v", err)
	}
	if _, err := c.RelationshipList("Product", "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b", Nested{Relationship: "NOPE"}); !apperr.Is(err, apperr.NotFound) {
		t.Errorf("unknown relationship: want NOT_FOUND, got %v", err)
	}
}

func assertField(t *testing.T, err error, field string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want a VALIDATION_ERROR on %q, got none", field)
	}
	e := apperr.As(err)
	if e.Code != apperr.Validation {
		t.Fatalf("want VALIDATION_ERROR, got %s: %s", e.Code, e.Message)
	}
	if len(e.Details) == 0 || e.Details[0].Field != field {
		t.Fatalf("want the error to name %q, got %+v (%s)", field, e.Details, e.Message)
	}
}

func TestLikeEscape(t *testing.T) {
	for in, want := range map[string]string{`50%`: `50\%`, `a_b`: `a\_b`, `c:\dir`: `c:\\dir`, `plain`: `plain`} {
		if got := likeEscape(in); got != want {
			t.Errorf("likeEscape(%q) = %q, want %q", in, got, want)
		}
	}
	_ = fmt.Sprint
}

// TestFileMetaRejected checks the contract of Selection.Files: FILE fields
// only, no key collisions, and always one tenant bound as a parameter.
func TestFileMetaRejected(t *testing.T) {
	c := testCompiler(t)
	const tenant = "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5c"
	for _, tc := range []struct {
		name string
		sel  Selection
		code apperr.Code
	}{
		{"not a file field", Selection{Files: []FileMeta{{Field: "name"}}, TenantID: tenant}, apperr.Validation},
		{"unknown field", Selection{Files: []FileMeta{{Field: "nope"}}, TenantID: tenant}, apperr.Validation},
		{"key collides with a field", Selection{Files: []FileMeta{{Field: "manual", Key: "name"}}, TenantID: tenant}, apperr.Validation},
		{"two selections, one key", Selection{Files: []FileMeta{{Field: "manual"}, {Field: "manual"}}, TenantID: tenant}, apperr.Validation},
		{"no tenant", Selection{Files: []FileMeta{{Field: "manual"}}}, apperr.Internal},
		{"bad tenant", Selection{Files: []FileMeta{{Field: "manual"}}, TenantID: "x' OR true --"}, apperr.Internal},
		{"nested names another tenant", Selection{TenantID: tenant, Nested: []Nested{{Relationship: "SIMILAR",
			Select: Selection{Files: []FileMeta{{Field: "manual"}}, TenantID: "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5d"}}}}, apperr.Internal},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.List(List{Entity: "Product", Select: tc.sel})
			if err == nil {
				t.Fatal("compiled")
			}
			if got := apperr.As(err).Code; got != tc.code {
				t.Errorf("code %s, want %s: %v", got, tc.code, err)
			}
		})
	}
}

// TestVectorEfSearchSetup: a search runs at its own efSearch, else at the
// larger of the connections' hnsw.ef_search and VectorEfSearch(topK); it
// needs SET LOCAL (and so a transaction) only when that differs from the
// connections' value or a where filter needs the iterative scan.
func TestVectorEfSearchSetup(t *testing.T) {
	base := testCompiler(t)
	for _, tc := range []struct {
		name              string
		session, topK, ef int
		where             bool
		want              int // the SET LOCAL hnsw.ef_search value; 0: no Setup
	}{
		{"default connections, top 10", 0, 10, 0, false, 0},
		{"default connections, top 100", 0, 100, 0, false, 0},
		{"default connections, filter", 0, 10, 0, true, db.DefaultVectorEfSearch},
		{"own efSearch", 0, 10, 50, false, 50},
		{"own efSearch equal to the connections'", 0, 10, db.DefaultVectorEfSearch, false, 0},
		{"own efSearch with a filter", 0, 10, 600, true, 600},
		{"low connections, top 10", 40, 10, 0, false, 100},
		{"connections at 100, top 50", 100, 50, 0, false, 0},
		{"connections at 100, top 60", 100, 60, 0, false, 120},
		{"connections at 800, filter", 800, 60, 0, true, 800},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := base.WithVectorEfSearch(tc.session)
			v := VectorSearch{Entity: "Product", Field: "embedding", Vector: []any{1.0, 0.0, 0.5}, TopK: tc.topK, EfSearch: tc.ef}
			if tc.where {
				v.Where = where(t, `{"active": true}`)
			}
			st, err := c.VectorSearch(v)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tc.want != 0 {
				want = []string{"SET LOCAL hnsw.iterative_scan = relaxed_order", fmt.Sprintf("SET LOCAL hnsw.ef_search = %d", tc.want)}
			}
			if !reflect.DeepEqual(st.Setup, want) {
				t.Errorf("Setup = %q, want %q", st.Setup, want)
			}
		})
	}
}

// A selection's Output is refused when it would not say each member once.
func TestOutputRefusesWhatItCannotWrite(t *testing.T) {
	c := testCompiler(t)
	nested := []Nested{{Key: "_n1", Relationship: "IN_CATEGORY", Direction: DirOut, Select: Selection{Output: []Member{{Key: "title", Field: "title"}}}}}
	for name, sel := range map[string]Selection{
		"repeated key":         {Output: []Member{{Key: "a", Field: "name"}, {Key: "a", Field: "price"}}},
		"empty key":            {Output: []Member{{Field: "name"}}},
		"unknown field":        {Output: []Member{{Key: "a", Field: "nope"}}},
		"files":                {Output: []Member{{Key: "a", Field: "name"}}, Files: []FileMeta{{Field: "manual"}}, TenantID: "0190a0b2-3c4d-7e5f-8a9b-0c1d2e3f4a5b"},
		"nested not written":   {Output: []Member{{Key: "a", Field: "name"}}, Nested: nested},
		"nested written twice": {Output: []Member{{Key: "a", Nested: 1}, {Key: "b", Nested: 1}}, Nested: nested},
		"no such nested":       {Output: []Member{{Key: "a", Nested: 2}}, Nested: nested},
		"edges":                {Output: []Member{{Key: "a", Nested: 1}}, Nested: []Nested{{Relationship: "IN_CATEGORY", Direction: DirOut, Edges: true}}},
	} {
		if _, err := c.List(List{Entity: "Product", Select: sel}); apperr.As(err).Code != apperr.Validation {
			t.Errorf("%s: %v, want a validation error", name, err)
		}
	}
}

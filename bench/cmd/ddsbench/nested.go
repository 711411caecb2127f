package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"

	"github.com/google/uuid"
	"github.com/lib/pq"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// The nested section: 20 products × their categories (10) × 10 products of
// each category, one GraphQL request. The first nestedLinked products are
// each in 10 of the nestedCategories categories, so every category holds
// 1,000 products. Products are taken oldest first (the seeded ones, in
// seeding order: ties of createdAt are broken by id, UUIDv7 made in order;
// records the create section adds are newer, and PostGraphile's creates
// even have random ids, so "first by id" would not be the linked ones);
// related records come in DDS's default order, the order their links were
// made (link created_at, then link id), which PostGraphile expresses as the
// IN_CATEGORY link rows' primary key order (the links are made in one
// statement, so created_at ties). PostGraphile can order link rows by their
// own indexed columns only, not by a column of the record at the other end.
const (
	nestedCategories = 20
	nestedLinked     = 2000
	relationship     = "IN_CATEGORY"
)

// nestedPlan is the plan DDS's GraphQL compiles gqlNestedQuery to: Postgres
// builds the response's own members (Output), so the statement's JSON is
// the response's items (the keys _n1, _n2 are the GraphQL engine's names
// of the nested selections; TestNestedCeilingRunsTheStatementDDSRuns
// checks the statement is the one DDS runs).
var nestedPlan = query.List{Entity: entity, OrderBy: []query.Order{{Field: schema.ColCreatedAt}}, Limit: 20, Select: query.Selection{
	Fields: []string{"name", "price"},
	Output: []query.Member{{Key: "id", Field: "id"}, {Key: "name", Field: "name"}, {Key: "price", Field: "price"}, {Key: "categories", Nested: 1}},
	Nested: []query.Nested{{Key: "_n1", Relationship: relationship, Direction: query.DirOut, Limit: 10,
		Select: query.Selection{Fields: []string{"name"},
			Output: []query.Member{{Key: "id", Field: "id"}, {Key: "name", Field: "name"}, {Key: "products", Nested: 1}},
			Nested: []query.Nested{{
				Key: "_n2", Relationship: relationship, Direction: query.DirIn, Limit: 10,
				Select: query.Selection{Fields: []string{"name", "price"},
					Output: []query.Member{{Key: "id", Field: "id"}, {Key: "name", Field: "name"}, {Key: "price", Field: "price"}}},
			}}},
	}},
}}

const (
	gqlNestedQuery = `{ products(limit: 20, orderBy: [{field: "createdAt"}]) { id name price
  categories(limit: 10) { id name products(limit: 10) { id name price } } } }`
	// PostGraphile sees IN_CATEGORY through its foreign keys: a Product has
	// link rows by source_id, each naming its Category by target_id.
	peerNestedQuery = `{ allProducts(first: 20, orderBy: [CREATED_AT_ASC, PRIMARY_KEY_ASC]) { nodes { rowId name price
  inCategoriesBySourceId(first: 10, orderBy: [PRIMARY_KEY_ASC]) { nodes { categoryByTargetId { rowId name
    inCategoriesByTargetId(first: 10, orderBy: [PRIMARY_KEY_ASC]) { nodes { productBySourceId { rowId name price } } } } } } } } }`
)

// seedNested creates the categories and puts each of the first
// nestedLinked products in 10 of them (product i in categories i … i+9,
// modulo nestedCategories).
func (b *bench) seedNested(ctx context.Context, ids []string) error {
	cats := make([]string, nestedCategories)
	for i := range cats {
		cats[i] = uuid.Must(uuid.NewV7()).String()
	}
	pg := b.scope.Schema.PgSchema
	if _, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s ("id", "name")
SELECT u.id, 'category ' || lpad((u.n - 1)::text, 2, '0') FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n)`,
		schema.QualifiedIdent(pg, "Category")), pq.Array(cats)); err != nil {
		return fmt.Errorf("seed categories: %w", err)
	}
	linked := ids[:min(len(ids), nestedLinked)]
	rel := schema.QualifiedIdent(pg, relationship)
	if _, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s ("id", "source_id", "target_id")
SELECT gen_random_uuid(), p.id, ($2::uuid[])[((p.n - 1 + k) %% %d) + 1]
FROM unnest($1::uuid[]) WITH ORDINALITY AS p(id, n), generate_series(0, 9) AS k`, rel, nestedCategories),
		pq.Array(linked), pq.Array(cats)); err != nil {
		return fmt.Errorf("seed %s: %w", relationship, err)
	}
	_, err := b.db.ExecContext(ctx, "ANALYZE "+rel+"; ANALYZE "+schema.QualifiedIdent(pg, "Category"))
	return err
}

// nestedTree is the answer of the nested query, whoever gave it.
type nestedTree []nestedProduct

type nestedLeaf struct {
	ID, Name string
	Price    float64
}

type nestedProduct struct {
	nestedLeaf
	Categories []nestedCategory
}

type nestedCategory struct {
	ID, Name string
	Products []nestedLeaf
}

func (t nestedTree) leaves() int {
	n := 0
	for _, p := range t {
		for _, c := range p.Categories {
			n += len(c.Products)
		}
	}
	return n
}

// nestedFromDDS reads DDS's GraphQL answer (keys match nestedTree's fields).
func nestedFromDDS(body []byte) (nestedTree, error) {
	var r struct {
		Data struct {
			Products nestedTree `json:"products"`
		} `json:"data"`
		Errors []any `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Errors) > 0 {
		return nil, fmt.Errorf("DDS GraphQL answered %.400s", body)
	}
	return r.Data.Products, nil
}

// nestedFromMinimal reads the statement's JSON: {"items": the response's
// products}.
func nestedFromMinimal(body []byte) (nestedTree, error) {
	var r struct {
		Items nestedTree `json:"items"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("minimal handler answered %.400s", body)
	}
	return r.Items, nil
}

// nestedFromPeer reads PostGraphile's answer (link rows in between).
func nestedFromPeer(body []byte) (nestedTree, error) {
	type leaf struct {
		RowID string
		Name  string
		Price float64
	}
	var r struct {
		Data struct {
			AllProducts struct {
				Nodes []struct {
					leaf
					Links struct {
						Nodes []struct {
							Category struct {
								RowID, Name string
								Links       struct {
									Nodes []struct {
										Product leaf `json:"productBySourceId"`
									}
								} `json:"inCategoriesByTargetId"`
							} `json:"categoryByTargetId"`
						}
					} `json:"inCategoriesBySourceId"`
				}
			} `json:"allProducts"`
		} `json:"data"`
		Errors []any `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Errors) > 0 {
		return nil, fmt.Errorf("PostGraphile answered %.400s", body)
	}
	nodes := r.Data.AllProducts.Nodes
	t := make(nestedTree, len(nodes))
	for i, p := range nodes {
		t[i].nestedLeaf = nestedLeaf{p.RowID, p.Name, p.Price}
		for _, l := range p.Links.Nodes {
			c := nestedCategory{ID: l.Category.RowID, Name: l.Category.Name}
			for _, pl := range l.Category.Links.Nodes {
				c.Products = append(c.Products, nestedLeaf{pl.Product.RowID, pl.Product.Name, pl.Product.Price})
			}
			t[i].Categories = append(t[i].Categories, c)
		}
	}
	return t, nil
}

// checkSameNested asserts DDS's GraphQL, the minimal handler running the
// compiled statement and (when peerURL is set) PostGraphile return the
// same 20 × 10 × 10 records.
func checkSameNested(ctx context.Context, gqlURL, minURL, peerURL, key string) error {
	c := load.Client(1)
	viaGQL, err := load.Call(ctx, c, "POST", gqlURL, key, gqlBody(gqlNestedQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	want, err := nestedFromDDS(viaGQL)
	if err != nil {
		return err
	}
	if len(want) != 20 || want.leaves() != 2000 {
		return fmt.Errorf("DDS's nested answer has %d products and %d leaf products, want 20 and 2,000: %.400s", len(want), want.leaves(), viaGQL)
	}
	viaMin, err := load.Call(ctx, c, "GET", minURL+"/p", "", nil, http.StatusOK, nil)
	if err != nil {
		return err
	}
	got, err := nestedFromMinimal(viaMin)
	if err != nil {
		return err
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("the minimal handler's nested answer differs from DDS's:\n dds:     %.300s\n minimal: %.300s", viaGQL, viaMin)
	}
	if peerURL == "" {
		return nil
	}
	viaPeer, err := load.Call(ctx, c, "POST", peerURL, "", gqlBody(peerNestedQuery, nil), http.StatusOK, nil)
	if err != nil {
		return err
	}
	if got, err = nestedFromPeer(viaPeer); err != nil {
		return err
	}
	if !reflect.DeepEqual(want, got) {
		return fmt.Errorf("PostGraphile's nested answer differs from DDS's:\n dds:          %.300s\n postgraphile: %.300s", viaGQL, viaPeer)
	}
	return nil
}

package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// entity is the benchmarked entity: a realistic small record.
const entity = "Product"

// schemaDef is the tenant schema created through the API.
var schemaDef = map[string]any{
	"name": "bench",
	"entities": []any{map[string]any{
		"name": entity,
		"fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "stock", "type": "INTEGER"},
			map[string]any{"name": "tags", "type": "STRING", "list": true},
		},
	}, map[string]any{
		// The nested section: products in categories (IN_CATEGORY).
		"name":   "Category",
		"fields": []any{map[string]any{"name": "name", "type": "STRING", "required": true}},
	}, map[string]any{
		// The vector section: documents with an embedding.
		"name": "Doc",
		"fields": []any{
			map[string]any{"name": "title", "type": "STRING"},
			map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": vectorDims},
		},
	}, accountDef},
	"relationships": []any{map[string]any{"name": "IN_CATEGORY", "from": entity, "to": "Category", "fromField": "categories", "toField": "products"}},
}

// product is a create body.
type product struct {
	Name  string   `json:"name"`
	Price float64  `json:"price"`
	Stock int64    `json:"stock"`
	Tags  []string `json:"tags"`
}

var tagWords = []string{"red", "green", "blue", "sale", "new", "eco", "bulk"}

func randomProduct() product {
	return product{
		Name:  "product-" + randHex(6),
		Price: float64(rand.IntN(100000)) / 100,
		Stock: int64(rand.IntN(1000)),
		Tags:  []string{tagWords[rand.IntN(len(tagWords))], tagWords[rand.IntN(len(tagWords))]},
	}
}

func randomBody() []byte {
	b, _ := json.Marshal(randomProduct())
	return b
}

func randHex(n int) string {
	b := make([]byte, n)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// bench holds what the direct-SQL and minimal-handler ceilings need: the
// tenant's resolved scope and the exact statements DDS runs.
type bench struct {
	db     *sqlx.DB
	scope  *records.Scope
	entity *schema.Entity
	getSQL string
	create createStmt
	batch  batchStmt
	// upsert and nestedWrite are the upsert and nestedwrite sections'
	// statements (writes.go).
	upsert      upsertStmt
	nestedWrite nestedWriteStmt
	writeCats   []string // the categories nestedwrite connects (nil unless it runs)
	// vectors is the vector section's corpus (nil unless it runs).
	vectors *vectorSet
}

// resolve resolves the tenant's scope through records (for the system
// principal: the bench's key may do everything) and compiles the
// statements.
func resolve(ctx context.Context, db *sqlx.DB, tenantID string) (*bench, error) {
	sc, err := records.NewStore(db, schema.NewService(db), nil).Scope(ctx, records.SystemPrincipal(tenantID))
	if err != nil {
		return nil, err
	}
	e, err := sc.Entity(entity)
	if err != nil {
		return nil, err
	}
	// The exact read DDS compiles for GET /api/v1/dynamic/Product/{id}
	// (records.Store.Get); only the bound id differs between requests.
	st, err := sc.GetStatement(entity, uuid.Must(uuid.NewV7()).String(), query.Selection{})
	if err != nil {
		return nil, err
	}
	if len(st.Args) != 1 {
		return nil, fmt.Errorf("the GET statement binds %d values, the bench expects only the id: %s", len(st.Args), st.SQL)
	}
	cs, err := compileCreate(sc, e)
	if err != nil {
		return nil, err
	}
	us, err := compileUpsert(sc)
	if err != nil {
		return nil, err
	}
	nw, err := compileNestedWrite(sc)
	if err != nil {
		return nil, err
	}
	return &bench{db: db, scope: sc, entity: e, getSQL: st.SQL, create: cs, batch: compileBatch(sc), upsert: us, nestedWrite: nw}, nil
}

// createStmt is the INSERT + outbox statement of records.Store.Create for
// a body carrying every field of Product.
type createStmt struct {
	sql    string
	outbox []any // the outbox CTE's bound values (tenant, schema id, schema name, event type, entity)
}

// compileCreate builds the statement records.Store.Create runs for a body
// carrying every field of Product (records.CreateSQL, the same function).
func compileCreate(sc *records.Scope, e *schema.Entity) (createStmt, error) {
	input := map[string]any{"name": "x", "price": json.Number("1.5"), "stock": json.Number("1"), "tags": []any{"a"}}
	row, errs := records.Prepare(e, input, records.Create)
	if err := apperr.Fields(errs); err != nil {
		return createStmt{}, err
	}
	want := []string{"name", "price", "stock", "tags"}
	if len(row.Fields) != len(want) {
		return createStmt{}, fmt.Errorf("prepared %d fields, want %v", len(row.Fields), want)
	}
	for i, f := range row.Fields {
		if f.Name != want[i] {
			return createStmt{}, fmt.Errorf("field %d is %s, want %s (bind order changed)", i, f.Name, want[i])
		}
	}
	var a query.Args
	sqlText := records.CreateSQL(sc, e, row.Fields, &a)
	return createStmt{sql: sqlText, outbox: a.List()[2+len(want):]}, nil
}

// args binds a product: id, event id, name, price, stock, tags, then the
// outbox values.
func (c createStmt) args(p product) []any {
	out := make([]any, 0, 6+len(c.outbox))
	// The list goes as its array literal, sent as text, as DDS binds lists.
	out = append(out, uuid.Must(uuid.NewV7()).String(), outbox.NewEventID(), p.Name, p.Price, p.Stock, schema.ArrayLiteral(p.Tags))
	return append(out, c.outbox...)
}

// seed inserts n products straight into the entity table (seeding is
// set-up, not measured; it writes no outbox events) and returns their ids.
func (b *bench) seed(ctx context.Context, n int) ([]string, error) {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.Must(uuid.NewV7()).String()
	}
	const batch = 5000
	for i := 0; i < n; i += batch {
		chunk := ids[i:min(i+batch, n)]
		_, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s ("id", "name", "price", "stock", "tags")
SELECT u.id, 'product-' || u.n, (u.n %% 100000) / 100.0, u.n %% 1000, ARRAY['tag' || (u.n %% 7), 'bench']
FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n)`, b.scope.Table(entity)), pq.Array(chunk))
		if err != nil {
			return nil, fmt.Errorf("seed: %w", err)
		}
	}
	return ids, nil
}

// getDirect runs the GET statement for id and returns its JSON.
func (b *bench) getDirect(ctx context.Context, id string) ([]byte, error) {
	var out []byte
	err := b.db.QueryRowContext(ctx, b.getSQL, id).Scan(&out)
	return out, err
}

// createDirect runs the create statement for p and returns its JSON.
func (b *bench) createDirect(ctx context.Context, p product) ([]byte, error) {
	var out []byte
	err := b.db.QueryRowContext(ctx, b.create.sql, b.create.args(p)...).Scan(&out)
	return out, err
}

// minimalGetArgs binds the id of GET /p/{id}.
func minimalGetArgs(r *http.Request) []any {
	id, ok := strings.CutPrefix(r.URL.Path, "/p/")
	if !ok || id == "" {
		return nil
	}
	return []any{id}
}

// minimalCreateArgs decodes the JSON body of POST /p and binds it.
func (b *bench) minimalCreateArgs(r *http.Request) []any {
	var p product
	if err := json.NewDecoder(r.Body).Decode(&p); err != nil || p.Name == "" {
		return nil
	}
	return b.create.args(p)
}

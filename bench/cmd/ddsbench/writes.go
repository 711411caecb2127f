package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/lib/pq"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// The upsert and nestedwrite sections.
//
// upsert: POST /api/v1/dynamic/Account/upsert with 1,000 accounts per
// request on the unique email (DDS validates them, then writes them with
// one INSERT ... ON CONFLICT ... DO UPDATE whose CTE writes each row's
// entity.created or entity.updated event), next to a minimal handler
// running one hand-written INSERT ... ON CONFLICT (email) DO UPDATE of the
// same rows with the outbox's own upsert event insert, in one statement.
// Both insert in email order (concurrent upserts of the same rows then
// wait rather than deadlock). Each of the 16 bodies has its own 1,000
// emails, so after a body's first request its rows are updates, as in a
// sync job.
//
// nestedwrite: POST /api/v1/dynamic/Product with a product that connects
// nestedWriteEdges existing categories (one statement: the product, its
// event, the edges and their events), next to the minimal handler running
// that very statement (records.NestedCreateSQL) with the request's values.
const (
	accountEntity    = "Account"
	upsertPool       = 20000
	nestedWriteEdges = 10
)

// accountDef is the upsert section's entity, added to schemaDef.
var accountDef = map[string]any{
	"name": accountEntity,
	"fields": []any{
		map[string]any{"name": "email", "type": "STRING", "unique": true, "required": true},
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "visits", "type": "INTEGER"},
	},
}

type account struct {
	Email  string `json:"email"`
	Name   string `json:"name"`
	Visits int64  `json:"visits"`
}

// upsertBody is request body i: batchSize accounts whose emails are the
// i-th block of batchSize of the pool (bodies of different i share no
// account, so concurrent requests wait for each other's row locks only
// when wrk sends the same body twice at once), in random order.
func upsertBody(i int) []byte {
	items := make([]account, batchSize)
	for j, n := range rand.Perm(batchSize) {
		k := (i*batchSize + n) % upsertPool
		items[j] = account{Email: fmt.Sprintf("acct-%05d@bench.example", k), Name: "account-" + randHex(4), Visits: int64(rand.IntN(100))}
	}
	b, _ := json.Marshal(map[string]any{"onConflict": "email", "items": items})
	return b
}

// upsertStmt is the minimal handler's statement: typed unnest of the
// columns, INSERT ... ON CONFLICT (email) DO UPDATE returning (xmax = 0),
// the outbox's upsert event insert, and the written records as JSON.
type upsertStmt struct {
	sql    string
	outbox []any
}

func compileUpsert(sc *records.Scope) (upsertStmt, error) {
	e, err := sc.Entity(accountEntity)
	if err != nil {
		return upsertStmt{}, err
	}
	var a query.Args
	cols := []string{a.Add(nil, "text[]"), a.Add(nil, "text[]"), a.Add(nil, "text[]"), a.Add(nil, "bigint[]")}
	ret := sc.Returning(e)
	sqlText := fmt.Sprintf(`WITH w AS (INSERT INTO %s AS t ("id", "email", "name", "visits")
  SELECT u.id::uuid, u.email, u.name, u.visits FROM unnest(%s) AS u(id, email, name, visits) ORDER BY u.email
  ON CONFLICT ("email") DO UPDATE SET "updatedAt" = now(), "name" = EXCLUDED."name", "visits" = EXCLUDED."visits"
  RETURNING %s, (t.xmax = 0) AS "_created"),
e AS (%s)
SELECT json_build_object('successCount', count(*), 'createdCount', count(*) FILTER (WHERE w."_created"),
  'successful', coalesce(json_agg(w ORDER BY w."email"), '[]'::json), 'events', (SELECT count(*) FROM e)) FROM w`,
		sc.Table(accountEntity), strings.Join(cols, ", "), strings.Join(ret, ", "),
		outbox.InsertUpsertCTE(&a, sc.Origin(), accountEntity, "w", "_created"))
	return upsertStmt{sql: sqlText, outbox: a.List()[len(cols):]}, nil
}

func (s upsertStmt) args(r *http.Request) []any {
	var body struct{ Items []account }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Items) == 0 || len(body.Items) > batchSize {
		return nil
	}
	n := len(body.Items)
	ids, emails, names := make([]string, n), make([]string, n), make([]string, n)
	visits := make([]int64, n)
	for i, a := range body.Items {
		if a.Email == "" || a.Name == "" {
			return nil
		}
		ids[i], emails[i], names[i], visits[i] = uuid.Must(uuid.NewV7()).String(), a.Email, a.Name, a.Visits
	}
	return append([]any{ids, emails, names, visits}, s.outbox...)
}

// eventCounts counts the tenant's events of entity name by type.
func (b *bench) eventCounts(ctx context.Context, name string) (map[string]int, error) {
	var rows []struct {
		Type string `db:"type"`
		N    int    `db:"n"`
	}
	err := b.db.SelectContext(ctx, &rows, `SELECT type, count(*) AS n FROM dds.events WHERE tenant_id = $1 AND (entity_name = $2 OR type LIKE 'relationship.%') GROUP BY type`, b.scope.TenantID, name)
	out := map[string]int{}
	for _, r := range rows {
		out[r.Type] = r.N
	}
	return out, err
}

// checkSameUpsert sends one body to DDS and the same to the minimal
// handler: DDS creates the accounts, the minimal handler then updates
// them; both answer the same records and write one event per row of the
// right type.
func checkSameUpsert(ctx context.Context, b *bench, client *http.Client, ddsURL, minURL, key string) error {
	body := upsertBody(upsertPool/batchSize - 1) // a block the timed bodies do not use
	before, err := b.eventCounts(ctx, accountEntity)
	if err != nil {
		return err
	}
	viaDDS, err := load.Call(ctx, client, "POST", ddsURL+"/api/v1/dynamic/"+accountEntity+"/upsert", key, body, http.StatusOK, nil)
	if err != nil {
		return err
	}
	viaMin, err := load.Call(ctx, client, "POST", minURL+"/upsert", "", body, http.StatusCreated, nil)
	if err != nil {
		return err
	}
	after, err := b.eventCounts(ctx, accountEntity)
	if err != nil {
		return err
	}
	type result struct {
		SuccessCount int              `json:"successCount"`
		CreatedCount int              `json:"createdCount"`
		Successful   []map[string]any `json:"successful"`
	}
	recs := func(raw []byte) (result, []string) {
		var r result
		_ = json.Unmarshal(raw, &r)
		var out []string
		for _, m := range r.Successful {
			out = append(out, fmt.Sprint(m["email"], m["name"], m["visits"]))
		}
		sort.Strings(out)
		return r, out
	}
	rd, d := recs(viaDDS)
	rm, m := recs(viaMin)
	if rd.SuccessCount != batchSize || rm.SuccessCount != batchSize || strings.Join(d, ",") != strings.Join(m, ",") {
		return fmt.Errorf("the upserts differ:\n dds:     %.300s\n minimal: %.300s", viaDDS, viaMin)
	}
	created, updated := after["entity.created"]-before["entity.created"], after["entity.updated"]-before["entity.updated"]
	if created+updated != 2*batchSize || rm.CreatedCount != 0 || created != rd.CreatedCount {
		return fmt.Errorf("the two upserts wrote %d entity.created and %d entity.updated events (DDS said %d created, minimal %d), want %d in all and the minimal handler's all updates",
			created, updated, rd.CreatedCount, rm.CreatedCount, 2*batchSize)
	}
	return nil
}

// seedWriteCategories makes the categories nested creates connect to and
// returns their ids.
func (b *bench) seedWriteCategories(ctx context.Context) ([]string, error) {
	cats := make([]string, nestedWriteEdges)
	for i := range cats {
		cats[i] = uuid.Must(uuid.NewV7()).String()
	}
	_, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s ("id", "name")
SELECT u.id, 'write category ' || u.n FROM unnest($1::uuid[]) WITH ORDINALITY AS u(id, n)`, b.scope.Table("Category")), pq.Array(cats))
	return cats, err
}

// nestedWriteBody is a product connecting every category of cats.
func nestedWriteBody(cats []string) []byte {
	p := randomProduct()
	connect := make([]any, len(cats))
	for i, c := range cats {
		connect[i] = map[string]any{"id": c}
	}
	b, _ := json.Marshal(map[string]any{"name": p.Name, "price": p.Price, "stock": p.Stock, "tags": p.Tags,
		"categories": map[string]any{"connect": connect}})
	return b
}

// nestedWriteStmt is the statement DDS runs for nestedWriteBody
// (records.NestedCreateSQL), with the positions of the values that change
// per request: the product's id and fields, and the edges' ids, sources
// and targets.
type nestedWriteStmt struct {
	sql      string
	template []any
}

// nestedWriteArgs: id, name, price, stock, tags; then the product's five
// outbox values; then edge ids, sources, targets, properties.
const (
	nwID, nwName, nwPrice, nwStock, nwTags = 0, 1, 2, 3, 4
	nwEdgeIDs, nwEdgeSrc, nwEdgeTgt        = 10, 11, 12
)

func compileNestedWrite(sc *records.Scope) (nestedWriteStmt, error) {
	cats := make([]any, nestedWriteEdges)
	for i := range cats {
		cats[i] = map[string]any{"id": uuid.Must(uuid.NewV7()).String()}
	}
	input := map[string]any{"name": "x", "price": json.Number("1.5"), "stock": json.Number("1"), "tags": []any{"a"},
		"categories": map[string]any{"connect": cats}}
	q, args, err := records.NestedCreateSQL(sc, entity, input)
	if err != nil {
		return nestedWriteStmt{}, err
	}
	if len(args) < nwEdgeTgt+1 {
		return nestedWriteStmt{}, fmt.Errorf("the nested create binds %d values, the bench expects more than %d", len(args), nwEdgeTgt)
	}
	for _, i := range []int{nwID, nwName, nwPrice, nwStock, nwTags, nwEdgeIDs, nwEdgeSrc, nwEdgeTgt} {
		if _, ok := args[i].([]string); !ok {
			if _, ok := args[i].([]pgtype.Text); !ok {
				return nestedWriteStmt{}, fmt.Errorf("the nested create binds %T at %d, the bench expects a text array (bind order changed)", args[i], i)
			}
		}
	}
	return nestedWriteStmt{sql: q, template: args}, nil
}

func (s nestedWriteStmt) args(r *http.Request) []any {
	var body struct {
		product
		Categories struct {
			Connect []struct{ ID string } `json:"connect"`
		} `json:"categories"`
	}
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Name == "" || len(body.Categories.Connect) != nestedWriteEdges {
		return nil
	}
	args := append([]any{}, s.template...)
	id := uuid.Must(uuid.NewV7()).String()
	text := func(s string) []pgtype.Text { return []pgtype.Text{{String: s, Valid: true}} }
	args[nwID] = []string{id}
	args[nwName] = text(body.Name)
	args[nwPrice] = text(fmt.Sprint(body.Price))
	args[nwStock] = text(fmt.Sprint(body.Stock))
	args[nwTags] = text(schema.ArrayLiteral(body.Tags))
	ids, src, tgt := make([]string, nestedWriteEdges), make([]string, nestedWriteEdges), make([]string, nestedWriteEdges)
	for i, c := range body.Categories.Connect {
		ids[i], src[i], tgt[i] = uuid.Must(uuid.NewV7()).String(), id, c.ID
	}
	args[nwEdgeIDs], args[nwEdgeSrc], args[nwEdgeTgt] = ids, src, tgt
	return args
}

// checkSameNestedWrite creates one product with its edges through DDS and
// one through the minimal handler: both answer the product, and each
// wrote one entity.created and nestedWriteEdges relationship.created events.
func checkSameNestedWrite(ctx context.Context, b *bench, client *http.Client, ddsURL, minURL, key string, cats []string) error {
	body := nestedWriteBody(cats)
	before, err := b.eventCounts(ctx, entity)
	if err != nil {
		return err
	}
	viaDDS, err := load.Call(ctx, client, "POST", ddsURL+"/api/v1/dynamic/"+entity, key, body, http.StatusCreated, nil)
	if err != nil {
		return err
	}
	viaMin, err := load.Call(ctx, client, "POST", minURL+"/p", "", body, http.StatusCreated, nil)
	if err != nil {
		return err
	}
	after, err := b.eventCounts(ctx, entity)
	if err != nil {
		return err
	}
	var list []map[string]any
	if json.Unmarshal(viaMin, &list) != nil || len(list) != 1 {
		return fmt.Errorf("the minimal handler answered %.300s", viaMin)
	}
	var one map[string]any
	if json.Unmarshal(viaDDS, &one) != nil || one["name"] != list[0]["name"] || one["stock"] != list[0]["stock"] {
		return fmt.Errorf("the nested creates differ:\n dds:     %.300s\n minimal: %.300s", viaDDS, viaMin)
	}
	if c, r := after["entity.created"]-before["entity.created"], after["relationship.created"]-before["relationship.created"]; c != 2 || r != 2*nestedWriteEdges {
		return fmt.Errorf("the two nested creates wrote %d entity.created and %d relationship.created events, want 2 and %d", c, r, 2*nestedWriteEdges)
	}
	return nil
}

// serveNestedWrite is the nestedwrite section's minimal handler: the
// statement's second column is the JSON of the created records.
func (s nestedWriteStmt) serve(db *sql.DB) (*load.Minimal, error) {
	return load.MinimalServerOf(db, s.sql, s.args, func(row *sql.Row) ([]byte, error) {
		var n int
		var out []byte
		var events sql.NullString
		err := row.Scan(&n, &out, &events)
		return out, err
	})
}

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"

	"github.com/google/uuid"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// The batch section: POST /api/v1/dynamic/Product/batch with 1,000
// products per request (DDS validates them all, then writes them and
// their entity.created events in one statement), next to a minimal handler
// doing one multi-row INSERT of the same 1,000 rows plus their events in
// one statement (one transaction) with the outbox's own INSERT.
const (
	batchSize  = records.MaxBatch
	batchConns = 8 // wrk connections: 8 × 1,000 rows in flight
)

// batchBody is a request body of batchSize random products.
func batchBody() []byte {
	items := make([]product, batchSize)
	for i := range items {
		items[i] = randomProduct()
	}
	b, _ := json.Marshal(map[string]any{"items": items})
	return b
}

// batchStmt is the minimal handler's statement: typed unnest of the
// columns, the outbox's InsertCTE, and the written records back as JSON
// (as DDS answers them), ordered by id.
type batchStmt struct {
	sql    string
	outbox []any // the outbox CTE's bound values
}

func compileBatch(sc *records.Scope) batchStmt {
	var a query.Args
	cols := []string{a.Add(nil, "text[]"), a.Add(nil, "text[]"), a.Add(nil, "double precision[]"), a.Add(nil, "bigint[]"), a.Add(nil, "text[]")}
	e, _ := sc.Entity(entity)
	ret := sc.Returning(e)
	sqlText := fmt.Sprintf(`WITH w AS (INSERT INTO %s AS t ("id", "name", "price", "stock", "tags")
  SELECT u.id::uuid, u.name, u.price, u.stock, u.tags::text[] FROM unnest(%s) AS u(id, name, price, stock, tags) RETURNING %s),
e AS (%s)
SELECT json_build_object('successCount', count(*), 'successful', coalesce(json_agg(w ORDER BY w."id"), '[]'::json), 'events', (SELECT count(*) FROM e)) FROM w`,
		sc.Table(entity), strings.Join(cols, ", "), strings.Join(ret, ", "),
		outbox.InsertCTE(&a, sc.Origin(), outbox.EntityCreated, entity, "w"))
	return batchStmt{sql: sqlText, outbox: a.List()[len(cols):]}
}

// args decodes a batch body and binds it: a fresh UUIDv7 per row (as DDS
// makes them), each column as one Go slice pgx encodes natively, lists as
// their array literals.
func (s batchStmt) args(r *http.Request) []any {
	var body struct{ Items []product }
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || len(body.Items) == 0 || len(body.Items) > batchSize {
		return nil
	}
	n := len(body.Items)
	ids, names, tags := make([]string, n), make([]string, n), make([]string, n)
	prices, stocks := make([]float64, n), make([]int64, n)
	for i, p := range body.Items {
		if p.Name == "" {
			return nil
		}
		ids[i], names[i], prices[i], stocks[i] = uuid.Must(uuid.NewV7()).String(), p.Name, p.Price, p.Stock
		tags[i] = schema.ArrayLiteral(p.Tags)
	}
	return append([]any{ids, names, prices, stocks, tags}, s.outbox...)
}

// checkSameBatch sends one batch to DDS and one to the minimal handler and
// asserts both wrote the 1,000 records (the same fields) and 1,000
// entity.created events.
func checkSameBatch(ctx context.Context, b *bench, client *http.Client, ddsURL, minURL, key string) error {
	body := batchBody()
	count := func() (int, error) {
		var n int
		err := b.db.GetContext(ctx, &n, `SELECT count(*) FROM dds.events WHERE tenant_id = $1 AND type = 'entity.created'`, b.scope.TenantID)
		return n, err
	}
	before, err := count()
	if err != nil {
		return err
	}
	viaDDS, err := load.Call(ctx, client, "POST", ddsURL+"/api/v1/dynamic/"+entity+"/batch", key, body, http.StatusCreated, nil)
	if err != nil {
		return err
	}
	viaMin, err := load.Call(ctx, client, "POST", minURL+"/batch", "", body, http.StatusCreated, nil)
	if err != nil {
		return err
	}
	after, err := count()
	if err != nil {
		return err
	}
	records := func(raw []byte) []map[string]any {
		var r struct {
			SuccessCount int              `json:"successCount"`
			Successful   []map[string]any `json:"successful"`
		}
		if json.Unmarshal(raw, &r) != nil || r.SuccessCount != batchSize {
			return nil
		}
		for _, m := range r.Successful {
			delete(m, schema.ColID)
			delete(m, schema.ColCreatedAt)
			delete(m, schema.ColUpdatedAt)
		}
		return r.Successful
	}
	d := records(viaDDS)
	if len(d) != batchSize || !reflect.DeepEqual(d, records(viaMin)) {
		return fmt.Errorf("the batches differ:\n dds:     %.300s\n minimal: %.300s", viaDDS, viaMin)
	}
	if after-before != 2*batchSize {
		return fmt.Errorf("the two batches wrote %d entity.created events, want %d", after-before, 2*batchSize)
	}
	return nil
}

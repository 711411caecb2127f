package load

import (
	"bytes"
	"context"
	"fmt"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jmoiron/sqlx"
)

// ProductSchema is the schema SeedProducts fills: one entity, Product, with
// a name, an indexed price and a stock.
func ProductSchema() map[string]any {
	return map[string]any{"name": "bench", "entities": []any{map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER", "indexed": true},
		map[string]any{"name": "stock", "type": "INTEGER"}}}}}
}

// SeedProducts copies n products (name, price, stock; ids UUIDv7) into the tenant's table and returns their ids.
func SeedProducts(ctx context.Context, d *sqlx.DB, dbURL, tenantID string, n int) ([]string, error) {
	var pg string
	if err := d.GetContext(ctx, &pg, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1 AND active`, tenantID); err != nil {
		return nil, err
	}
	table := fmt.Sprintf(`%q."Product"`, pg)
	ids := make([]string, n)
	var csv bytes.Buffer
	for i := range n {
		ids[i] = uuid.Must(uuid.NewV7()).String()
		fmt.Fprintf(&csv, "%s,Product %07d,%d.%02d,%d\n", ids[i], i, i%1000, i%100, i%50)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	if _, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(csv.Bytes()), `COPY `+table+` ("id", "name", "price", "stock") FROM STDIN (FORMAT csv)`); err != nil {
		return nil, fmt.Errorf("seed: %w", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
		return nil, err
	}
	return ids, nil
}

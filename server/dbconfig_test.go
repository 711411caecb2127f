package server_test

import (
	"context"
	"testing"

	"github.com/dds-project/dds/internal/testenv"
)

// DDS_DB_MAX_CONNS and DDS_VECTOR_EF_SEARCH reach the pool server.New opens:
// its size, and the hnsw.ef_search its connections run vector searches
// with; a vector search through the handler runs on it.
func TestServerPoolFollowsConfiguration(t *testing.T) {
	cfg := testenv.Config(t)
	cfg.DBMaxConns, cfg.VectorEfSearch = 3, 123
	app := testenv.NewServer(t, cfg)
	if got := app.Server.DB.Stats().MaxOpenConnections; got != 3 {
		t.Fatalf("pool of %d connections, want DDS_DB_MAX_CONNS = 3", got)
	}
	_, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "s", "entities": []any{map[string]any{"name": "Doc",
		"fields": []any{map[string]any{"name": "v", "type": "VECTOR", "vectorDimensions": 2}}}}})
	app.Must(t, 201, "POST", "/api/v1/dynamic/Doc", key, map[string]any{"v": []any{1, 0}})
	var hits []map[string]any
	app.Must(t, 200, "POST", "/api/v1/dynamic/Doc/vector-search", key, map[string]any{"field": "v", "vector": []any{1, 0}}).Decode(t, &hits)
	if len(hits) != 1 {
		t.Fatalf("hits: %v", hits)
	}
	ctx := context.Background()
	conn, err := app.Server.DB.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var ef string
	if err := conn.QueryRowContext(ctx, `SELECT current_setting('hnsw.ef_search') FROM (SELECT '[1,0]'::vector <=> '[0,1]'::vector) x`).Scan(&ef); err != nil || ef != "123" {
		t.Fatalf("hnsw.ef_search = %q (%v), want DDS_VECTOR_EF_SEARCH = 123", ef, err)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/lib/pq"
	"github.com/pgvector/pgvector-go"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/query"
)

// The vector section: top-10 cosine search over -vectors × 128 clustered
// embeddings, DDS's POST /vector-search (the primary path; GraphQL's
// search compiles to the same statement) vs a minimal handler running the
// raw pgvector HNSW query at the same hnsw.ef_search. Recall@10 of both is
// measured against exact search before the timed runs.
const (
	vectorDims    = 128
	vectorQueries = 200
	vectorEntity  = "Doc"
	targetRecall  = 0.99
)

// vectorSet is the seeded corpus's queries, their exact top 10, and the
// ef_search DDS's unfiltered top-10 search runs at.
type vectorSet struct {
	queries  [][]float32
	exact    [][]string
	efSearch int
}

// rawVectorSQL is the raw pgvector query: the 10 nearest ids by cosine
// distance, through the HNSW index.
func rawVectorSQL(table string) string {
	return fmt.Sprintf(`SELECT coalesce(json_agg(json_build_object('id', s."id", 'distance', s.d) ORDER BY s.d), '[]'::json)
FROM (SELECT "id", "embedding" <=> $1::vector AS d FROM %s ORDER BY "embedding" <=> $1::vector LIMIT 10) s`, table)
}

// vectorArgs binds the vector of a search body.
func vectorArgs(r *http.Request) []any {
	var b struct{ Vector []float32 }
	if json.NewDecoder(r.Body).Decode(&b) != nil || len(b.Vector) != vectorDims {
		return nil
	}
	return []any{pgvector.NewVector(b.Vector)}
}

func vectorBody(q []float32) []byte {
	b, _ := json.Marshal(map[string]any{"field": "embedding", "vector": q, "topK": 10, "select": []string{"title"}})
	return b
}

// seedVectors loads n vectors the way a user loads a corpus (rows first,
// then the HNSW index DDS declared), picks the queries and computes their
// exact top 10 with index scans off.
func (b *bench) seedVectors(ctx context.Context, n int) (*vectorSet, error) {
	table := b.scope.Table(vectorEntity)
	var idxName, idxDef string
	if err := b.db.QueryRowContext(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(indexname), indexdef FROM pg_indexes
		WHERE schemaname = $1 AND tablename = $2 AND indexdef LIKE '%hnsw%'`, b.scope.Schema.PgSchema, vectorEntity).Scan(&idxName, &idxDef); err != nil {
		return nil, fmt.Errorf("find the HNSW index of %s: %w", vectorEntity, err)
	}
	if _, err := b.db.ExecContext(ctx, "DROP INDEX "+idxName); err != nil {
		return nil, err
	}
	g := load.NewVectors(vectorDims)
	const chunk = 5000
	for i := 0; i < n; i += chunk {
		k := min(chunk, n-i)
		ids, vecs := make([]string, k), make([]string, k)
		for j := range ids {
			ids[j], vecs[j] = uuid.Must(uuid.NewV7()).String(), pgvector.NewVector(g.Next()).String()
		}
		if _, err := b.db.ExecContext(ctx, fmt.Sprintf(`INSERT INTO %s ("id", "title", "embedding")
SELECT u.id, 'doc ' || (u.n + %d), u.v::vector FROM unnest($1::uuid[], $2::text[]) WITH ORDINALITY AS u(id, v, n)`, table, i),
			pq.Array(ids), pq.Array(vecs)); err != nil {
			return nil, fmt.Errorf("seed vectors: %w", err)
		}
	}
	t0 := time.Now()
	conn, err := b.db.Connx(ctx)
	if err != nil {
		return nil, err
	}
	_, err = conn.ExecContext(ctx, "SET maintenance_work_mem = '512MB'; SET max_parallel_maintenance_workers = 1; "+idxDef+"; ANALYZE "+table)
	conn.Close()
	if err != nil {
		return nil, fmt.Errorf("build the HNSW index: %w", err)
	}
	step(fmt.Sprintf("HNSW index over %d vectors built in %s; exact top 10 of %d queries", n, time.Since(t0).Round(time.Second), vectorQueries))
	vs := &vectorSet{queries: make([][]float32, vectorQueries), exact: make([][]string, vectorQueries)}
	for i := range vs.queries {
		vs.queries[i] = g.Next()
	}
	// Its own statement text: a prepared statement's cached generic plan
	// keeps the settings it was planned under, so the exact search's
	// sequential scan must not become the plan of rawRecallAt's query.
	exactSQL := fmt.Sprintf(`SELECT "id"::text /* exact */ FROM %s ORDER BY "embedding" <=> $1::vector LIMIT 10`, table)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for w := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < len(vs.queries) && errs[w] == nil; i += len(errs) {
				errs[w] = b.exactTop(ctx, exactSQL, vs.queries[i], &vs.exact[i])
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("exact search: %w", err)
	}
	// DDS's unfiltered top-10 search runs at the hnsw.ef_search its
	// connections get from its configuration (DDS_VECTOR_EF_SEARCH in the
	// environment dds serve inherits, else db.DefaultVectorEfSearch), or at
	// VectorEfSearch(10) when that is larger.
	ef := db.DefaultVectorEfSearch
	if v := os.Getenv("DDS_VECTOR_EF_SEARCH"); v != "" {
		if ef, err = strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("DDS_VECTOR_EF_SEARCH: %w", err)
		}
	}
	vs.efSearch = max(ef, query.VectorEfSearch(10))
	return vs, nil
}

// exactTop is the exact top 10 of q (a sequential scan: index scans off).
func (b *bench) exactTop(ctx context.Context, exactSQL string, q []float32, out *[]string) error {
	tx, err := b.db.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off"); err != nil {
		return err
	}
	return tx.SelectContext(ctx, out, exactSQL, pgvector.NewVector(q))
}

// vectorRecall sends every query to DDS and to the raw handler (outside
// the timed runs) and returns the recall@10 of each.
func vectorRecall(ctx context.Context, vs *vectorSet, ddsURL, rawURL, key string) (dds, raw float64, err error) {
	c := load.Client(1)
	var viaDDS, viaRaw [][]string
	for _, q := range vs.queries {
		body := vectorBody(q)
		out, err := load.Call(ctx, c, "POST", ddsURL+"/api/v1/dynamic/"+vectorEntity+"/vector-search", key, body, http.StatusOK, nil)
		if err != nil {
			return 0, 0, err
		}
		var hits []struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.Unmarshal(out, &hits); err != nil || len(hits) != 10 {
			return 0, 0, fmt.Errorf("DDS's vector search answered %.300s", out)
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.Data.ID
		}
		viaDDS = append(viaDDS, ids)
		if out, err = load.Call(ctx, c, "POST", rawURL+"/search", "", body, http.StatusCreated, nil); err != nil {
			return 0, 0, err
		}
		var rows []struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(out, &rows); err != nil || len(rows) != 10 {
			return 0, 0, fmt.Errorf("the raw HNSW handler answered %.300s", out)
		}
		ids = make([]string, len(rows))
		for i, r := range rows {
			ids[i] = r.ID
		}
		viaRaw = append(viaRaw, ids)
	}
	return load.Recall(vs.exact, viaDDS), load.Recall(vs.exact, viaRaw), nil
}

// recallSweep reports the raw query's recall@10 at a few ef_search values.
func (b *bench) recallSweep(ctx context.Context, vs *vectorSet) (string, error) {
	out := "raw HNSW recall@10 by ef_search:"
	for i, ef := range []int{40, 100, 200, 300, 400} {
		r, err := b.rawRecallAt(ctx, vs, ef)
		if err != nil {
			return "", err
		}
		if i > 0 {
			out += ";"
		}
		out += fmt.Sprintf(" %d → %.4f", ef, r)
	}
	return out, nil
}

// rawRecallAt is the recall@10 of the raw HNSW query at ef_search ef (so
// the report shows which ef_search would reach the target).
func (b *bench) rawRecallAt(ctx context.Context, vs *vectorSet, ef int) (float64, error) {
	q := fmt.Sprintf(`SELECT "id"::text FROM %s ORDER BY "embedding" <=> $1::vector LIMIT 10`, b.scope.Table(vectorEntity))
	found := make([][]string, len(vs.queries))
	for i, v := range vs.queries {
		err := func() error {
			tx, err := b.db.BeginTxx(ctx, nil)
			if err != nil {
				return err
			}
			defer func() { _ = tx.Rollback() }()
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("SET LOCAL hnsw.ef_search = %d", ef)); err != nil {
				return err
			}
			return tx.SelectContext(ctx, &found[i], q, pgvector.NewVector(v))
		}()
		if err != nil {
			return 0, err
		}
	}
	return load.Recall(vs.exact, found), nil
}

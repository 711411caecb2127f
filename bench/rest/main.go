// Command rest is for profiling, not for the published figures: `make bench`
// measures batch create and vector search from outside the process with wrk
// (bench/cmd/ddsbench, sections batch and vector); this program runs DDS
// in-process (server.New), so a CPU profile of it shows the server's work.
// It benchmarks the query, batch and vector-search parts of the DDS REST
// API, each beside ceilings measured in the same run over the same Postgres
// and data:
//
//   - filtered list (100k rows, indexed equality filter, limit 20) through
//     POST /query with -concurrency clients, vs the same compiled SQL run
//     straight from Go, vs a minimal hand-written net/http handler running
//     that SQL (bench/load.MinimalServer); target ≥ 75 % of the minimal
//     handler;
//   - batch create of 1,000 items through HTTP (rows/s; target ≥ 20,000)
//     vs the same records.BatchCreate called in-process (no HTTP/JSON);
//   - vector search on -vectors × -dims vectors (clustered, like real
//     embeddings): QPS and recall@10 against exact search, vs raw pgvector
//     HNSW queries at pgvector's default ef_search and at DDS's ef_search
//     (target: recall ≥ 0.95 at ≥ 70 % of the raw HNSW QPS).
//
// DDS runs in this process (server.New on 127.0.0.1), as does the minimal
// handler; both share the machine with the load generator alike. Every loop
// is bounded in count and time; the whole run is capped at 15 minutes.
//
// Raw SQL on the tenant's tables here is deliberate (seeding, ANALYZE, the
// baselines DDS is measured against); DDS itself reaches them only through
// package records.
//
//	go run ./bench/rest [-duration 5s] [-concurrency 16] [-rows 100000] [-vectors 100000] [-dims 128]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/pgvector/pgvector-go"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/config"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/server"
)

// Targets of issue 3.
const (
	targetListRatio   = 0.75
	targetBatchRows   = 20000.0
	targetRecall      = 0.95
	targetVectorRatio = 0.70
	categories        = 100
	batchSize         = records.MaxBatch
)

type options struct {
	duration, warmup time.Duration
	concurrency      int
	rows, vectors    int
	dims, queries    int
	maxConns         int
	only             map[string]bool
}

func main() {
	var o options
	var only string
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured duration of each load run (capped at 1m)")
	flag.DurationVar(&o.warmup, "warmup", time.Second, "unmeasured warm-up before each load run")
	flag.IntVar(&o.concurrency, "concurrency", 16, "concurrent clients of the list and vector runs")
	flag.IntVar(&o.rows, "rows", 100000, "rows of the filtered-list entity (seeded by the batch section)")
	flag.IntVar(&o.vectors, "vectors", 100000, "vectors of the vector-search entity")
	flag.IntVar(&o.dims, "dims", 128, "vector dimensions")
	flag.IntVar(&o.queries, "queries", 200, "query vectors for recall@10")
	flag.IntVar(&o.maxConns, "max-conns", 40, "Postgres pool size of each contender")
	flag.StringVar(&only, "only", "batch,list,vector", "sections: batch, list, vector (list needs batch's rows)")
	flag.Parse()
	o.duration = min(max(o.duration, 100*time.Millisecond), time.Minute)
	o.rows = min(max(o.rows, batchSize), 1000000) / batchSize * batchSize
	o.vectors = min(max(o.vectors, 1000), 1000000)
	o.dims = min(max(o.dims, 2), 2000)
	o.queries = min(max(o.queries, 10), 2000)
	o.only = map[string]bool{}
	for _, s := range strings.Split(only, ",") {
		o.only[strings.TrimSpace(s)] = true
	}
	if o.only["list"] {
		o.only["batch"] = true
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/rest:", err)
		os.Exit(1)
	}
}

func step(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench/rest: "+format+"\n", args...)
}

type env struct {
	o      options
	url    string // DDS base URL
	key    string
	tenant string
	srv    *server.Server
	pool   *sqlx.DB
	client *http.Client
	table  load.Table
	lines  []string
}

func run(ctx context.Context, o options) error {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL is not set: run `make bench` (it starts Postgres and exports the environment)")
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	pool, err := db.Open(ctx, dbURL, o.maxConns)
	if err != nil {
		return err
	}
	defer pool.Close()
	if err := schema.Migrate(ctx, pool, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	// The configuration is loaded like `dds serve` loads it (so defaults
	// follow the config package), with this run's settings.
	tmp, err := os.MkdirTemp("", "bench-rest-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for k, v := range map[string]string{
		"DDS_HTTP_ADDR": "127.0.0.1:0", "DDS_PUBLIC_URL": "http://127.0.0.1:0", "DDS_ENV": "test",
		"DDS_JWT_SECRET": "bench-rest-jwt-secret-0123456789abcdef0123", "DDS_LOG_LEVEL": "warn",
		"DDS_MAX_BODY_BYTES": fmt.Sprint(64 << 20), "DDS_DB_MAX_CONNS": fmt.Sprint(o.maxConns),
		"DDS_RATE_GLOBAL": "0", "DDS_RATE_TENANT": "0", "DDS_RATE_AUTH": "0",
		"FILE_STORAGE_DRIVER": "local", "FILE_STORAGE_LOCAL_DIR": tmp, "FILE_STORAGE_LOCAL_SECRET": "bench-rest-local-secret-0123456789abcdef",
	} {
		os.Setenv(k, v)
	}
	cfg, err := config.Load()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return err
	}
	defer srv.Start(ctx, ln)()
	t, err := srv.Tenants.Create(ctx, "bench-rest-"+time.Now().UTC().Format("20060102-150405"))
	if err != nil {
		return err
	}
	defer func() { // the run's tables and events go with it
		if err := load.DropTenant(ctx, pool, t.TenantID); err != nil {
			fmt.Fprintln(os.Stderr, "bench/rest: cleanup:", err)
		}
	}()
	e := &env{o: o, url: "http://" + ln.Addr().String(), key: t.APIKey, tenant: t.TenantID, srv: srv, pool: pool, client: load.Client(o.concurrency)}
	def := map[string]any{"name": "bench", "entities": []any{
		map[string]any{"name": "Item", "fields": []any{
			map[string]any{"name": "name", "type": "STRING", "required": true},
			map[string]any{"name": "category", "type": "STRING", "indexed": true},
			map[string]any{"name": "price", "type": "NUMBER"},
			map[string]any{"name": "qty", "type": "INTEGER"},
			map[string]any{"name": "tags", "type": "STRING", "list": true},
		}},
		map[string]any{"name": "Doc", "fields": []any{
			map[string]any{"name": "title", "type": "STRING"},
			map[string]any{"name": "grp", "type": "INTEGER", "indexed": true},
			map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": o.dims},
		}},
	}}
	if _, err := e.do(ctx, "POST", "/api/v1/schemas", def, http.StatusCreated); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	fmt.Printf("\nDDS REST benchmark (issue 3): %d concurrent clients, %s per run (+%s warm-up), %d CPUs, Postgres pool %d per contender\n",
		o.concurrency, o.duration, o.warmup, runtime.NumCPU(), o.maxConns)
	if o.only["batch"] {
		if err := e.batch(ctx); err != nil {
			return err
		}
	}
	if o.only["list"] {
		if err := e.list(ctx); err != nil {
			return err
		}
	}
	if o.only["vector"] {
		if err := e.vector(ctx); err != nil {
			return err
		}
	}
	fmt.Println()
	e.table.Print(os.Stdout)
	fmt.Println()
	for _, l := range e.lines {
		fmt.Println(l)
	}
	return nil
}

// do sends one authenticated JSON request, expecting want.
func (e *env) do(ctx context.Context, method, path string, body any, want int) ([]byte, error) {
	return load.Call(ctx, e.client, method, e.url+path, e.key, body, want, nil)
}

func pass(ok bool) string {
	if ok {
		return "PASS"
	}
	return "BELOW TARGET"
}

func itemsBatch(start int) []any {
	items := make([]any, batchSize)
	for i := range items {
		n := start + i
		items[i] = map[string]any{"name": fmt.Sprintf("item %d", n), "category": fmt.Sprintf("c%02d", n%categories),
			"price": json.Number(fmt.Sprintf("%d.%02d", n%1000, n%100)), "qty": json.Number(fmt.Sprint(n % 50)), "tags": []any{"t" + fmt.Sprint(n%7)}}
	}
	return items
}

// batch seeds the list entity: a fifth of the rows through records.
// BatchCreate in-process (the baseline: the same validation and statement
// without HTTP and JSON), the rest through POST /batch; 4 concurrent
// writers each.
func (e *env) batch(ctx context.Context) error {
	total := e.o.rows / batchSize
	direct := max(total/5, 1)
	viaHTTP := total - direct
	step("batch: %d batches of %d in-process, %d through HTTP", direct, batchSize, viaHTTP)
	sc, err := e.srv.Records.Scope(ctx, records.SystemPrincipal(e.tenant))
	if err != nil {
		return err
	}
	bodies := make([][]byte, viaHTTP)
	for i := range bodies {
		bodies[i], _ = json.Marshal(map[string]any{"items": itemsBatch((direct + i) * batchSize)})
	}
	// Rounds alternate the two contenders so table growth and background
	// noise fall on both alike.
	const rounds = 4
	var next, k atomic.Int64
	var baseRuns, httpRuns []load.Result
	for round := 0; round < rounds; round++ {
		lo := load.Options{Concurrency: 4, Duration: 5 * time.Minute, MaxRequests: int64(direct*(round+1)/rounds - direct*round/rounds)}
		if lo.MaxRequests > 0 { // 0 would mean "bounded by time only"
			baseRuns = append(baseRuns, load.Run(ctx, "batch", lo, func(ctx context.Context) error {
				n := int(next.Add(1) - 1)
				// Round-trip through JSON so values arrive as the HTTP path sees them.
				var items []any
				b, _ := json.Marshal(itemsBatch(n * batchSize))
				d := json.NewDecoder(bytes.NewReader(b))
				d.UseNumber()
				if err := d.Decode(&items); err != nil {
					return err
				}
				res, err := e.srv.Records.BatchCreate(ctx, sc, "Item", items)
				if err == nil && res.Rejected() {
					err = fmt.Errorf("rejected: %+v", res.Failed[0])
				}
				return err
			}))
		}
		lo.MaxRequests = int64(viaHTTP*(round+1)/rounds - viaHTTP*round/rounds)
		if lo.MaxRequests == 0 {
			continue
		}
		httpRuns = append(httpRuns, load.HTTP(ctx, "batch", lo, e.client, func(ctx context.Context) (*http.Request, error) {
			i := int(k.Add(1)-1) % len(bodies)
			req, err := http.NewRequestWithContext(ctx, "POST", e.url+"/api/v1/dynamic/Item/batch", bytes.NewReader(bodies[i]))
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+e.key)
				req.Header.Set("Content-Type", "application/json")
			}
			return req, err
		}))
	}
	base := load.Merge("batch create in-process (records.BatchCreate)", baseRuns...)
	httpRes := load.Merge("batch create POST /batch (HTTP)", httpRuns...)
	if base.Errors > 0 || httpRes.Errors > 0 {
		return fmt.Errorf("batch errors: %s / %s", base.FirstError, httpRes.FirstError)
	}
	if _, err := e.pool.ExecContext(ctx, `ANALYZE `+sc.Table("Item")); err != nil {
		return err
	}
	e.table.Section("BATCH CREATE (1,000 items per request, 4 writers; req/s = batches/s)")
	e.table.Add(base)
	e.table.Add(httpRes, base)
	rows := httpRes.RPS * batchSize
	e.lines = append(e.lines, fmt.Sprintf("batch  DDS HTTP = %.0f rows/s (target ≥ %.0f): %s;  in-process = %.0f rows/s;  HTTP = %.1f%% of in-process",
		rows, targetBatchRows, pass(rows >= targetBatchRows), base.RPS*batchSize, 100*load.Ratio(httpRes, base)))
	return nil
}

// list measures the filtered list: category = cNN (btree-indexed, 1 % of
// the rows), limit 20.
func (e *env) list(ctx context.Context) error {
	step("list: filtered list over %d rows", e.o.rows)
	sc, err := e.srv.Records.Scope(ctx, records.SystemPrincipal(e.tenant))
	if err != nil {
		return err
	}
	plan := func(cat string) query.List {
		return query.List{Entity: "Item", Where: query.Cond{Field: "category", Op: query.Eq, Value: cat}, Limit: 20}
	}
	st, err := sc.ListStatement(plan("c00"))
	if err != nil {
		return err
	}
	// The category is the first bound value; the rest (if any) are bound
	// as compiled, so the ceilings run DDS's statement whatever else it binds.
	if len(st.Args) == 0 || st.Args[0] != "c00" {
		return fmt.Errorf("the list statement binds %v, the bench expects the category first", st.Args)
	}
	args := func(c string) []any { return append([]any{c}, st.Args[1:]...) }
	cat := func() string { return fmt.Sprintf("c%02d", rand.IntN(categories)) }
	m, err := load.MinimalServer(e.pool.DB, st.SQL, func(r *http.Request) []any {
		return args(r.URL.Query().Get("c"))
	})
	if err != nil {
		return err
	}
	defer m.Close()
	// The three contenders return the same JSON.
	want, err := e.direct(ctx, st.SQL, args("c42")...)
	if err != nil {
		return err
	}
	got, err := e.do(ctx, "POST", "/api/v1/dynamic/Item/query", map[string]any{"where": map[string]any{"category": "c42"}, "limit": 20}, 200)
	if err != nil {
		return err
	}
	if !sameJSON(want, got) {
		return fmt.Errorf("DDS and direct SQL differ:\n%.300s\n%.300s", got, want)
	}
	var page struct{ Items []any }
	if json.Unmarshal(got, &page) != nil || len(page.Items) != 20 {
		return fmt.Errorf("filtered list returned %d items, want 20", len(page.Items))
	}
	lo := load.Options{Concurrency: e.o.concurrency, Duration: e.o.duration, Warmup: e.o.warmup}
	direct := load.Run(ctx, "list direct SQL", lo, func(ctx context.Context) error {
		_, err := e.direct(ctx, st.SQL, args(cat())...)
		return err
	})
	minimal := load.HTTP(ctx, "list minimal handler", lo, e.client, func(ctx context.Context) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, "GET", m.URL+"/items?c="+cat(), nil)
	})
	dds := load.HTTP(ctx, "list DDS POST /query", lo, e.client, func(ctx context.Context) (*http.Request, error) {
		body := `{"where":{"category":"` + cat() + `"},"limit":20}`
		req, err := http.NewRequestWithContext(ctx, "POST", e.url+"/api/v1/dynamic/Item/query", strings.NewReader(body))
		if err == nil {
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	})
	e.table.Section(fmt.Sprintf("FILTERED LIST (%d rows, indexed equality filter, limit 20)", e.o.rows))
	e.table.Add(direct)
	e.table.Add(minimal, direct)
	e.table.Add(dds, minimal, direct)
	r := load.Ratio(dds, minimal)
	e.lines = append(e.lines, fmt.Sprintf("list   DDS = %.1f%% of the minimal handler (target ≥ %.0f%%): %s;  %.1f%% of direct SQL",
		100*r, 100*targetListRatio, pass(r >= targetListRatio && dds.Errors == 0), 100*load.Ratio(dds, direct)))
	return nil
}

func (e *env) direct(ctx context.Context, q string, args ...any) ([]byte, error) {
	var out []byte
	err := e.pool.QueryRowContext(ctx, q, args...).Scan(&out)
	return out, err
}

func sameJSON(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}

func (e *env) vector(ctx context.Context) error {
	dims := e.o.dims
	g := load.NewVectors(dims)
	sc, err := e.srv.Records.Scope(ctx, records.SystemPrincipal(e.tenant))
	if err != nil {
		return err
	}
	// Bulk load first, then build the HNSW index (what a user loading a
	// corpus does; an index maintained row by row is several times slower).
	table := sc.Table("Doc")
	var idxName, idxDef string
	if err := e.pool.QueryRowContext(ctx, `SELECT quote_ident(schemaname) || '.' || quote_ident(indexname), indexdef FROM pg_indexes
		WHERE schemaname = $1 AND tablename = 'Doc' AND indexdef LIKE '%hnsw%'`, sc.Schema.PgSchema).Scan(&idxName, &idxDef); err != nil {
		return fmt.Errorf("find the HNSW index: %w", err)
	}
	if _, err := e.pool.ExecContext(ctx, "DROP INDEX "+idxName); err != nil {
		return err
	}
	step("vector: seeding %d × %d-dim vectors (in-process batches)", e.o.vectors, dims)
	n := (e.o.vectors + batchSize - 1) / batchSize
	var next atomic.Int64
	t0 := time.Now()
	seed := load.Run(ctx, "seed", load.Options{Concurrency: 4, Duration: 10 * time.Minute, MaxRequests: int64(n)}, func(ctx context.Context) error {
		b := int(next.Add(1) - 1)
		items := make([]any, batchSize)
		for i := range items {
			v := g.Next()
			nums := make([]any, dims)
			for j, x := range v {
				nums[j] = json.Number(fmt.Sprint(x))
			}
			items[i] = map[string]any{"title": fmt.Sprintf("doc %d", b*batchSize+i), "grp": json.Number(fmt.Sprint(i % 10)), "embedding": nums}
		}
		res, err := e.srv.Records.BatchCreate(ctx, sc, "Doc", items)
		if err == nil && res.Rejected() {
			err = fmt.Errorf("rejected: %+v", res.Failed[0])
		}
		return err
	})
	if seed.Errors > 0 {
		return fmt.Errorf("seed vectors: %s", seed.FirstError)
	}
	step("vector: seeded in %s; building the HNSW index", time.Since(t0).Round(time.Second))
	t0 = time.Now()
	conn, err := e.pool.Connx(ctx)
	if err != nil {
		return err
	}
	_, err = conn.ExecContext(ctx, "SET maintenance_work_mem = '1GB'; SET max_parallel_maintenance_workers = 4; "+idxDef)
	conn.Close()
	if err != nil {
		return fmt.Errorf("build the HNSW index: %w", err)
	}
	step("vector: HNSW index built in %s", time.Since(t0).Round(time.Second))
	if _, err := e.pool.ExecContext(ctx, "ANALYZE "+table); err != nil {
		return err
	}
	queries := make([][]float32, e.o.queries)
	for i := range queries {
		queries[i] = g.Next()
	}
	step("vector: exact top-10 of %d queries (sequential scans)", len(queries))
	exact := make([]map[string]bool, len(queries))
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	var qi atomic.Int64
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(qi.Add(1) - 1)
				if i >= len(queries) || ctx.Err() != nil {
					return
				}
				ids, err := e.exactTop(ctx, table, queries[i])
				if err != nil {
					errc <- err
					return
				}
				exact[i] = ids
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
	}
	ef := query.VectorEfSearch(10)
	rawDefault, err := sqlx.Open("postgres", load.WithOptions(os.Getenv("DATABASE_URL"), "-c hnsw.ef_search=40"))
	if err != nil {
		return err
	}
	defer rawDefault.Close()
	rawEf, err := sqlx.Open("postgres", load.WithOptions(os.Getenv("DATABASE_URL"), fmt.Sprintf("-c hnsw.ef_search=%d", ef)))
	if err != nil {
		return err
	}
	defer rawEf.Close()
	for _, p := range []*sqlx.DB{rawDefault, rawEf} {
		p.SetMaxOpenConns(e.o.maxConns)
		p.SetMaxIdleConns(e.o.maxConns)
	}
	rawSQL := fmt.Sprintf(`SELECT id::text FROM %s ORDER BY "embedding" <=> $1::vector LIMIT 10`, table)
	raw := func(p *sqlx.DB) func(ctx context.Context, q []float32) ([]string, error) {
		return func(ctx context.Context, q []float32) ([]string, error) {
			var ids []string
			err := p.SelectContext(ctx, &ids, rawSQL, pgvector.NewVector(q))
			return ids, err
		}
	}
	ddsSearch := func(ctx context.Context, q []float32) ([]string, error) {
		body, _ := json.Marshal(map[string]any{"field": "embedding", "vector": q, "topK": 10, "select": []string{"title"}})
		req, err := http.NewRequestWithContext(ctx, "POST", e.url+"/api/v1/dynamic/Doc/vector-search", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+e.key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.client.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			b, _ := io.ReadAll(resp.Body)
			return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, b)
		}
		var hits []struct {
			Data struct {
				ID string `json:"id"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&hits); err != nil {
			return nil, err
		}
		ids := make([]string, len(hits))
		for i, h := range hits {
			ids[i] = h.Data.ID
		}
		return ids, nil
	}
	recall := func(fn func(ctx context.Context, q []float32) ([]string, error)) (float64, error) {
		found := 0
		for i, q := range queries {
			ids, err := fn(ctx, q)
			if err != nil {
				return 0, err
			}
			for _, id := range ids {
				if exact[i][id] {
					found++
				}
			}
		}
		return float64(found) / float64(10*len(queries)), nil
	}
	// The minimal handler runs the statement DDS compiles for this search,
	// one per request, decoding only the vector from the body.
	zero := make([]any, dims)
	for i := range zero {
		zero[i] = 0.0
	}
	vst, err := sc.VectorStatement(query.VectorSearch{Entity: "Doc", Field: "embedding", Vector: zero, TopK: 10,
		Select: query.Selection{Fields: []string{"title"}}})
	if err != nil {
		return err
	}
	if len(vst.Setup) != 0 {
		return errors.New("an unfiltered top-10 search should need no setup")
	}
	m, err := load.MinimalServer(e.pool.DB, vst.SQL, func(r *http.Request) []any {
		var b struct{ Vector []float32 }
		if json.NewDecoder(r.Body).Decode(&b) != nil || len(b.Vector) != dims {
			return nil
		}
		return []any{pgvector.NewVector(b.Vector)}
	})
	if err != nil {
		return err
	}
	defer m.Close()
	bodies := make([][]byte, len(queries))
	for i, q := range queries {
		bodies[i], _ = json.Marshal(map[string]any{"field": "embedding", "vector": q, "topK": 10, "select": []string{"title"}})
	}
	post := func(base, path string, auth bool) func(ctx context.Context) (*http.Request, error) {
		return func(ctx context.Context) (*http.Request, error) {
			req, err := http.NewRequestWithContext(ctx, "POST", base+path, bytes.NewReader(bodies[rand.IntN(len(bodies))]))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
				if auth {
					req.Header.Set("Authorization", "Bearer "+e.key)
				}
			}
			return req, err
		}
	}
	contenders := []struct {
		name string
		fn   func(ctx context.Context, q []float32) ([]string, error)
		http func(ctx context.Context) (*http.Request, error)
	}{
		{"vector raw pgvector HNSW (ef_search 40, default)", raw(rawDefault), nil},
		{fmt.Sprintf("vector raw pgvector HNSW (ef_search %d)", ef), raw(rawEf), nil},
		{"vector minimal handler (DDS's SQL)", nil, post(m.URL, "/search", false)},
		{"vector DDS POST /vector-search", ddsSearch, post(e.url, "/api/v1/dynamic/Doc/vector-search", true)},
	}
	results := make([]load.Result, len(contenders))
	recalls := make([]float64, len(contenders))
	lo := load.Options{Concurrency: e.o.concurrency, Duration: e.o.duration, Warmup: e.o.warmup}
	for i, c := range contenders {
		step("vector: %s", c.name)
		name := c.name
		if c.fn != nil {
			if recalls[i], err = recall(c.fn); err != nil {
				return fmt.Errorf("%s: %w", c.name, err)
			}
			name = fmt.Sprintf("%s, recall@10 %.3f", c.name, recalls[i])
		}
		if c.http != nil {
			results[i] = load.HTTP(ctx, name, lo, e.client, c.http)
			continue
		}
		results[i] = load.Run(ctx, name, lo, func(ctx context.Context) error {
			_, err := c.fn(ctx, queries[rand.IntN(len(queries))])
			return err
		})
	}
	recalls = append(recalls[:2], recalls[3])
	e.table.Section(fmt.Sprintf("VECTOR SEARCH (%d × %d dims, topK 10, HNSW cosine; req/s = QPS)", e.o.vectors, dims))
	e.table.Add(results[0])
	e.table.Add(results[1], results[0])
	e.table.Add(results[2], results[1])
	e.table.Add(results[3], results[2], results[1])
	results = append(results[:2], results[3])
	r := load.Ratio(results[2], results[1])
	e.lines = append(e.lines, fmt.Sprintf("vector DDS recall@10 = %.3f (target ≥ %.2f): %s;  QPS = %.1f%% of raw HNSW at the same ef_search %d (target ≥ %.0f%%): %s;  %.1f%% of raw HNSW at ef_search 40 (recall %.3f)",
		recalls[2], targetRecall, pass(recalls[2] >= targetRecall), 100*r, ef, 100*targetVectorRatio, pass(r >= targetVectorRatio && results[2].Errors == 0),
		100*load.Ratio(results[2], results[0]), recalls[0]))
	return nil
}

// exactTop is the exact top 10 by cosine distance (index scans off).
func (e *env) exactTop(ctx context.Context, table string, q []float32) (map[string]bool, error) {
	tx, err := e.pool.BeginTxx(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off"); err != nil {
		return nil, err
	}
	var ids []string
	if err := tx.SelectContext(ctx, &ids, fmt.Sprintf(`SELECT id::text FROM %s ORDER BY "embedding" <=> $1::vector LIMIT 10`, table), pgvector.NewVector(q)); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, id := range ids {
		out[id] = true
	}
	return out, nil
}

// Command graphql is for profiling, not for the published figures: `make
// bench` measures the nested query from outside the process with wrk
// (bench/cmd/ddsbench, section nested, with PostGraphile next to it); this
// program serves GraphQL in-process, so a CPU profile of it shows the front
// end's work. It benchmarks the GraphQL API on a list query with two
// nested relationship levels (20 products × 10 categories × 10 products)
// against the minimal hand-written handler serving the very SQL statement
// DDS compiled for that query (bench/load): the ratio is what GraphQL
// parsing, validation, planning, authentication and response reshaping
// cost on top of the database round trip.
//
// Raw SQL on the tenant's tables here is deliberate (seeding, ANALYZE, the
// baselines DDS is measured against); DDS itself reaches them only through
// package records.
//
//	go run ./bench/graphql [-duration 10s] [-c 16]
//
// Needs DATABASE_URL (make bench, or DATABASE_URL=$DDS_BENCH_DATABASE_URL after `source .dds/env`).
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
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/api/graphql"
	"github.com/dds-project/dds/auth"
	"github.com/dds-project/dds/bench/load"
	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

const gqlQuery = `{ products(limit: 20, orderBy: [{field: "name"}]) {
  id name price
  categories(limit: 10, orderBy: [{field: "name"}]) { id name products(limit: 10, orderBy: [{field: "name"}]) { id name price } }
} }`

const flatQuery = `{ products(limit: 20, orderBy: [{field: "name"}]) { id name price } }`

// capture records the statement the engine last ran, so the minimal
// handler can serve exactly that statement.
type capture struct {
	mu   sync.Mutex
	sql  string
	args []any
}

func (c *capture) observe(st query.Statement) {
	c.mu.Lock()
	c.sql, c.args = st.SQL, st.Args
	c.mu.Unlock()
}

func main() {
	dur := flag.Duration("duration", 10*time.Second, "measured time per run")
	conc := flag.Int("c", 16, "concurrent clients")
	flag.Parse()
	if err := run(*dur, *conc); err != nil {
		fmt.Fprintln(os.Stderr, "bench/graphql:", err)
		os.Exit(1)
	}
}

func run(dur time.Duration, conc int) error {
	ctx := context.Background()
	url := os.Getenv("DATABASE_URL")
	if url == "" {
		return fmt.Errorf("DATABASE_URL is not set: run `make bench BENCHES=graphql`, or source .dds/env and use $DDS_BENCH_DATABASE_URL")
	}
	d, t, drop, err := load.Tenant(ctx, url, "bench-graphql", conc+8)
	if err != nil {
		return err
	}
	defer drop() // the bench tenant's tables and events go with it
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	schemas := schema.NewService(d)
	def := &schema.Definition{Name: "bench", Entities: []schema.Entity{
		{Name: "Product", Fields: []schema.Field{{Name: "name", Type: schema.String, Required: true}, {Name: "price", Type: schema.Number}}},
		{Name: "Category", Fields: []schema.Field{{Name: "name", Type: schema.String, Required: true}}},
	}, Relationships: []schema.Relationship{{Name: "IN_CATEGORY", From: "Product", To: "Category", FromField: "categories", ToField: "products"}}}
	info, err := schemas.Create(ctx, t.TenantID, def)
	if err != nil {
		return err
	}
	pg := schema.PgSchemaName(info.ID)
	// 200 products, 20 categories; product i is in categories i..i+9 (mod 20),
	// so every category holds 100 products.
	var pids, cids []string
	for i := 0; i < 200; i++ {
		pids = append(pids, uuid.Must(uuid.NewV7()).String())
	}
	for i := 0; i < 20; i++ {
		cids = append(cids, uuid.Must(uuid.NewV7()).String())
	}
	tx := d.MustBegin()
	for i, id := range pids {
		tx.MustExec(`INSERT INTO `+schema.QualifiedIdent(pg, "Product")+` (id, name, price) VALUES ($1, $2, $3)`, id, fmt.Sprintf("product %03d", i), float64(i)+0.5)
	}
	for i, id := range cids {
		tx.MustExec(`INSERT INTO `+schema.QualifiedIdent(pg, "Category")+` (id, name) VALUES ($1, $2)`, id, fmt.Sprintf("category %02d", i))
	}
	for i, p := range pids {
		for k := 0; k < 10; k++ {
			tx.MustExec(`INSERT INTO `+schema.QualifiedIdent(pg, "IN_CATEGORY")+` (id, source_id, target_id) VALUES ($1, $2, $3)`,
				uuid.Must(uuid.NewV7()).String(), p, cids[(i+k)%20])
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := d.ExecContext(ctx, `ANALYZE `+schema.QualifiedIdent(pg, "IN_CATEGORY")); err != nil {
		return err
	}

	// The GraphQL server: production router, authenticator and handler.
	authn := auth.NewAuthenticator(d, "live", []byte("bench-graphql-secret-0123456789abcdef"), time.Hour, log)
	store := records.NewStore(d, schemas, nil)
	cap := &capture{}
	router := api.NewRouter(authn, nil, 16<<20)
	observed := store.Observed(cap.observe)
	graphql.NewHandler(gql.NewEngine(observed, gql.Limits{}, log), observed, nil, log).Routes(router)
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: router}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintln(os.Stderr, "bench/graphql: serve:", err)
		}
	}()
	defer srv.Close()
	gqlURL := "http://" + ln.Addr().String() + "/api/v1/dynamic-gql/" + t.TenantID
	client := load.Client(conc)
	opts := load.Options{Concurrency: conc, Duration: dur, Warmup: 2 * time.Second}
	// measure checks one answer, captures the statement the engine sent,
	// then loads GraphQL and a minimal handler serving that same statement.
	measure := func(name, query string, check func([]byte) error) (base, gql load.Result, size int, stmt string, err error) {
		body, _ := json.Marshal(map[string]any{"query": query})
		newReq := func(ctx context.Context) (*http.Request, error) {
			r, err := http.NewRequestWithContext(ctx, "POST", gqlURL, bytes.NewReader(body))
			if err != nil {
				return nil, err
			}
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Authorization", "Bearer "+t.APIKey)
			return r, nil
		}
		req, _ := newReq(ctx)
		resp, err := client.Do(req)
		if err != nil {
			return base, gql, 0, "", err
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err := check(out); err != nil {
			return base, gql, 0, "", fmt.Errorf("%s: GraphQL answered %d: %w", name, resp.StatusCode, err)
		}
		cap.mu.Lock()
		stmt, args := cap.sql, cap.args
		cap.mu.Unlock()
		// A fresh non-nil slice per request: nil would mean a bad request, and
		// the nested and flat statements bind no values (LIMIT is literal).
		minimal, err := load.MinimalServer(d.DB, stmt, func(*http.Request) []any { return append([]any{}, args...) })
		if err != nil {
			return base, gql, 0, "", err
		}
		defer minimal.Close()
		base = load.HTTP(ctx, "minimal handler, same SQL ("+name+")", opts, client, func(ctx context.Context) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, "GET", minimal.URL+"/", nil)
		})
		gql = load.HTTP(ctx, "GraphQL "+name, opts, client, newReq)
		return base, gql, len(out), stmt, nil
	}

	nestedBase, nested, size, stmt, err := measure("products→categories→products (20×10×10)", gqlQuery, func(out []byte) error {
		var res struct {
			Data struct {
				Products []struct {
					Categories []struct {
						Products []json.RawMessage
					}
				}
			}
			Errors []any
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Errors) > 0 {
			return fmt.Errorf("%s", out)
		}
		leaves := 0
		for _, p := range res.Data.Products {
			for _, c := range p.Categories {
				leaves += len(c.Products)
			}
		}
		if len(res.Data.Products) != 20 || leaves != 2000 {
			return fmt.Errorf("unexpected shape: %d products, %d leaf products", len(res.Data.Products), leaves)
		}
		return nil
	})
	if err != nil {
		return err
	}
	flatBase, flat, flatSize, _, err := measure("flat list (20 rows)", flatQuery, func(out []byte) error {
		var res struct {
			Data   struct{ Products []json.RawMessage }
			Errors []any
		}
		if err := json.Unmarshal(out, &res); err != nil || len(res.Errors) > 0 || len(res.Data.Products) != 20 {
			return fmt.Errorf("%s", out)
		}
		return nil
	})
	if err != nil {
		return err
	}

	fmt.Printf("GraphQL nested list: %d bytes per response, one SQL statement (%d characters); flat list: %d bytes\n", size, len(stmt), flatSize)
	fmt.Printf("concurrency %d, %s per run after a 2 s warm-up\n\n", conc, dur)
	var tb load.Table
	tb.Add(nestedBase)
	tb.Add(nested, nestedBase)
	tb.Add(flatBase)
	tb.Add(flat, flatBase)
	tb.Print(os.Stdout)
	fmt.Printf("\nGraphQL / minimal handler: nested %.0f %%, flat %.0f %% (in-process, for profiling: make bench measures with wrk)\n",
		100*load.Ratio(nested, nestedBase), 100*load.Ratio(flat, flatBase))
	var errs []string
	for _, r := range []load.Result{nestedBase, nested, flatBase, flat} {
		if strings.TrimSpace(r.FirstError) != "" {
			errs = append(errs, r.Name+": "+strings.TrimSpace(r.FirstError))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("requests failed, the ratios mean nothing:\n%s", strings.Join(errs, "\n"))
	}
	return nil
}

// Command replicas benchmarks read throughput with and without a streaming
// read replica (DATABASE_REPLICA_URLS), in one run over the same primary,
// replica and table: `dds serve` (built from this tree, run as child
// processes) serves GET by id and a filtered list page, with 1 server and
// no replica (the baseline), 1 server and 1 replica, 2 servers and no
// replica, 2 servers and 1 replica. Each row shows req/s as a ratio to the
// baseline's, and the CPU each request cost: Postgres on the primary
// (which still answers every read's barrier), Postgres on the replica, the
// dds servers, and the cores all of them and the load generator kept busy,
// which says where this machine caps the throughput.
//
// Raw SQL on the tenant's table here is deliberate (seeding); DDS itself
// reaches it only through package records.
//
//	make bench BENCHES=replicas
//	DATABASE_URL=... DDS_TEST_REPLICA_URL=... go run ./bench/replicas -duration 5s
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/db"
)

type options struct {
	records     int
	duration    time.Duration
	warmup      time.Duration
	concurrency int
}

func main() {
	var o options
	flag.IntVar(&o.records, "records", 100_000, "records seeded")
	flag.DurationVar(&o.duration, "duration", 8*time.Second, "measured time per load and topology")
	flag.DurationVar(&o.warmup, "warmup", 2*time.Second, "unmeasured load before each measurement")
	flag.IntVar(&o.concurrency, "concurrency", 32, "concurrent clients")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/replicas:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dbURL, replicaURL := os.Getenv("DATABASE_URL"), os.Getenv("DDS_TEST_REPLICA_URL")
	if dbURL == "" || replicaURL == "" {
		return errors.New("DATABASE_URL and DDS_TEST_REPLICA_URL must be set (run through make bench, whose stack has a replica)")
	}
	work, err := os.MkdirTemp("", "dds-bench-replicas-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "dds")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/dds").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	d, created, drop, err := load.Tenant(ctx, dbURL, "bench-replicas", 4)
	if err != nil {
		return err
	}
	defer drop()
	replica, err := db.Open(ctx, replicaURL, 2)
	if err != nil {
		return fmt.Errorf("the replica: %w", err)
	}
	defer replica.Close()
	primaryCPU, err := load.FindPostgres(ctx, d)
	if err != nil {
		return err
	}
	replicaCPU, err := load.FindPostgres(ctx, replica)
	if err != nil {
		return err
	}

	// One server to create the schema and seed through.
	env := load.ServerEnv(work)
	c := load.Client(o.concurrency)
	setup, err := serve(ctx, bin, env)
	if err != nil {
		return err
	}
	_, err = load.Call(ctx, c, "POST", setup.URL+"/api/v1/schemas", created.APIKey, load.ProductSchema(), http.StatusCreated, nil)
	setup.Stop()
	if err != nil {
		return err
	}
	ids, err := load.SeedProducts(ctx, d, dbURL, created.TenantID, o.records)
	if err != nil {
		return err
	}
	if err := awaitReplay(ctx, d, replica); err != nil {
		return err
	}

	loads := []struct {
		name string
		path func() string
	}{
		{"GET by id", func() string { return "/api/v1/dynamic/Product/" + ids[rand.IntN(len(ids))] }},
		{"GET list (price range, 20)", func() string {
			lo := rand.IntN(990)
			return "/api/v1/dynamic/Product?limit=20&where=" + url.QueryEscape(fmt.Sprintf(`{"price":{"$gte":%d,"$lt":%d}}`, lo, lo+10))
		}},
	}
	topologies := []struct {
		name     string
		servers  int
		replicas bool
	}{{"1 server, primary only", 1, false}, {"1 server + replica", 1, true}, {"2 servers, primary only", 2, false}, {"2 servers + replica", 2, true}}

	fmt.Printf("\nDDS read replicas: %d records, %d concurrent clients, %s per run (+%s warm-up), %d CPUs\n",
		o.records, o.concurrency, o.duration, o.warmup, runtime.NumCPU())
	var table load.Table
	var cpu bytes.Buffer
	tw := tabwriter.NewWriter(&cpu, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\t PG primary µs/req\t PG replica µs/req\t dds µs/req\t cores busy\t replica share\t")
	baselines := make([]load.Result, len(loads))
	for _, tp := range topologies {
		servers := make([]*load.Process, 0, tp.servers)
		for range tp.servers {
			e := env
			if tp.replicas {
				e = append(append([]string{}, env...), "DATABASE_REPLICA_URLS="+replicaURL)
			}
			s, err := serve(ctx, bin, e)
			if err != nil {
				return err
			}
			defer s.Stop()
			servers = append(servers, s)
		}
		for i, l := range loads {
			name := tp.name + ": " + l.name
			next := func(ctx context.Context) (*http.Request, error) {
				s := servers[rand.IntN(len(servers))]
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+l.path(), nil)
				if err == nil {
					req.Header.Set("Authorization", "Bearer "+created.APIKey)
				}
				return req, err
			}
			load.HTTP(ctx, name, load.Options{Concurrency: o.concurrency, Duration: o.warmup}, c, next)
			before, err := sample(servers, primaryCPU, replicaCPU)
			if err != nil {
				return err
			}
			res := load.HTTP(ctx, name, load.Options{Concurrency: o.concurrency, Duration: o.duration}, c, next)
			after, err := sample(servers, primaryCPU, replicaCPU)
			if err != nil {
				return err
			}
			if tp.servers == 1 && !tp.replicas {
				baselines[i] = res
				table.Add(res)
			} else {
				table.Add(res, baselines[i])
			}
			ok := float64(res.Requests - res.Errors)
			per := func(s float64) string {
				if ok == 0 {
					return "-"
				}
				return fmt.Sprintf("%.0f", 1e6*s/ok)
			}
			share := "-"
			if reads := after.replicaReads + after.primaryReads - before.replicaReads - before.primaryReads; reads > 0 {
				share = fmt.Sprintf("%.0f%%", 100*(after.replicaReads-before.replicaReads)/reads)
			}
			busy := (after.primary - before.primary + after.replica - before.replica + after.dds - before.dds + after.self - before.self) / res.Elapsed.Seconds()
			fmt.Fprintf(tw, "%s\t %s\t %s\t %s\t %.2f of %d\t %s\t\n", name, per(after.primary-before.primary), per(after.replica-before.replica),
				per(after.dds-before.dds), busy, runtime.NumCPU(), share)
		}
		for _, s := range servers {
			s.Stop()
		}
	}
	fmt.Println()
	table.Print(os.Stdout)
	tw.Flush()
	fmt.Println()
	fmt.Print(cpu.String())
	fmt.Println("\ncores busy: Postgres (primary and replica), the dds servers and this load generator, over the run's time.")
	return nil
}

// awaitReplay waits until the replica has replayed the seed.
func awaitReplay(ctx context.Context, primary, replica *sqlx.DB) error {
	var lsn string
	if err := primary.GetContext(ctx, &lsn, `SELECT pg_current_wal_insert_lsn()::text`); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var done bool
		if err := replica.GetContext(ctx, &done, `SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn`, lsn); err != nil {
			return err
		}
		if done {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the replica did not replay the seed within 2 minutes")
		}
		time.Sleep(50 * time.Millisecond) // replay runs on its own schedule
	}
}

type cpuSample struct {
	primary, replica, dds, self float64
	replicaReads, primaryReads  float64
}

func sample(servers []*load.Process, primary, replica load.PostgresCPU) (cpuSample, error) {
	var s cpuSample
	var err error
	if s.primary, err = primary.Seconds(); err != nil {
		return s, err
	}
	if s.replica, err = replica.Seconds(); err != nil {
		return s, err
	}
	if s.self, err = load.ProcessCPU(os.Getpid()); err != nil {
		return s, err
	}
	for _, c := range servers {
		v, err := load.ProcessCPU(c.Cmd.Process.Pid)
		if err != nil {
			return s, err
		}
		s.dds += v
		var m []byte
		if m, err = load.Call(context.Background(), http.DefaultClient, "GET", c.URL+"/metrics", "", nil, http.StatusOK, nil); err != nil {
			return s, err
		}
		for _, line := range strings.Split(string(m), "\n") {
			var v float64
			if _, err := fmt.Sscanf(line, `dds_db_reads_total{target="replica"} %g`, &v); err == nil {
				s.replicaReads += v
			} else if _, err := fmt.Sscanf(line, `dds_db_reads_total{target="primary"} %g`, &v); err == nil {
				s.primaryReads += v
			}
		}
	}
	return s, nil
}

// serve starts one `dds serve` on a free port.
func serve(ctx context.Context, bin string, env []string) (*load.Process, error) {
	addr, err := load.FreeAddr()
	if err != nil {
		return nil, err
	}
	return load.Serve(ctx, bin, env, addr)
}

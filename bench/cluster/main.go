// Command cluster is the production topology's scaling table (make
// cluster-bench, over the cluster-check stack): wrk drives REST GET by id
// and a filtered list page through HAProxy with 1, 2 and 3 `dds serve`, with
// no replica and with the stack's streaming replica (DATABASE_REPLICA_URLS),
// next to one server reached directly (the baseline); and the write path
// (REST create) through PgBouncer in transaction mode next to one server
// with direct connections. Each row shows req/s as a ratio to its baseline
// and the CPU per request of Postgres (primary and replica: the postmaster
// and its children, from /proc), of the dds servers, and the cores busy.
//
// Raw SQL on the tenant's table here is deliberate (seeding); DDS itself
// reaches it only through package records.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/db"
)

type options struct {
	bin, haproxy string
	records      int
	duration     time.Duration
	warmup       time.Duration
	concurrency  int
	port         int
	writeRounds  int
	only         string
}

func main() {
	var o options
	flag.StringVar(&o.bin, "bin", "bin/dds", "the dds binary")
	flag.StringVar(&o.haproxy, "haproxy", "haproxy", "the HAProxy binary")
	flag.IntVar(&o.records, "records", 20_000, "records seeded")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "measured time per load and topology (after the warm-up)")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "unmeasured load before each measurement: every run starts its servers afresh, and their pools' Postgres backends start cold")
	flag.IntVar(&o.concurrency, "concurrency", 32, "wrk connections")
	flag.IntVar(&o.port, "port", 18180, "HAProxy's port; the servers use the next ones")
	flag.StringVar(&o.only, "only", "", "reads or writes: run only that part")
	flag.IntVar(&o.writeRounds, "write-rounds", 4, "rounds of the write path, each measuring direct and PgBouncer (ABBA order)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/cluster:", err)
		os.Exit(1)
	}
}

type row struct {
	name                 string
	rps, ratio           float64
	errors               int64
	primary, replica, dd float64 // µs per request
	busy                 float64
}

func run(ctx context.Context, o options) error {
	dbURL, replicaURL, pooled := os.Getenv("DATABASE_URL"), os.Getenv("DDS_TEST_REPLICA_URL"), os.Getenv("DDS_TEST_PGBOUNCER_URL")
	if dbURL == "" || replicaURL == "" || pooled == "" {
		return errors.New("DATABASE_URL, DDS_TEST_REPLICA_URL and DDS_TEST_PGBOUNCER_URL must be set: run `make cluster-bench`")
	}
	work, err := os.MkdirTemp("", "dds-bench-cluster-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	const dbName = "dds_cluster_bench"
	if dbURL, err = db.EnsureDatabase(ctx, dbURL, dbName); err != nil {
		return err
	}
	d, created, drop, err := load.Tenant(ctx, dbURL, "bench-cluster", 4)
	if err != nil {
		return err
	}
	defer drop()
	// Production commits synchronously (the replica's barrier reads the flush position).
	if _, err := d.ExecContext(ctx, fmt.Sprintf(`ALTER DATABASE %q SET synchronous_commit = on`, dbName)); err != nil {
		return err
	}
	replica, err := db.Open(ctx, withDB(replicaURL, dbName), 2)
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
	base := load.ServerEnv(work)
	if t := os.Getenv("DDS_TEMPORAL_SERVER_ADDRESS"); t != "" {
		base = append(base, "TEMPORAL_ADDRESS="+t)
	}
	direct := append(append([]string{}, base...), "DATABASE_URL="+withDB(dbURL, dbName))
	viaPooler := append(append([]string{}, base...), "DATABASE_URL="+withDB(pooled, dbName), "DATABASE_DIRECT_URL="+withDB(dbURL, dbName), "DDS_DB_POOL_MODE=transaction")
	// A replica reached directly beside a pooled primary carries what the pooler's connect_query sets.
	replicaEnv := "DATABASE_REPLICA_URLS=" + load.WithOptions(withDB(replicaURL, dbName), "-c jit=off -c hnsw.ef_search=400")

	setup, err := load.Serve(ctx, o.bin, direct, fmt.Sprintf("127.0.0.1:%d", o.port+1))
	if err != nil {
		return err
	}
	_, err = load.Call(ctx, load.Client(1), "POST", setup.URL+"/api/v1/schemas", created.APIKey, load.ProductSchema(), http.StatusCreated, nil)
	setup.Stop()
	if err != nil {
		return err
	}
	ids, err := load.SeedProducts(ctx, d, dbURL, created.TenantID, o.records)
	if err != nil {
		return err
	}
	// The request files of bench/wrk/requests.lua.
	files := map[string]string{}
	for name, line := range map[string]func(i int) string{
		"get": func(i int) string { return "GET\t/api/v1/dynamic/Product/" + ids[(i*7919)%len(ids)] + "\t" },
		"list": func(i int) string {
			lo := i % 990
			return "GET\t/api/v1/dynamic/Product?limit=20&where=" + url.QueryEscape(fmt.Sprintf(`{"price":{"$gte":%d,"$lt":%d}}`, lo, lo+10)) + "\t"
		},
		"create": func(i int) string {
			return fmt.Sprintf("POST\t/api/v1/dynamic/Product\t{\"name\":\"new %d\",\"price\":%d.5,\"stock\":%d}", i, i%1000, i%50)
		},
	} {
		var b strings.Builder
		for i := range 2000 {
			b.WriteString(line(i) + "\n")
		}
		files[name] = filepath.Join(work, name+".tsv")
		if err := os.WriteFile(files[name], []byte(b.String()), 0o600); err != nil {
			return err
		}
	}
	w := wrk{o: o, key: created.APIKey, files: files, primary: primaryCPU, replica: replicaCPU}

	fmt.Printf("\nDDS production topology: %d records, wrk with %d connections, %s per run (+%s warm-up), %d CPUs\n",
		o.records, o.concurrency, o.duration, o.warmup, runtime.NumCPU())
	var rows []row
	baselines := map[string]float64{}
	type topology struct {
		name    string
		servers int
		lb      bool
		replica bool
	}
	topologies := []topology{
		{"1 server direct", 1, false, false},
		{"HAProxy, 1 server", 1, true, false}, {"HAProxy, 2 servers", 2, true, false}, {"HAProxy, 3 servers", 3, true, false},
		{"HAProxy, 1 server + replica", 1, true, true}, {"HAProxy, 2 servers + replica", 2, true, true}, {"HAProxy, 3 servers + replica", 3, true, true},
	}
	if o.only == "writes" {
		topologies = nil
	}
	for _, tp := range topologies {
		env := viaPooler
		if tp.replica {
			env = append(append([]string{}, viaPooler...), replicaEnv)
		}
		c, err := startTopology(ctx, o, work, env, tp.servers, tp.lb)
		if err != nil {
			return err
		}
		for _, l := range []string{"get", "list"} {
			r, err := w.run(ctx, c, tp.name+": "+map[string]string{"get": "GET by id", "list": "list (20)"}[l], l)
			if err != nil {
				c.stop()
				return err
			}
			if tp.name == "1 server direct" {
				baselines[l] = r.rps
			}
			r.ratio = r.rps / baselines[l]
			rows = append(rows, r)
		}
		c.stop()
	}
	// The write path: one server, direct connections (session pool) against
	// PgBouncer (transaction mode), over o.writeRounds rounds in the order
	// ABBA (direct first in odd rounds, PgBouncer first in even ones), so
	// that neither always runs on the bigger table, the warmer cache or the
	// quieter moment; each PgBouncer row is a ratio to the direct row of its
	// round, and the summary compares the two paths' mean rates.
	paths := []struct {
		name string
		env  []string
	}{{"create, 1 server, direct to Postgres", direct}, {"create, 1 server, through PgBouncer", viaPooler}}
	var sum [2]float64
	for round := 1; round <= o.writeRounds && o.only != "reads"; round++ {
		order := []int{0, 1}
		if round%2 == 0 {
			order = []int{1, 0}
		}
		var pair [2]row
		for _, i := range order {
			c, err := startTopology(ctx, o, work, paths[i].env, 1, false)
			if err != nil {
				return err
			}
			r, err := w.run(ctx, c, fmt.Sprintf("%s (round %d)", paths[i].name, round), "create")
			c.stop()
			if err != nil {
				return err
			}
			pair[i] = r
			sum[i] += r.rps
		}
		pair[0].ratio, pair[1].ratio = 1, pair[1].rps/pair[0].rps
		rows = append(rows, pair[0], pair[1])
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\ntopology: load\t req/s\t vs baseline\t errors\t PG primary µs/req\t PG replica µs/req\t dds µs/req\t cores busy\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t %.0f\t %.2f\t %d\t %.0f\t %.0f\t %.0f\t %.2f of %d\t\n", r.name, r.rps, r.ratio, r.errors, r.primary, r.replica, r.dd, r.busy, runtime.NumCPU())
	}
	tw.Flush()
	fmt.Println("\nbaselines: reads, 1 server reached directly (through PgBouncer, no replica); writes, 1 server with direct connections.")
	fmt.Println("cores busy: Postgres (primary and replica), the dds servers, HAProxy and wrk, over the run's time.")
	if o.only != "reads" && sum[0] > 0 {
		fmt.Printf("writes over %d rounds: %.0f creates/s through PgBouncer, %.0f direct: %.2f of direct\n",
			o.writeRounds, sum[1]/float64(o.writeRounds), sum[0]/float64(o.writeRounds), sum[1]/sum[0])
	}
	return nil
}

// topo is a running topology: servers, and HAProxy in front when lb.
type topo struct {
	url     string
	servers []*load.Process
	haproxy *load.Process
}

func startTopology(ctx context.Context, o options, work string, env []string, n int, lb bool) (*topo, error) {
	t := &topo{}
	backends := ""
	for i := range n {
		s, err := load.Serve(ctx, o.bin, env, fmt.Sprintf("127.0.0.1:%d", o.port+1+i))
		if err != nil {
			t.stop()
			return nil, err
		}
		t.servers = append(t.servers, s)
		backends += fmt.Sprintf("    server s%d 127.0.0.1:%d check\n", i+1, o.port+1+i)
	}
	t.url = t.servers[0].URL
	if !lb {
		return t, nil
	}
	cfg := fmt.Sprintf(`global
    maxconn 4096
    nbthread 1
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend api
    bind 127.0.0.1:%d
    default_backend dds
backend dds
    balance roundrobin
    option httpchk GET /readyz
    http-check expect status 200
    default-server inter 1s fall 2 rise 1
%s`, o.port, backends)
	hcfg := filepath.Join(work, "haproxy.cfg")
	if err := os.WriteFile(hcfg, []byte(cfg), 0o600); err != nil {
		t.stop()
		return nil, err
	}
	cmd := exec.CommandContext(ctx, o.haproxy, "-db", "-f", hcfg) //nolint:gosec // G204: the HAProxy the operator named
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.stop()
		return nil, err
	}
	t.haproxy = &load.Process{URL: fmt.Sprintf("http://127.0.0.1:%d", o.port), Cmd: cmd}
	t.url = t.haproxy.URL
	if err := load.WaitHealthy(ctx, t.url+"/readyz", 30*time.Second); err != nil {
		t.stop()
		return nil, err
	}
	return t, nil
}

func (t *topo) stop() {
	if t.haproxy != nil {
		t.haproxy.Stop()
	}
	for _, s := range t.servers {
		s.Stop()
	}
}

type wrk struct {
	o                options
	key              string
	files            map[string]string
	primary, replica load.PostgresCPU
}

// run warms up, then measures one wrk run of load against t.
func (w wrk) run(ctx context.Context, t *topo, name, l string) (row, error) {
	r := row{name: name}
	if _, err := w.wrk(ctx, t, l, w.o.warmup); err != nil {
		return r, err
	}
	before, err := w.sample(t)
	if err != nil {
		return r, err
	}
	out, err := w.wrk(ctx, t, l, w.o.duration)
	if err != nil {
		return r, err
	}
	after, err := w.sample(t)
	if err != nil {
		return r, err
	}
	var requests, durUS, status, socket, p50, p99 int64
	if _, err := fmt.Sscanf(out, "DDSBENCH requests=%d duration_us=%d status_errors=%d socket_errors=%d p50_us=%d p99_us=%d",
		&requests, &durUS, &status, &socket, &p50, &p99); err != nil {
		return r, fmt.Errorf("wrk output %q: %w", out, err)
	}
	secs := float64(durUS) / 1e6
	ok := float64(requests - status - socket)
	r.rps, r.errors = ok/secs, status+socket
	if ok > 0 {
		r.primary = 1e6 * (after[0] - before[0]) / ok
		r.replica = 1e6 * (after[1] - before[1]) / ok
		r.dd = 1e6 * (after[2] - before[2]) / ok
	}
	for i := range after {
		r.busy += (after[i] - before[i]) / secs
	}
	return r, nil
}

// sample is the CPU seconds of the primary, the replica, the servers, and
// HAProxy with wrk (everything else on the machine is not counted).
func (w wrk) sample(t *topo) ([4]float64, error) {
	var s [4]float64
	var err error
	if s[0], err = w.primary.Seconds(); err != nil {
		return s, err
	}
	if s[1], err = w.replica.Seconds(); err != nil {
		return s, err
	}
	for _, c := range t.servers {
		v, err := load.ProcessCPU(c.Cmd.Process.Pid)
		if err != nil {
			return s, err
		}
		s[2] += v
	}
	if t.haproxy != nil {
		v, err := load.ProcessCPU(t.haproxy.Cmd.Process.Pid)
		if err != nil {
			return s, err
		}
		s[3] += v
	}
	// wrk's own CPU is in this process's children once it has exited.
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err == nil {
		s[3] += float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
	}
	return s, nil
}

func (w wrk) wrk(ctx context.Context, t *topo, l string, d time.Duration) (string, error) {
	args := []string{"-t2", fmt.Sprintf("-c%d", w.o.concurrency), fmt.Sprintf("-d%ds", int(d.Seconds())), "-s", filepath.Join("bench", "wrk", "requests.lua"),
		t.url, "--", w.files[l], "Authorization: Bearer " + w.key, "Content-Type: application/json"}
	out, err := exec.CommandContext(ctx, "wrk", args...).CombinedOutput() //nolint:gosec // G204: wrk with our own arguments
	if err != nil {
		return "", fmt.Errorf("wrk: %w\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "DDSBENCH ") {
			return line, nil
		}
	}
	return "", fmt.Errorf("wrk printed no DDSBENCH line:\n%s", out)
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		return &url.URL{}
	}
	return u
}

// withDB is u with its database name replaced.
func withDB(u, name string) string {
	p := mustURL(u)
	p.Path = "/" + name
	return p.String()
}

// Command webhooks measures webhook delivery from commit to receiver:
// 10,000 outbox writes (each its own transaction, exactly what an entity
// write commits) for one tenant with one subscribed webhook, relayed and
// delivered by the in-process worker side (dev server, delivery worker,
// relay, as `dds worker` wires them) to a local HTTPS receiver. It reports
// deliveries/s and p50/p99 commit-to-delivery latency, for a paced run
// (-rate writes/s) and a burst run (all writes at once), and as baseline
// the same 10,000 POSTs sent by a plain Go loop straight to the receiver
// (at 2,000 the loops' own start — 64 TLS handshakes — is a large part of
// their time, and the ratio flatters the relay). With -pin, the backlog
// and the loops run again with Postgres on a CPU of its own.
// During each run the outbox lag (age of the oldest unrelayed
// event) is sampled every 50 ms; its p50 and maximum are reported.
//
// Needs DATABASE_URL and DDS_TEMPORAL_CLI (as `make bench` sets them).
package main

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/relay/relaytest"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/pgnotify"
)

var (
	cpuprofile = flag.String("cpuprofile", "", "write a CPU profile of this process (relay, worker, receiver) during the backlog run")
	perBatch   = flag.Bool("batches", false, "print every batch's timestamps of the backlog run")
	batchSize  = flag.Int("batch", 0, "events per claim (relay.Config.BatchSize; 0: the relay's default)")
	inFlight   = flag.Int("inflight", 0, "batches in flight (relay.Config.InFlightBatches; 0: the relay's default)")
	inFlightEv = flag.Int("inflight-events", 0, "events in flight (relay.Config.InFlightEvents; 0: the relay's default)")
	pin        = flag.Bool("pin", true, "also measure the backlog and the loops with Postgres on one CPU and this process on the others (the database on a host of its own, as deployed); needs 2 CPUs and a local Postgres")
)

func main() {
	n := flag.Int("n", 10000, "writes per run")
	rate := flag.Int("rate", 400, "writes per second of the paced run")
	writers := flag.Int("writers", 16, "concurrent writers of the paced run")
	timeout := flag.Duration("timeout", 3*time.Minute, "overall time limit")
	flag.Parse()
	if err := run(*n, *rate, *writers, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/webhooks:", err)
		os.Exit(1)
	}
}

// tb adapts the fixtures' testing.TB use to a plain program.
type tb struct{ testing.TB }

func (tb) Helper()                      {}
func (tb) Cleanup(func())               {}
func (tb) Fatal(args ...any)            { panic(fmt.Sprint(args...)) }
func (tb) Fatalf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (tb) Errorf(f string, args ...any) { panic(fmt.Sprintf(f, args...)) }
func (tb) Logf(f string, args ...any)   {}
func (tb) Name() string                 { return "bench" }

type result struct {
	perSec         float64
	p50, p99       time.Duration
	max            time.Duration
	elapsed        time.Duration
	lagP50, lagMax time.Duration // outbox lag sampled during the run
	cpuPer         time.Duration // baselines: this process's CPU per POST
}

func run(n, rate, writers int, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// Checkouts sharing one Postgres name their own database.
	if os.Getenv("DDS_WEBHOOK_TEST_DB") == "" {
		os.Setenv("DDS_WEBHOOK_TEST_DB", "dds_bench_webhooks")
	}
	tr := &traces{}
	st, err := relaytest.StartWith("dds-bench", false, relay.SetupOptions{Trace: tr.add, BatchSize: *batchSize,
		InFlightBatches: *inFlight, InFlightEvents: *inFlightEv})
	if err != nil {
		return err
	}
	defer st.Stop()
	d, err := db.Open(ctx, st.DBURL, writers+4)
	if err != nil {
		return err
	}
	defer d.Close()
	// Statements per delivery are read from pg_stat_statements when loaded.
	_, _ = d.ExecContext(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	// Leftovers of an interrupted earlier run would be relayed first.
	if _, err := d.ExecContext(ctx, `UPDATE dds.events SET relayed_at = now() WHERE relayed_at IS NULL`); err != nil {
		return err
	}

	var mu sync.Mutex
	arrived := map[string]time.Time{}
	done := make(chan struct{}, 1)
	want := 0
	rc := webhooktest.NewReceiver(tb{}, func(r webhooktest.Request) int {
		var p struct {
			ID string `json:"id"`
		}
		_ = json.Unmarshal(r.Body, &p)
		mu.Lock()
		if _, ok := arrived[p.ID]; !ok {
			arrived[p.ID] = r.At
			if len(arrived) == want {
				done <- struct{}{}
			}
		}
		mu.Unlock()
		return 200
	})
	defer rc.Close()

	// Writers announce their events after commit, as dds serve does.
	pub := pgnotify.NewPublisher(d, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	pctx, pstop := context.WithCancel(ctx)
	defer pstop()
	go pub.Run(pctx)

	store := webhook.NewStore(d)
	tenant := webhooktest.Tenant(tb{}, d, "bench")
	if _, err := store.Create(ctx, tenant, webhook.CreateInput{TargetURL: rc.URL + "/hook", EventTypes: outbox.Types}, true); err != nil {
		return err
	}

	measure := func(label string, pace int) (result, error) {
		mu.Lock()
		clear(arrived)
		want = n
		mu.Unlock()
		lags := sampleLag(ctx, d)
		stmts0, _ := statements(ctx, d)
		pg0 := backendCPU(ctx, d)
		cpu0, _ := load.ProcessCPU(os.Getpid())
		if label == "backlog" {
			tr.start()
		}
		if label == "backlog" && *cpuprofile != "" {
			f, err := os.Create(*cpuprofile)
			if err != nil {
				return result{}, err
			}
			defer f.Close()
			if err := pprof.StartCPUProfile(f); err != nil {
				return result{}, err
			}
		}
		committed, err := write(ctx, d, pub, tenant, n, pace, writers)
		if err != nil {
			return result{}, err
		}
		if pace < 0 {
			// The backlog's costs are the relay's: the one statement that
			// wrote the backlog (committed before the relay could see any of
			// it) is left out.
			stmts0, _ = statements(ctx, d)
			pg0 = backendCPU(ctx, d)
			cpu0, _ = load.ProcessCPU(os.Getpid())
		}
		select {
		case <-done:
		case <-ctx.Done():
			mu.Lock()
			got := len(arrived)
			mu.Unlock()
			return result{}, fmt.Errorf("%s: only %d of %d delivered before the time limit", label, got, n)
		}
		if label == "backlog" && *cpuprofile != "" {
			pprof.StopCPUProfile()
		}
		cpu1, _ := load.ProcessCPU(os.Getpid())
		mu.Lock()
		defer mu.Unlock()
		stmts1, _ := statements(ctx, d)
		printStatements(label, stmts0, stmts1, n, cpu1-cpu0, cpuSince(pg0, backendCPU(ctx, d)))
		var lat []time.Duration
		first, last := time.Time{}, time.Time{}
		for id, c := range committed {
			a := arrived[id]
			lat = append(lat, a.Sub(c))
			if first.IsZero() || c.Before(first) {
				first = c
			}
			if a.After(last) {
				last = a
			}
		}
		slices.Sort(lat)
		el := last.Sub(first)
		// No event left behind: every one is marked relayed.
		ids := make([]string, 0, len(committed))
		for id := range committed {
			ids = append(ids, id)
		}
		for {
			var left int
			if err := d.GetContext(ctx, &left, `SELECT count(*) FROM dds.events WHERE id = ANY($1::uuid[]) AND relayed_at IS NULL`, pq.StringArray(ids)); err != nil {
				return result{}, err
			}
			if left == 0 {
				break
			}
			if ctx.Err() != nil {
				return result{}, fmt.Errorf("%s: %d events still unrelayed at the time limit", label, left)
			}
			time.Sleep(10 * time.Millisecond)
		}
		lag := lags()
		if label == "backlog" {
			printPhases(label, tr.stop(), *perBatch)
		}
		return result{perSec: float64(n) / el.Seconds(), p50: lat[len(lat)/2], p99: lat[len(lat)*99/100], max: lat[len(lat)-1], elapsed: el,
			lagP50: lag[len(lag)/2], lagMax: lag[len(lag)-1]}, nil
	}

	// Warm-up: connections, caches, the first workflow task.
	if _, err := measureWarm(measure, &n); err != nil {
		return err
	}
	paced, err := measure("paced", rate)
	if err != nil {
		return err
	}
	burst, err := measure("backlog", -1)
	if err != nil {
		return err
	}
	base, err := baseline(ctx, rc, n, 64)
	if err != nil {
		return err
	}
	seq, err := baseline(ctx, rc, n, 1)
	if err != nil {
		return err
	}

	// The same backlog and loops with the database on a CPU of its own:
	// on one machine of two cores, the relay's Postgres work takes CPU
	// from the relay and the receiver, which the loops never pay.
	var pBurst, pBase, pSeq result
	pinned, why := false, ""
	if *pin {
		pinned, why, err = onOwnCPU(ctx, d, func() error {
			var err error
			if pBurst, err = measure("backlog, Postgres on its own CPU", -1); err != nil {
				return err
			}
			if pBase, err = baseline(ctx, rc, n, 64); err != nil {
				return err
			}
			pSeq, err = baseline(ctx, rc, n, 1)
			return err
		})
		if err != nil {
			return err
		}
	}

	fmt.Printf("webhook delivery, commit -> receiver, %d writes per run, one subscribed webhook, %d writers\n", n, writers)
	fmt.Printf("%-36s %12s %10s %10s %10s %9s %10s %10s\n", "run", "deliveries/s", "p50", "p99", "max", "elapsed", "lag p50", "lag max")
	row := func(name string, r result) {
		fmt.Printf("%-36s %12.0f %10s %10s %10s %9s %10s %10s\n", name, r.perSec, r.p50.Round(10*time.Microsecond),
			r.p99.Round(10*time.Microsecond), r.max.Round(10*time.Microsecond), r.elapsed.Round(time.Millisecond),
			r.lagP50.Round(time.Millisecond), r.lagMax.Round(time.Millisecond))
	}
	row(fmt.Sprintf("relay, paced %d writes/s", rate), paced)
	// drain prints a backlog run, the loops' runs of the same conditions
	// and their ratio.
	drain := func(suffix string, burst, base, seq result) {
		row("relay, backlog (1 commit)"+suffix, burst)
		row("Go loop, 64 at once"+suffix, base)
		row("Go loop, sequential"+suffix, seq)
		fmt.Printf("the loops (and receiver)%s spent %d µs CPU per POST 64 at once, %d µs sequentially\n",
			suffix, base.cpuPer.Microseconds(), seq.cpuPer.Microseconds())
		fmt.Printf("ratio relay backlog%s / Go loop 64 at once: %.2f; / sequential loop: %.2f   (targets: backlog >= 0.6 of the 64-at-once loop; paced p50 < 15ms)\n",
			suffix, burst.perSec/base.perSec, burst.perSec/seq.perSec)
	}
	drain("", burst, base, seq)
	switch {
	case pinned:
		drain(", pinned", pBurst, pBase, pSeq)
		fmt.Println("pinned: Postgres on one CPU, this process (relay, receiver, loops) on the others")
	case *pin:
		fmt.Println("pinned runs skipped:", why)
	}
	fmt.Println("paced: latency at a steady offered load; backlog: all writes committed in one transaction, so deliveries/s is the")
	fmt.Println("relay's drain capacity (its latencies are queueing time). Baselines: the same POSTs from a plain Go loop through the same client.")
	fmt.Println("lag: age of the oldest unrelayed outbox event (dds_outbox_lag_seconds), sampled every 50 ms during the run.")
	fmt.Println("every event of every run was delivered and marked relayed.")
	return nil
}

func measureWarm(measure func(string, int) (result, error), n *int) (result, error) {
	saved := *n
	*n = 100
	defer func() { *n = saved }()
	return measure("warm-up", 0)
}

// write commits n events, paced at rate per second (0: as fast as the
// writers go; -1: all in one transaction), announces them through pub as
// DDS's writes do, and returns each event's commit time.
func write(ctx context.Context, d *sqlx.DB, pub *pgnotify.Publisher, tenant string, n, rate, writers int) (map[string]time.Time, error) {
	out := make(map[string]time.Time, n)
	if rate < 0 {
		tx, err := d.BeginTxx(ctx, nil)
		if err != nil {
			return nil, err
		}
		defer tx.Rollback()
		var ids []string
		if err := tx.SelectContext(ctx, &ids, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
			SELECT $1, gen_random_uuid(), 'shop', 'entity.created', 'Product', gen_random_uuid(), jsonb_build_object('n', i, 'name', 'bench product')
			FROM generate_series(1, $2) AS i RETURNING id`, tenant, n); err != nil {
			return nil, err
		}
		if err := tx.Commit(); err != nil {
			return nil, err
		}
		at := time.Now()
		payloads := make([]string, len(ids))
		for i, id := range ids {
			out[id] = at
			payloads[i] = tenant + ":" + id
		}
		pub.Publish(outbox.Channel, payloads...)
		return out, nil
	}
	var mu sync.Mutex
	var firstErr error
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				var id string
				err := d.GetContext(ctx, &id, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record)
					VALUES ($1, gen_random_uuid(), 'shop', 'entity.created', 'Product', gen_random_uuid(), jsonb_build_object('n', $2::int, 'name', 'bench product'))
					RETURNING id`, tenant, i)
				at := time.Now()
				if err == nil {
					pub.Publish(outbox.Channel, tenant+":"+id)
				}
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				out[id] = at
				mu.Unlock()
			}
		}()
	}
	start := time.Now()
	for i := range n {
		if rate > 0 {
			if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))); d > 0 {
				time.Sleep(d)
			}
		}
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return out, firstErr
}

// sampleLag samples the outbox lag every 50 ms until the returned function
// is called; that returns the samples sorted (at least one).
func sampleLag(ctx context.Context, d *sqlx.DB) func() []time.Duration {
	stop := make(chan struct{})
	out := make(chan []time.Duration)
	go func() {
		var lags []time.Duration
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			// Only the oldest event's age: counting the whole backlog every
			// 50 ms (outbox.Store.Backlog, the gauge's query for a scrape
			// every few seconds) cost this benchmark's Postgres as much as a
			// third of the relay's own statements during a backlog drain.
			var age float64
			if err := d.GetContext(ctx, &age, `SELECT COALESCE(EXTRACT(EPOCH FROM now() - (SELECT created_at FROM dds.events
				WHERE relayed_at IS NULL ORDER BY seq LIMIT 1)), 0)::float8`); err == nil {
				lags = append(lags, time.Duration(age*float64(time.Second)))
			}
			select {
			case <-stop:
				if len(lags) == 0 {
					lags = append(lags, 0)
				}
				slices.Sort(lags)
				out <- lags
				return
			case <-t.C:
			}
		}
	}()
	return func() []time.Duration { close(stop); return <-out }
}

// baseline POSTs n signed bodies straight to the receiver from a plain Go
// loop, conc at a time (64 = the relay's HTTP workers), through the same client.
func baseline(ctx context.Context, rc *webhooktest.Receiver, n, conc int) (result, error) {
	pool := x509.NewCertPool()
	pool.AddCert(rc.Certificate())
	c, err := webhook.NewClient(webhook.ClientConfig{AllowPrivate: true, RootCAs: pool})
	if err != nil {
		return result{}, err
	}
	defer c.Close()
	body := []byte(`{"id":"baseline","type":"entity.created","data":{"entityName":"Product","record":{"n":1}}}`)
	lat := make([]time.Duration, n)
	jobs := make(chan int)
	var wg sync.WaitGroup
	cpu0, _ := load.ProcessCPU(os.Getpid())
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				t0 := time.Now()
				if r := c.Send(ctx, rc.URL+"/baseline", "whsec_AAAA", fmt.Sprint("b", i), body); !r.OK() {
					lat[i] = -1
					continue
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	for i := range n {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	el := time.Since(start)
	cpu1, _ := load.ProcessCPU(os.Getpid())
	slices.Sort(lat)
	if lat[0] < 0 {
		return result{}, fmt.Errorf("baseline: some POSTs failed")
	}
	return result{perSec: float64(n) / el.Seconds(), p50: lat[n/2], p99: lat[n*99/100], max: lat[n-1], elapsed: el,
		cpuPer: time.Duration((cpu1 - cpu0) * float64(time.Second) / float64(n))}, nil
}

// stmt is one statement's counters in pg_stat_statements.
type stmt struct {
	Query string  `db:"query"`
	Calls int64   `db:"calls"`
	MS    float64 `db:"ms"`
}

// statements reads this database's statements from pg_stat_statements
// (nil when the extension is not loaded); only differences are printed,
// so other databases' work on a shared cluster does not count.
func statements(ctx context.Context, d *sqlx.DB) (map[int64]stmt, error) {
	var rows []struct {
		ID int64 `db:"queryid"`
		stmt
	}
	if err := d.SelectContext(ctx, &rows, `SELECT queryid, left(regexp_replace(query, '\s+', ' ', 'g'), 100) AS query, calls,
			total_exec_time + total_plan_time AS ms
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())`); err != nil {
		return nil, err
	}
	out := make(map[int64]stmt, len(rows))
	for _, r := range rows {
		out[r.ID] = r.stmt
	}
	return out, nil
}

// printStatements prints the statements of one run per delivery, and this
// process's CPU per delivery.
func printStatements(label string, before, after map[int64]stmt, n int, cpu, pgCPU float64) {
	if after == nil {
		return
	}
	type row struct {
		stmt
		calls int64
		ms    float64
	}
	var rows []row
	var calls int64
	var ms float64
	for id, a := range after {
		b := before[id]
		if a.Calls == b.Calls {
			continue
		}
		r := row{stmt: a, calls: a.Calls - b.Calls, ms: a.MS - b.MS}
		rows = append(rows, r)
		calls += r.calls
		ms += r.ms
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].ms > rows[j].ms })
	fmt.Printf("%s: %.2f statements and %.3f ms of Postgres time per delivery; CPU per delivery: Postgres backends of this database %.0f µs, this process (relay, worker, receiver, writers) %.0f µs\n",
		label, float64(calls)/float64(n), ms/float64(n), pgCPU*1e6/float64(n), cpu*1e6/float64(n))
	for _, r := range rows[:min(len(rows), 12)] {
		fmt.Printf("  %8d calls %9.1f ms  %s\n", r.calls, r.ms, r.Query)
	}
}

// onOwnCPU runs fn with Postgres on one CPU and this process on the
// others it may use, and gives both their masks back after it. It reports
// false and why when that cannot be arranged (one CPU, a Postgres on
// another machine).
func onOwnCPU(ctx context.Context, d *sqlx.DB, fn func() error) (bool, string, error) {
	one, others, ok, err := load.OneAndOthers()
	if err != nil || !ok {
		return false, "this process may run on one CPU only", err
	}
	pg, err := load.FindPostgres(ctx, d)
	if err != nil {
		return false, "", err
	}
	if !pg.Local() {
		return false, "Postgres runs on another machine", nil
	}
	unpinPG, err := pg.Pin(one)
	if err != nil {
		return false, "", err
	}
	unpinSelf, err := load.Pin(os.Getpid(), others)
	if err != nil {
		_ = unpinPG()
		return false, "", err
	}
	err = fn()
	if uerr := errors.Join(unpinSelf(), unpinPG()); err == nil && uerr != nil {
		err = fmt.Errorf("give the CPUs back: %w", uerr)
	}
	return true, "", err
}

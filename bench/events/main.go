// Command events benchmarks the two ways clients follow a tenant's events,
// against one `dds serve` run as a child process (built from this tree,
// with its worker: load.StartDeployment):
//
//   - fan-out: S GraphQL subscriptions over C WebSockets, each filtered on
//     one of B buckets (`noteCreated(where: {bucket: {equals: k}})`, a filter
//     the server evaluates in Go), while a writer creates notes at R/s
//     through REST. Each note carries the time it was sent; every frame's
//     arrival minus that time is the write-to-frame latency (it includes
//     the create's own round trip). Frames expected = writes × subscribers
//     of their bucket; lost = expected − received once the feed is idle.
//     The server's peak RSS is printed.
//   - replay: N events written to the outbox (directly, in one statement),
//     then read back through the SSE change feed from the first cursor, as
//     a consumer catching up would; against `COPY (SELECT … FROM dds.events)
//     TO STDOUT` of the same rows in the same run.
//
// Raw SQL on dds.events here is deliberate (seeding, the baseline).
//
//	make bench BENCHES=events
//	DATABASE_URL=... DDS_TEMPORAL_CLI=... go run ./bench/events -subs 10000 -sockets 1000 -rate 200
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/jackc/pgx/v5"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/graphql/live"
)

type options struct {
	subs, sockets, buckets, rate int
	duration, warmup             time.Duration
	replay                       int
	only                         string
}

func main() {
	var o options
	flag.IntVar(&o.subs, "subs", 10000, "subscriptions (fan-out)")
	flag.IntVar(&o.sockets, "sockets", 1000, "WebSockets they are spread over")
	flag.IntVar(&o.buckets, "buckets", 100, "distinct filters (each write matches subs/buckets subscriptions)")
	flag.IntVar(&o.rate, "rate", 200, "writes per second")
	flag.DurationVar(&o.duration, "duration", 20*time.Second, "how long the writer writes, measured")
	flag.DurationVar(&o.warmup, "warmup", 3*time.Second, "how long it writes at the same rate before (reported apart: the server's ramp from idle)")
	flag.IntVar(&o.replay, "replay", 1_000_000, "events the replay section reads back")
	flag.StringVar(&o.only, "only", "fanout,replay", "sections: fanout, replay")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench/events:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	dbURL := os.Getenv("DATABASE_URL")
	if dbURL == "" {
		return errors.New("DATABASE_URL must be set (run through make bench)")
	}
	_, created, drop, err := load.Tenant(ctx, dbURL, "bench-events", 4)
	if err != nil {
		return err
	}
	defer drop()
	dep, err := load.StartDeployment(ctx, dbURL, "events", "DDS_SUBSCRIPTIONS_PER_SOCKET=0", "DDS_SUBSCRIPTIONS_PER_TENANT=0")
	if err != nil {
		return err
	}
	defer dep.Close()
	base := dep.Base
	c := load.Client(64)
	def := map[string]any{"name": "bench", "entities": []any{map[string]any{"name": "Note", "fields": []any{
		map[string]any{"name": "title", "type": "STRING"},
		map[string]any{"name": "bucket", "type": "INTEGER"},
		map[string]any{"name": "sentAt", "type": "INTEGER"}}}}}
	if _, err := load.Call(ctx, c, "POST", base+"/api/v1/schemas", created.APIKey, def, http.StatusCreated, nil); err != nil {
		return err
	}
	if strings.Contains(o.only, "fanout") {
		if err := fanout(ctx, o, base, created.APIKey, dbURL, c, dep.Serve.Process.Pid); err != nil {
			return fmt.Errorf("fanout: %w", err)
		}
	}
	if strings.Contains(o.only, "replay") {
		if err := replay(ctx, o, base, created.APIKey, created.TenantID, dbURL); err != nil {
			return fmt.Errorf("replay: %w", err)
		}
	}
	return nil
}

// fanout runs the fan-out section and prints its line.
func fanout(ctx context.Context, o options, base, key, dbURL string, c *http.Client, pid int) error {
	ws := "ws" + strings.TrimPrefix(base, "http") + "/api/v1/dynamic-gql/ws"
	per := (o.subs + o.sockets - 1) / o.sockets
	var (
		mu sync.Mutex
		// Per write: its send to its answer.
		answered []time.Duration
		// Per socket reader: what its frames measured.
		readers  []*frameTimes
		received atomic.Int64
		// Frames of writes sent before it (unix µs) are the warm-up's.
		measureFrom atomic.Int64
		wg          sync.WaitGroup
	)
	subsOf := make([]int, o.buckets) // subscriptions per bucket
	conns := make([]*websocket.Conn, 0, o.sockets)
	defer func() {
		for _, conn := range conns {
			_ = conn.Close()
		}
		wg.Wait()
	}()
	dialer := websocket.Dialer{Subprotocols: []string{"graphql-transport-ws"}, HandshakeTimeout: 30 * time.Second}
	n := 0
	for s := 0; s < o.sockets && n < o.subs; s++ {
		conn, res, err := dialer.DialContext(ctx, ws, nil)
		if err != nil {
			return fmt.Errorf("socket %d: %w", s, err)
		}
		_ = res.Body.Close() // the upgrade's response: the socket is the body
		conns = append(conns, conn)
		if err := conn.WriteJSON(map[string]any{"type": "connection_init", "payload": map[string]any{"authorization": "Bearer " + key}}); err != nil {
			return err
		}
		var ack map[string]any
		if err := conn.ReadJSON(&ack); err != nil || ack["type"] != "connection_ack" {
			return fmt.Errorf("socket %d: connection_init: %v: %w", s, ack, err)
		}
		for i := 0; i < per && n < o.subs; i++ {
			b := n % o.buckets
			subsOf[b]++
			q := fmt.Sprintf(`subscription { noteCreated(where: {bucket: {equals: %d}}) { sentAt } }`, b)
			if err := conn.WriteJSON(map[string]any{"id": fmt.Sprint(i), "type": "subscribe", "payload": map[string]any{"query": q}}); err != nil {
				return err
			}
			n++
		}
		if err := conn.WriteJSON(map[string]any{"type": "ping"}); err != nil {
			return err
		}
		var pong map[string]any
		if err := conn.ReadJSON(&pong); err != nil || pong["type"] != "pong" {
			return fmt.Errorf("socket %d: subscribe: %v: %w", s, pong, err)
		}
		ft := &frameTimes{}
		readers = append(readers, ft)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				_, msg, err := conn.ReadMessage()
				if err != nil {
					return
				}
				at := time.Now()
				sentAt, cursor, ok := parseFrame(msg)
				if !ok {
					continue
				}
				received.Add(1)
				ft.add(at, time.UnixMicro(sentAt), live.EventTime(cursor), sentAt < measureFrom.Load())
			}
		}()
	}
	fmt.Fprintf(os.Stderr, "bench/events: %d subscriptions over %d sockets set up\n", n, len(conns))
	// What the server counted before the measured writes: taken when the
	// warm-up's writes have been sent.
	var (
		reads0, gc0 map[string]float64
		stages0     map[string]histogram
		cpu0        float64
		sessions0   int64
	)
	snapshot := func() (err error) {
		if sessions0, err = sessionsStarted(ctx, dbURL); err != nil {
			return err
		}
		if reads0, err = feedReads(ctx, c, base); err != nil {
			return err
		}
		if stages0, err = feedStages(ctx, c, base); err != nil {
			return err
		}
		if gc0, err = scrape(ctx, c, base, "go_gc_duration_seconds_count", "go_gc_duration_seconds_sum", poolWaits, poolWaited); err != nil {
			return err
		}
		cpu0, err = load.ProcessCPU(pid)
		return err
	}
	readsIdle, err := feedReads(ctx, c, base)
	if err != nil {
		return err
	}
	cpuIdle, err := load.ProcessCPU(pid)
	if err != nil {
		return err
	}
	sessionsIdle, err := sessionsStarted(ctx, dbURL)
	if err != nil {
		return err
	}
	start := time.Now()
	measureFrom.Store(start.Add(o.warmup).UnixMicro())
	// The writer: R creates a second, paced, each its own request that
	// it does not wait for (a slow commit delays no other write). The
	// i-th write is due at start + i/R, and one that falls behind (the
	// client starved of a core) goes at once: a ticker would drop those
	// ticks, and the run would write fewer than R a second (183/s of 200
	// on a quiet machine) without saying so.
	//
	// The first warm writes (o.warmup at the same rate) take the server
	// from idle to the load: its pool opens connections, whose first
	// statements are slow (a new backend's caches are cold), and every
	// later event waits for them (the horizon). That ramp is reported
	// apart from the steady state that the target is about.
	var expected, writes, warmWrites, failed atomic.Int64
	warm := int(o.warmup.Seconds() * float64(o.rate))
	total := warm + int(o.duration.Seconds()*float64(o.rate))
	pace := time.NewTimer(0)
	defer pace.Stop()
	var ww sync.WaitGroup
	var measured time.Time
	for i := 0; i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(o.rate))); d > 0 {
			pace.Reset(d)
			<-pace.C
		}
		if i == warm {
			if err := snapshot(); err != nil {
				return err
			}
			measured = time.Now()
		}
		ww.Add(1)
		go func() {
			defer ww.Done()
			b := i % o.buckets
			sent := time.Now()
			body := map[string]any{"title": "n", "bucket": b, "sentAt": sent.UnixMicro()}
			if _, err := load.Call(ctx, c, "POST", base+"/api/v1/dynamic/Note", key, body, http.StatusCreated, nil); err != nil {
				failed.Add(1)
				return
			}
			d := time.Since(sent)
			expected.Add(int64(subsOf[b]))
			if i < warm {
				warmWrites.Add(1)
				return
			}
			mu.Lock()
			answered = append(answered, d)
			mu.Unlock()
			writes.Add(1)
		}()
	}
	writing := time.Since(measured)
	ww.Wait()
	// Wait for the feed to go idle: no new frame for 3 s, or all arrived.
	last, lastAt := received.Load(), time.Now()
	for received.Load() < expected.Load() && time.Since(lastAt) < 3*time.Second {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if r := received.Load(); r != last {
			last, lastAt = r, time.Now()
		}
	}
	cpu1, err := load.ProcessCPU(pid)
	if err != nil {
		return err
	}
	sessions1, err := sessionsStarted(ctx, dbURL)
	if err != nil {
		return err
	}
	elapsed := time.Since(measured)
	_, hwm, err := load.ReadRSS(pid)
	if err != nil {
		return err
	}
	reads1, err := feedReads(ctx, c, base)
	if err != nil {
		return err
	}
	stages1, err := feedStages(ctx, c, base)
	if err != nil {
		return err
	}
	gc1, err := scrape(ctx, c, base, "go_gc_duration_seconds_count", "go_gc_duration_seconds_sum", "go_memstats_heap_inuse_bytes", poolWaits, poolWaited)
	if err != nil {
		return err
	}
	var latencies, warmLatencies, toInsert, fromInsert []time.Duration
	warmBySecond := make([][]time.Duration, int(o.warmup.Seconds()+0.999))
	for _, ft := range readers {
		ft.mu.Lock()
		latencies = append(latencies, ft.latencies...)
		warmLatencies = append(warmLatencies, ft.warm...)
		for i, d := range ft.warm {
			sec := min(max(int(ft.warmSent[i].Sub(start)/time.Second), 0), len(warmBySecond)-1)
			warmBySecond[sec] = append(warmBySecond[sec], d)
		}
		toInsert = append(toInsert, ft.toInsert...)
		fromInsert = append(fromInsert, ft.fromInsert...)
		ft.mu.Unlock()
	}
	slices.Sort(latencies)
	slices.Sort(warmLatencies)
	p50, p99 := load.Percentile(latencies, 50), load.Percentile(latencies, 99)
	fmt.Printf("fan-out  %d subs / %d sockets, %d writes at %d/s after %d of warm-up (sent at %.0f/s; %d failed): frames %d of %d expected (lost %d); write-to-frame p50 %.1f ms p99 %.1f ms; server peak RSS %d MB\n",
		n, len(conns), writes.Load(), o.rate, warmWrites.Load(), float64(total-warm)/writing.Seconds(), failed.Load(), received.Load(), expected.Load(), expected.Load()-received.Load(),
		float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000, hwm>>20)
	var bySecond []string
	for i, xs := range warmBySecond {
		slices.Sort(xs)
		bySecond = append(bySecond, fmt.Sprintf("second %d p50 %.1f p99 %.1f", i+1, float64(load.Percentile(xs, 50).Microseconds())/1000, float64(load.Percentile(xs, 99).Microseconds())/1000))
	}
	fmt.Printf("fan-out  the warm-up's frames (%s from idle at the same rate): p50 %.1f ms p99 %.1f ms, %d frames (%s); %.0f shared and %.0f per-subscriber reads; server CPU %.0f%% of a core; %d Postgres sessions started (%d after it)\n",
		o.warmup, float64(load.Percentile(warmLatencies, 50).Microseconds())/1000, float64(load.Percentile(warmLatencies, 99).Microseconds())/1000, len(warmLatencies),
		strings.Join(bySecond, "; "), reads0["batch"]-readsIdle["batch"], perSubscriber(reads0)-perSubscriber(readsIdle),
		100*(cpu0-cpuIdle)/measured.Sub(start).Seconds(), sessions0-sessionsIdle-1, sessions1-sessions0-1)
	// The server's own CPU: less sensitive than latency to what else
	// runs on the machine.
	fmt.Printf("fan-out  server CPU %.1f s over %.1f s (%.0f%% of a core), %.1f µs per frame\n",
		cpu1-cpu0, elapsed.Seconds(), 100*(cpu1-cpu0)/elapsed.Seconds(), 1e6*(cpu1-cpu0)/float64(max(received.Load(), 1)))
	// Where a frame waits: each stage of an event's way (the server's
	// histograms, from the event's insert), the client's side from the
	// write's send, and the frame's arrival from the insert.
	mu.Lock()
	for _, xs := range [][]time.Duration{toInsert, fromInsert, answered} {
		slices.Sort(xs)
	}
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Printf("fan-out  stages (ms)       p50      p99   count\n")
	fmt.Printf("fan-out  send → insert %8.1f %8.1f %7d   (client: the write's request until its event's id was drawn)\n",
		ms(load.Percentile(toInsert, 50)), ms(load.Percentile(toInsert, 99)), len(toInsert))
	fmt.Printf("fan-out  send → answer %8.1f %8.1f %7d   (client: the write's whole round trip)\n",
		ms(load.Percentile(answered, 50)), ms(load.Percentile(answered, 99)), len(answered))
	for _, st := range live.StageNames {
		h := stages1[st].minus(stages0[st])
		fmt.Printf("fan-out  insert → %-10s %5.1f %8.1f %7d\n", st, 1000*h.quantile(0.5), 1000*h.quantile(0.99), h.count)
	}
	// The same stages from the commit (the server knows when the writes
	// it ran committed): a subscriber cannot have a frame before its
	// write commits, so this is the feed's own part, including the wait
	// for earlier writers that ordering requires.
	for _, st := range live.StageNames[live.StageHorizon:] {
		h := stages1["commit:"+st].minus(stages0["commit:"+st])
		fmt.Printf("fan-out  commit → %-10s %5.1f %8.1f %7d   (server: from the write's commit)\n", st, 1000*h.quantile(0.5), 1000*h.quantile(0.99), h.count)
	}
	fmt.Printf("fan-out  insert → received %5.1f %8.1f %7d   (client: read from the socket, before decoding)\n",
		ms(load.Percentile(fromInsert, 50)), ms(load.Percentile(fromInsert, 99)), len(fromInsert))
	mu.Unlock()
	fmt.Printf("fan-out  server GC: %.0f cycles, %.1f ms of stop-the-world pauses; heap in use %.0f MB\n",
		gc1["go_gc_duration_seconds_count"]-gc0["go_gc_duration_seconds_count"],
		1000*(gc1["go_gc_duration_seconds_sum"]-gc0["go_gc_duration_seconds_sum"]), gc1["go_memstats_heap_inuse_bytes"]/(1<<20))
	// A write that waits for one of the server's Postgres connections
	// waits before its statement is sent: it shows in send → insert
	// and delays every later event's horizon.
	fmt.Printf("fan-out  server's Postgres pool: %.0f waits for a free connection, %.1f ms in all\n",
		gc1[poolWaits]-gc0[poolWaits], 1000*(gc1[poolWaited]-gc0[poolWaited]))
	perSub := perSubscriber(reads1) - perSubscriber(reads0)
	fmt.Printf("fan-out  Postgres reads of the feed: %.0f shared (%.2f per write, whatever the subscribers), %.0f per subscriber (filters, rules, records, catch-ups)\n",
		reads1["batch"]-reads0["batch"], (reads1["batch"]-reads0["batch"])/float64(max(writes.Load(), 1)), perSub)
	fmt.Printf("fan-out  horizon held back by an earlier writer in flight: %.0f polls\n", reads1["held"]-reads0["held"])
	return nil
}

// sessionsStarted is how many sessions the cluster has started
// (pg_stat_database), counting this query's own: between two calls, the
// sessions started less one.
func sessionsStarted(ctx context.Context, dbURL string) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT sum(sessions)::int8 FROM pg_stat_database`).Scan(&n)
	return n, err
}

// perSubscriber sums the feed's reads made for one subscriber (filters,
// rules, records, catch-ups) in a feedReads answer.
func perSubscriber(reads map[string]float64) float64 {
	n := 0.0
	for _, k := range []string{"filter", "rule", "record", "catch_up"} {
		n += reads[k]
	}
	return n
}

// replay seeds the outbox with N events of the tenant and reads them back
// through the SSE change feed, against COPY of the same rows.
func replay(ctx context.Context, o options, base, key, tenantID, dbURL string) error {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var schemaID, schemaName string
	if err := conn.QueryRow(ctx, `SELECT id, name FROM dds.schemas WHERE tenant_id = $1 AND active`, tenantID).Scan(&schemaID, &schemaName); err != nil {
		return err
	}
	var first int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM dds.events`).Scan(&first); err != nil {
		return err
	}
	step(fmt.Sprintf("seeding %d events", o.replay))
	if _, err := conn.Exec(ctx, `INSERT INTO dds.events (tenant_id, schema_id, schema_name, type, entity_name, entity_id, record, relayed_at)
		SELECT $1, $2, $3, 'entity.created', 'Note', gen_random_uuid(), jsonb_build_object('title', 'note ' || g, 'bucket', g % 100, 'sentAt', g), now()
		FROM generate_series(1, $4) g`, tenantID, schemaID, schemaName, o.replay); err != nil {
		return err
	}
	var cursor string
	if err := conn.QueryRow(ctx, `SELECT id FROM dds.events WHERE tenant_id = $1 AND seq > $2 ORDER BY seq LIMIT 1`, tenantID, first).Scan(&cursor); err != nil {
		return err
	}
	// Baseline: COPY of the same rows, as JSON lines.
	start := time.Now()
	tag, err := conn.PgConn().CopyTo(ctx, io.Discard, fmt.Sprintf(`COPY (SELECT row_to_json(e) FROM (SELECT id, type, entity_name, entity_id, record, created_at FROM dds.events
		WHERE tenant_id = '%s' AND seq > %d ORDER BY seq) e) TO STDOUT`, tenantID, first))
	if err != nil {
		return err
	}
	copyRate := float64(tag.RowsAffected()) / time.Since(start).Seconds()
	// The SSE feed from the first cursor (it is itself skipped: after).
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events?after="+cursor, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Accept", "text/event-stream")
	start = time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /api/v1/events: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	want, got := o.replay-1, 0
	for got < want && sc.Scan() {
		if strings.HasPrefix(sc.Text(), "id:") {
			got++
		}
	}
	if got < want {
		return fmt.Errorf("the feed ended after %d of %d events: %w", got, want, sc.Err())
	}
	sseRate := float64(got) / time.Since(start).Seconds()
	fmt.Printf("replay   %d events through SSE: %.0f events/s; COPY TO of the same rows %.0f rows/s; ratio %.2f\n", got, sseRate, copyRate, sseRate/copyRate)
	return nil
}

// histogram is one stage's cumulative bucket counts from /metrics.
type histogram struct {
	le     []float64 // upper bounds, ascending (the last is +Inf)
	counts []float64 // cumulative
	count  int64
}

// minus is h's observations since before (an earlier scrape).
func (h histogram) minus(before histogram) histogram {
	out := histogram{le: h.le, counts: slices.Clone(h.counts), count: h.count - before.count}
	for i := range out.counts {
		if i < len(before.counts) {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// quantile is q's value, interpolated within its bucket (seconds).
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 || len(h.counts) == 0 {
		return 0
	}
	rank := q * float64(h.count)
	lo, below := 0.0, 0.0
	for i, c := range h.counts {
		if c >= rank {
			if i == len(h.le)-1 { // +Inf: the last finite bound
				return lo
			}
			if c == below {
				return h.le[i]
			}
			return lo + (h.le[i]-lo)*(rank-below)/(c-below)
		}
		lo, below = h.le[i], c
	}
	return lo
}

// metricLines reads the server's /metrics, a line each.
func metricLines(ctx context.Context, c *http.Client, base string) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var lines []string
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// scrape reads the metrics names (each as exposed: with its labels, if
// any) from the server's /metrics.
func scrape(ctx context.Context, c *http.Client, base string, names ...string) (map[string]float64, error) {
	lines, err := metricLines(ctx, c, base)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range lines {
		name, value, ok := strings.Cut(line, " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			out[name] = v
		}
	}
	return out, nil
}

// feedStages reads the server's dds_graphql_feed_stage_seconds by stage.
func feedStages(ctx context.Context, c *http.Client, base string) (map[string]histogram, error) {
	lines, err := metricLines(ctx, c, base)
	if err != nil {
		return nil, err
	}
	out := map[string]histogram{}
	for _, line := range lines {
		prefix := ""
		rest, ok := strings.CutPrefix(line, "dds_graphql_feed_stage_seconds_")
		if !ok {
			if rest, ok = strings.CutPrefix(line, "dds_graphql_feed_commit_stage_seconds_"); !ok {
				continue
			}
			prefix = "commit:"
		}
		var stage, le string
		var v float64
		switch {
		case strings.HasPrefix(rest, "bucket{"):
			// bucket{stage="x",le="y"} v
			if _, err := fmt.Sscanf(strings.NewReplacer(",", " ", "{", " ", "}", " ", "=", " ").Replace(rest), "bucket stage %q le %q %g", &stage, &le, &v); err != nil {
				continue
			}
			stage = prefix + stage
			h := out[stage]
			b := math.Inf(1)
			if le != "+Inf" {
				if b, err = strconv.ParseFloat(le, 64); err != nil {
					continue
				}
			}
			h.le, h.counts = append(h.le, b), append(h.counts, v)
			out[stage] = h
		case strings.HasPrefix(rest, "count{"):
			if _, err := fmt.Sscanf(strings.NewReplacer("{", " ", "}", " ", "=", " ").Replace(rest), "count stage %q %g", &stage, &v); err != nil {
				continue
			}
			stage = prefix + stage
			h := out[stage]
			h.count = int64(v)
			out[stage] = h
		}
	}
	return out, nil
}

// The server's pool metrics (go_sql_*, labelled with the pool's name).
const (
	poolWaits  = `go_sql_wait_count_total{db_name="dds"}`
	poolWaited = `go_sql_wait_duration_seconds_total{db_name="dds"}`
)

// frameTimes is what one socket's reader measured, per frame: the
// write's send to the frame's arrival, to the event's insert (the id's
// time), and the insert to the arrival. Each reader has its own, so the
// 1,000 readers never wait for one another's lock.
type frameTimes struct {
	mu                                    sync.Mutex
	latencies, toInsert, fromInsert, warm []time.Duration
	warmSent                              []time.Time // each warm frame's write's send
}

// add records a frame; one of a warm-up write counts in warm only.
func (f *frameTimes) add(at, sent, inserted time.Time, warm bool) {
	f.mu.Lock()
	if warm {
		f.warm = append(f.warm, at.Sub(sent))
		f.warmSent = append(f.warmSent, sent)
		f.mu.Unlock()
		return
	}
	f.latencies = append(f.latencies, at.Sub(sent))
	if !inserted.IsZero() {
		f.toInsert = append(f.toInsert, inserted.Sub(sent))
		f.fromInsert = append(f.fromInsert, at.Sub(inserted))
	}
	f.mu.Unlock()
}

// parseFrame reads a "next" frame's sentAt and cursor. The server writes
// these frames in one layout (compact, members in selection order), so
// the reader finds them by their keys rather than decoding the frame with
// reflection: on the shared cores the client's decoding competes with the
// server it measures. Anything else falls back to encoding/json.
func parseFrame(msg []byte) (sentAt int64, cursor string, ok bool) {
	if !bytes.Contains(msg, []byte(`"type":"next"`)) {
		return 0, "", false
	}
	if i := bytes.Index(msg, []byte(`"sentAt":`)); i >= 0 {
		rest := msg[i+len(`"sentAt":`):]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		j := bytes.Index(rest, []byte(`"cursor":"`))
		if v, err := strconv.ParseInt(string(rest[:n]), 10, 64); err == nil && j >= 0 && len(rest) >= j+len(`"cursor":"`)+36 {
			c := rest[j+len(`"cursor":"`):]
			return v, string(c[:36]), true
		}
	}
	var m struct {
		Type    string
		Payload struct {
			Data       struct{ NoteCreated struct{ SentAt int64 } }
			Extensions struct{ Cursor string }
		}
	}
	if json.Unmarshal(msg, &m) != nil || m.Type != "next" {
		return 0, "", false
	}
	return m.Payload.Data.NoteCreated.SentAt, m.Payload.Extensions.Cursor, true
}

func step(s string) { fmt.Fprintln(os.Stderr, "bench/events:", s) }

// feedReads reads the server's dds_graphql_feed_reads_total by kind.
func feedReads(ctx context.Context, c *http.Client, base string) (map[string]float64, error) {
	lines, err := metricLines(ctx, c, base)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, line := range lines {
		var kind string
		var v float64
		if _, err := fmt.Sscanf(line, "dds_graphql_feed_reads_total{kind=%q} %g", &kind, &v); err == nil {
			out[kind] = v
		} else if _, err := fmt.Sscanf(line, "dds_graphql_feed_horizon_held_total %g", &v); err == nil {
			out["held"] = v
		}
	}
	return out, nil
}

// Command jobs benchmarks batch jobs against Postgres itself, in one run
// over the same Postgres and table: an import of N NDJSON Product rows
// (with and without events) against COPY of the same rows, and update and
// delete by filter of every row against the plain SQL UPDATE/DELETE. It
// runs `dds serve` and `dds worker` as child processes (built from this
// tree), prints rows/s, the ratios, the peak RSS of both processes during
// the jobs, and the worst latency of API writes made while a job commits.
//
// Raw SQL on the tenant's tables here is deliberate (seeding, ANALYZE, the
// baselines DDS is measured against); DDS itself reaches them only through
// package records.
//
//	make bench BENCHES=jobs
//	DATABASE_URL=... DDS_TEMPORAL_CLI=... go run ./bench/jobs -rows 1000000
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/dds-project/dds/bench/load"
)

func main() {
	rows := flag.Int("rows", 1_000_000, "rows per job")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if err := run(ctx, *rows); err != nil {
		fmt.Fprintln(os.Stderr, "bench/jobs:", err)
		os.Exit(1)
	}
}

type bench struct {
	base, key string
	table     string // quoted schema.table of Product
	dbURL     string
	c         *http.Client
}

func run(ctx context.Context, n int) error {
	dbURL, cli := os.Getenv("DATABASE_URL"), os.Getenv("DDS_TEMPORAL_CLI")
	if dbURL == "" || cli == "" {
		return errors.New("DATABASE_URL and DDS_TEMPORAL_CLI must be set (run through make bench)")
	}
	d, created, drop, err := load.Tenant(ctx, dbURL, "bench-jobs", 4)
	if err != nil {
		return err
	}
	defer drop()
	dep, err := load.StartDeployment(ctx, dbURL, "jobs", "FILE_STORAGE_URL_TTL=10m")
	if err != nil {
		return err
	}
	defer dep.Close()
	b := &bench{base: dep.Base, key: created.APIKey, dbURL: dbURL, c: &http.Client{Timeout: 2 * time.Minute}}
	schema := map[string]any{"name": "bench", "entities": []any{map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER", "indexed": true},
		map[string]any{"name": "stock", "type": "INTEGER"},
		map[string]any{"name": "tags", "type": "STRING", "list": true}}}}}
	if _, err := b.call(ctx, "POST", "/api/v1/schemas", schema, http.StatusCreated); err != nil {
		return err
	}
	var pg string
	if err := d.Get(&pg, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1 AND active`, created.TenantID); err != nil {
		return err
	}
	b.table = fmt.Sprintf(`%q."Product"`, pg)

	// The same rows as NDJSON (the job's file) and CSV (COPY's input).
	var nd, csv bytes.Buffer
	for i := range n {
		fmt.Fprintf(&nd, `{"name":"Product %07d","price":%d.%02d,"stock":%d,"tags":["t%d","bench"]}`+"\n", i, i%1000, i%100, i%50, i%7)
		fmt.Fprintf(&csv, "Product %07d,%d.%02d,%d,\"{t%d,bench}\"\n", i, i%1000, i%100, i%50, i%7)
	}
	fmt.Printf("rows: %d (NDJSON %.1f MB)\n", n, float64(nd.Len())/(1<<20))
	fileID, err := b.upload(ctx, nd.Bytes())
	if err != nil {
		return err
	}
	nd = bytes.Buffer{}

	samplers := dep.SampleRSS()

	copyRows := func() (time.Duration, error) {
		conn, err := pgx.Connect(ctx, dbURL)
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		t0 := time.Now()
		_, err = conn.PgConn().CopyFrom(ctx, bytes.NewReader(csv.Bytes()),
			fmt.Sprintf(`COPY %s ("id", "name", "price", "stock", "tags") FROM STDIN (FORMAT csv)`, b.table))
		return time.Since(t0), err
	}
	// COPY needs ids: prefix each CSV row with a UUIDv7 made by Postgres is
	// not possible in COPY, so the CSV carries generated ones.
	csv = withIDs(csv.Bytes())
	truncate := func() error {
		_, err := d.ExecContext(ctx, `TRUNCATE `+b.table)
		if err == nil {
			_, err = d.ExecContext(ctx, `DELETE FROM dds.events WHERE tenant_id = $1`, created.TenantID)
		}
		return err
	}
	sqlExec := func(q string) (time.Duration, error) {
		t0 := time.Now()
		_, err := d.ExecContext(ctx, q)
		return time.Since(t0), err
	}

	type line struct {
		what     string
		dds, sql time.Duration
	}
	var out []line
	// Import: COPY, then the job without and with events.
	copyT, err := copyRows()
	if err != nil {
		return fmt.Errorf("COPY: %w", err)
	}
	for _, events := range []bool{false, true} {
		if err := truncate(); err != nil {
			return err
		}
		var probe *probe
		if events {
			probe = b.startProbe(ctx, "POST", "/api/v1/dynamic/Product", map[string]any{"name": "probe"})
		}
		t, err := b.job(ctx, map[string]any{"type": "import", "entity": "Product", "fileId": fileID, "format": "ndjson", "emitEvents": events})
		if err != nil {
			return err
		}
		name := "import, no events"
		if events {
			name = "import, with events"
			fmt.Printf("API creates during the import: %s\n", probe.stop())
		}
		out = append(out, line{name, t, copyT})
	}
	// Update and delete by filter of every row, against the plain SQL.
	for _, c := range []struct{ name, sql string }{
		{"update by filter", `UPDATE ` + b.table + ` SET "stock" = 1, "updatedAt" = now() WHERE "price" >= 0`},
		{"delete by filter", `DELETE FROM ` + b.table + ` WHERE "price" >= 0`},
	} {
		if err := truncate(); err != nil {
			return err
		}
		if _, err := copyRows(); err != nil {
			return err
		}
		sqlT, err := sqlExec(c.sql)
		if err != nil {
			return err
		}
		if err := truncate(); err != nil {
			return err
		}
		if _, err := copyRows(); err != nil {
			return err
		}
		if _, err := d.ExecContext(ctx, `VACUUM ANALYZE `+b.table); err != nil {
			return err
		}
		body := map[string]any{"type": "delete", "entity": "Product", "where": map[string]any{"price": map[string]any{"$gte": 0}}, "emitEvents": false}
		var pr *probe
		if strings.HasPrefix(c.name, "update") {
			body["type"], body["set"] = "update", map[string]any{"stock": 1}
			var id string
			if err := d.GetContext(ctx, &id, `SELECT "id"::text FROM `+b.table+` LIMIT 1`); err != nil {
				return err
			}
			pr = b.startProbe(ctx, "PATCH", "/api/v1/dynamic/Product/"+id, map[string]any{"stock": 2})
		}
		t, err := b.job(ctx, body)
		if err != nil {
			return err
		}
		if pr != nil {
			fmt.Printf("API PATCHes of a row the update matches, during the job: %s\n", pr.stop())
		}
		out = append(out, line{c.name, t, sqlT})
	}
	_ = truncate()

	fmt.Printf("\n%-22s %12s %12s %12s %12s %8s\n", "", "DDS job", "rows/s", "plain SQL", "rows/s", "ratio")
	for _, l := range out {
		fmt.Printf("%-22s %12s %12.0f %12s %12.0f %7.1f%%\n", l.what, l.dds.Round(time.Millisecond), float64(n)/l.dds.Seconds(),
			l.sql.Round(time.Millisecond), float64(n)/l.sql.Seconds(), 100*l.sql.Seconds()/l.dds.Seconds())
	}
	for i, name := range []string{"dds serve", "dds worker"} {
		peak, err := samplers[i].Stop()
		if err != nil {
			return err
		}
		fmt.Printf("%s peak RSS during the jobs: %s\n", name, load.MB(peak))
	}
	return nil
}

// withIDs prefixes each CSV line with a fresh UUIDv7 (COPY cannot make them).
func withIDs(csv []byte) bytes.Buffer {
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(csv))
	for sc.Scan() {
		out.WriteString(newID())
		out.WriteByte(',')
		out.Write(sc.Bytes())
		out.WriteByte('\n')
	}
	return out
}

func (b *bench) call(ctx context.Context, method, path string, body any, want int) (map[string]any, error) {
	raw, err := load.Call(ctx, b.c, method, b.base+path, b.key, body, want, nil)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return m, nil
}

func (b *bench) upload(ctx context.Context, body []byte) (string, error) {
	tk, err := b.call(ctx, "POST", "/api/v1/files/upload-url", map[string]any{"fileName": "products.ndjson",
		"mimeType": "application/x-ndjson", "sizeBytes": len(body)}, http.StatusCreated)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, tk["uploadUrl"].(string), bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := b.c.Do(req)
	if err != nil {
		return "", err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("upload: %d", resp.StatusCode)
	}
	id := tk["fileId"].(string)
	_, err = b.call(ctx, "POST", "/api/v1/files/"+id+"/confirm", nil, http.StatusOK)
	return id, err
}

// job runs a job end to end (POST to succeeded) and returns how long it took.
func (b *bench) job(ctx context.Context, body map[string]any) (time.Duration, error) {
	t0 := time.Now()
	j, err := b.call(ctx, "POST", "/api/v1/jobs", body, http.StatusAccepted)
	if err != nil {
		return 0, err
	}
	id := j["id"].(string)
	for {
		j, err := b.call(ctx, "GET", "/api/v1/jobs/"+id, nil, http.StatusOK)
		if err != nil {
			return 0, err
		}
		switch j["status"] {
		case "succeeded":
			return time.Since(t0), nil
		case "failed", "cancelled":
			e, _ := json.Marshal(j["error"])
			return 0, fmt.Errorf("job %s %s: %s", id, j["status"], e)
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// probe makes one API write every 20 ms while a job runs and keeps the
// worst latency: what a user's writes feel while the job commits.
type probe struct {
	stopc chan struct{}
	done  chan struct{}
	mu    sync.Mutex
	n     int
	errs  int
	worst time.Duration
}

func (b *bench) startProbe(ctx context.Context, method, path string, body any) *probe {
	p := &probe{stopc: make(chan struct{}), done: make(chan struct{})}
	want := http.StatusOK
	if method == "POST" {
		want = http.StatusCreated
	}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stopc:
				return
			case <-time.After(20 * time.Millisecond):
			}
			t0 := time.Now()
			_, err := b.call(ctx, method, path, body, want)
			d := time.Since(t0)
			p.mu.Lock()
			p.n++
			if err != nil {
				p.errs++
			}
			p.worst = max(p.worst, d)
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *probe) stop() string {
	close(p.stopc)
	<-p.done
	return fmt.Sprintf("%d requests, %d errors, worst latency %s", p.n, p.errs, p.worst.Round(time.Millisecond))
}

func newID() string { return uuid.Must(uuid.NewV7()).String() }

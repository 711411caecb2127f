// Command tenants benchmarks the tenant lifecycle against Postgres
// itself, in one run over the same Postgres and table: the export of a
// tenant of N records and 50 MB of files (a zip archive written by the
// worker and stored)
// against `COPY … TO` of the same table, and the import of that archive as
// a new tenant against `COPY … FROM` of the same rows. It runs `dds serve`
// and `dds worker` as child processes (built from this tree) and prints
// rows/s, the ratios, the CPU Postgres and the worker spent, each job's
// phases (result.phasesMs), and the peak RSS of both processes.
//
// Raw SQL on the tenant's tables here is deliberate (seeding, the
// baselines DDS is measured against); DDS itself reaches them only through
// package records.
//
// The delete of the imported tenant is timed too, against DROP TABLE of
// a copy of the same rows.
//
//	make bench BENCHES=tenants
//	make bench-tenants-1m            (-rows 1000000; a few minutes, so not in make bench)
//	DATABASE_URL=... DDS_TEMPORAL_CLI=... go run ./bench/tenants -rows 200000
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/dds-project/dds/bench/load"
)

func main() {
	rows := flag.Int("rows", 200_000, "records of the exported tenant")
	filesMB := flag.Int("files-mb", 50, "MB of files of the exported tenant (1 MB each, incompressible)")
	logLevel := flag.String("log", "warn", "log level of dds serve and dds worker (info: the export's phases, and every request)")
	flag.Parse()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if err := run(ctx, *rows, *filesMB, *logLevel); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tenants:", err)
		os.Exit(1)
	}
}

type bench struct {
	base, operator string
	c              *http.Client
}

func (b *bench) call(ctx context.Context, method, path string, body any, want int, dst any) error {
	_, err := load.Call(ctx, b.c, method, b.base+path, b.operator, body, want, dst)
	return err
}

type job struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	TenantID string `json:"tenantId"`
	Result   struct {
		Archive struct {
			DownloadURL string `json:"downloadUrl"`
			SizeBytes   int64  `json:"sizeBytes"`
		} `json:"archive"`
		TenantID string           `json:"tenantId"`
		PhasesMs map[string]int64 `json:"phasesMs"`
	} `json:"result"`
	Error      any        `json:"error"`
	CreatedAt  time.Time  `json:"createdAt"`
	StartedAt  *time.Time `json:"startedAt"`
	FinishedAt *time.Time `json:"finishedAt"`
}

// stages says where a job's time went: waiting for a worker (created to
// started), running (started to finished), and until the poll saw it.
func (j job) stages(start time.Time, seen time.Duration) string {
	if j.StartedAt == nil || j.FinishedAt == nil {
		return ""
	}
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	out := fmt.Sprintf("queued %s, ran %s, seen %s later", ms(j.StartedAt.Sub(j.CreatedAt)), ms(j.FinishedAt.Sub(*j.StartedAt)),
		ms(start.Add(seen).Sub(*j.FinishedAt)))
	if len(j.Result.PhasesMs) > 0 {
		names := make([]string, 0, len(j.Result.PhasesMs))
		for n := range j.Result.PhasesMs {
			names = append(names, n)
		}
		sort.Slice(names, func(a, b int) bool { return j.Result.PhasesMs[names[a]] > j.Result.PhasesMs[names[b]] })
		out += "; phases:"
		for _, n := range names {
			out += fmt.Sprintf(" %s %s", n, ms(time.Duration(j.Result.PhasesMs[n])*time.Millisecond))
		}
	}
	return out
}

// wait polls a tenant job until it ends; it returns the job and how long
// it took since start.
func (b *bench) wait(ctx context.Context, id string, start time.Time) (job, time.Duration, error) {
	for {
		var j job
		if err := b.call(ctx, "GET", "/api/v1/tenant-jobs/"+id, nil, http.StatusOK, &j); err != nil {
			return j, 0, err
		}
		switch j.Status {
		case "succeeded":
			return j, time.Since(start), nil
		case "failed", "cancelled":
			return j, 0, fmt.Errorf("tenant job %s %s: %v", id, j.Status, j.Error)
		}
		select {
		case <-ctx.Done():
			return j, 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func run(ctx context.Context, n, filesMB int, logLevel string) error {
	dbURL, cli := os.Getenv("DATABASE_URL"), os.Getenv("DDS_TEMPORAL_CLI")
	if dbURL == "" || cli == "" {
		return errors.New("DATABASE_URL and DDS_TEMPORAL_CLI must be set (run through make bench)")
	}
	d, created, drop, err := load.Tenant(ctx, dbURL, "bench-tenants", 4)
	if err != nil {
		return err
	}
	defer drop()
	operator := load.RandHex(24)
	dep, err := load.StartDeployment(ctx, dbURL, "tenants", "DDS_OPERATOR_TOKEN="+operator, "DDS_LOG_LEVEL="+logLevel)
	if err != nil {
		return err
	}
	defer dep.Close()
	b := &bench{base: dep.Base, operator: operator, c: &http.Client{Timeout: 5 * time.Minute}}
	def := map[string]any{"name": "bench", "entities": []any{map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING", "required": true},
		map[string]any{"name": "price", "type": "NUMBER", "indexed": true},
		map[string]any{"name": "stock", "type": "INTEGER"},
		map[string]any{"name": "tags", "type": "STRING", "list": true}}}}}
	if _, err := load.Call(ctx, b.c, "POST", b.base+"/api/v1/schemas", created.APIKey, def, http.StatusCreated, nil); err != nil {
		return err
	}
	var pg string
	if err := d.GetContext(ctx, &pg, `SELECT pg_schema FROM dds.schemas WHERE tenant_id = $1 AND active`, created.TenantID); err != nil {
		return err
	}
	table := fmt.Sprintf(`%q."Product"`, pg)
	var csv bytes.Buffer
	for i := range n {
		fmt.Fprintf(&csv, "%s,Product %07d,%d.%02d,%d,\"{t%d,bench}\"\n", uuid.Must(uuid.NewV7()), i, i%1000, i%100, i%50, i%7)
	}
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	cols := `("id", "name", "price", "stock", "tags")`
	if _, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(csv.Bytes()), `COPY `+table+` `+cols+` FROM STDIN (FORMAT csv)`); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if _, err := conn.Exec(ctx, `VACUUM ANALYZE `+table); err != nil {
		return err
	}
	if err := uploadFiles(ctx, b, created.APIKey, filesMB); err != nil {
		return err
	}
	fmt.Printf("records: %d, files: %d MB\n", n, filesMB)

	pgCPU, err := load.FindPostgres(ctx, d)
	if err != nil {
		return err
	}
	// measure times fn and the CPU Postgres and the worker spent in it
	// (Postgres's is the whole cluster's: on a shared machine it includes
	// what others ran meanwhile).
	measure := func(fn func() error) (m cost, err error) {
		pg0, err := pgCPU.Seconds()
		if err != nil {
			return m, err
		}
		w0, err := load.ProcessCPU(dep.Worker.Process.Pid)
		if err != nil {
			return m, err
		}
		t0 := time.Now()
		if err := fn(); err != nil {
			return m, err
		}
		m.wall = time.Since(t0)
		pg1, err := pgCPU.Seconds()
		if err != nil {
			return m, err
		}
		w1, err := load.ProcessCPU(dep.Worker.Process.Pid)
		m.pg, m.worker = pg1-pg0, w1-w0
		return m, err
	}

	// Baselines: COPY the table out, and the same rows into a copy of it.
	copyTo, err := measure(func() error {
		_, err := conn.PgConn().CopyTo(ctx, io.Discard, `COPY `+table+` TO STDOUT`)
		return err
	})
	if err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE `+fmt.Sprintf(`%q."CopyBaseline"`, pg)+` (LIKE `+table+` INCLUDING ALL)`); err != nil {
		return err
	}
	copyFrom, err := measure(func() error {
		_, err := conn.PgConn().CopyFrom(ctx, bytes.NewReader(csv.Bytes()), fmt.Sprintf(`COPY %q."CopyBaseline" %s FROM STDIN (FORMAT csv)`, pg, cols))
		return err
	})
	if err != nil {
		return err
	}
	// The delete's baseline: dropping that copy, the least Postgres can
	// do to remove the same rows.
	dropT, err := measure(func() error {
		_, err := conn.Exec(ctx, fmt.Sprintf(`DROP TABLE %q."CopyBaseline"`, pg))
		return err
	})
	if err != nil {
		return err
	}
	csv = bytes.Buffer{}

	samplers := dep.SampleRSS()
	// runJob POSTs a job and polls it until it has succeeded.
	var stages []string
	runJob := func(what, method, path string, body any) (j job, m cost, err error) {
		m, err = measure(func() error {
			t0 := time.Now()
			if err := b.call(ctx, method, path, body, http.StatusAccepted, &j); err != nil {
				return err
			}
			var took time.Duration
			j, took, err = b.wait(ctx, j.ID, t0)
			stages = append(stages, fmt.Sprintf("%-26s %s", what, j.stages(t0, took)))
			return err
		})
		return j, m, err
	}
	// Export, as the operator sees it: POST until the job has succeeded.
	j, exportT, err := runJob("export", "POST", "/api/v1/tenants/"+created.TenantID+"/export", nil)
	if err != nil {
		return err
	}
	archive, err := download(ctx, b.c, j.Result.Archive.DownloadURL)
	if err != nil {
		return err
	}
	fmt.Printf("archive: %.1f MB\n", float64(len(archive))/(1<<20))
	// Import of that archive: upload it, then POST until succeeded.
	var up struct {
		FileID    string            `json:"fileId"`
		UploadURL string            `json:"uploadUrl"`
		Headers   map[string]string `json:"headers"`
	}
	if err := b.call(ctx, "POST", "/api/v1/tenant-archives", map[string]any{"sizeBytes": len(archive)}, http.StatusCreated, &up); err != nil {
		return err
	}
	if err := upload(ctx, b.c, up.UploadURL, up.Headers, archive); err != nil {
		return err
	}
	// Files keep their ids, so the original tenant goes first (untimed).
	if _, _, err := runJob("delete (exported tenant)", "DELETE", "/api/v1/tenants/"+created.TenantID, nil); err != nil {
		return err
	}
	stages = stages[:len(stages)-1]
	j, importT, err := runJob("import", "POST", "/api/v1/tenants/import", map[string]any{"fileId": up.FileID, "name": "bench-tenants-imported"})
	if err != nil {
		return err
	}
	// Delete the imported tenant through the API (and time it).
	_, deleteT, err := runJob("delete", "DELETE", "/api/v1/tenants/"+j.TenantID, nil)
	if err != nil {
		return err
	}

	fmt.Printf("\n%-26s %10s %10s %8s %8s %10s %10s %8s %6s\n", "", "DDS job", "records/s", "PG CPU", "worker", "Postgres", "records/s", "PG CPU", "ratio")
	for _, l := range []struct {
		what     string
		dds, sql cost
		note     string
	}{{"export (zip, stored)", exportT, copyTo, "  (baseline: COPY TO)"}, {"import (new tenant)", importT, copyFrom, "  (baseline: COPY FROM)"},
		{"delete (imported tenant)", deleteT, dropT, "  (baseline: DROP TABLE of the same rows)"}} {
		fmt.Printf("%-26s %10s %10.0f %7.1fs %7.1fs %10s %10.0f %7.1fs %6.2f%s\n", l.what, l.dds.wall.Round(time.Millisecond), float64(n)/l.dds.wall.Seconds(),
			l.dds.pg, l.dds.worker, l.sql.wall.Round(time.Millisecond), float64(n)/l.sql.wall.Seconds(), l.sql.pg, l.sql.wall.Seconds()/l.dds.wall.Seconds(), l.note)
	}
	fmt.Println()
	for _, st := range stages {
		fmt.Println(st)
	}
	for i, name := range []string{"dds serve", "dds worker"} {
		peak, err := samplers[i].Stop()
		if err != nil {
			return err
		}
		fmt.Printf("%s peak RSS: %s\n", name, load.MB(peak))
	}
	return nil
}

// cost is what one timed operation took: wall time, and the CPU seconds
// Postgres and the worker spent meanwhile.
type cost struct {
	wall       time.Duration
	pg, worker float64
}

// uploadFiles gives the tenant mb files of 1 MB of random bytes (like
// photos: deflate does not shrink them), uploaded and confirmed the way a
// client does.
func uploadFiles(ctx context.Context, b *bench, key string, mb int) error {
	body := make([]byte, 1<<20)
	for i := range mb {
		if _, err := rand.Read(body); err != nil {
			return err
		}
		var up struct {
			FileID    string            `json:"fileId"`
			UploadURL string            `json:"uploadUrl"`
			Headers   map[string]string `json:"headers"`
		}
		req := map[string]any{"fileName": fmt.Sprintf("photo-%03d.jpg", i), "mimeType": "image/jpeg", "sizeBytes": len(body)}
		if _, err := load.Call(ctx, b.c, "POST", b.base+"/api/v1/files/upload-url", key, req, http.StatusCreated, &up); err != nil {
			return err
		}
		if err := upload(ctx, b.c, up.UploadURL, up.Headers, body); err != nil {
			return err
		}
		if _, err := load.Call(ctx, b.c, "POST", b.base+"/api/v1/files/"+up.FileID+"/confirm", key, nil, http.StatusOK, nil); err != nil {
			return err
		}
	}
	return nil
}

func download(ctx context.Context, c *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download the archive: %d", resp.StatusCode)
	}
	return io.ReadAll(resp.Body)
}

func upload(ctx context.Context, c *http.Client, url string, headers map[string]string, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("upload the archive: %d", resp.StatusCode)
	}
	return nil
}

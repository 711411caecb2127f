package lifecycle

// Tenant export: one archive (a zip file) with everything a tenant holds,
// written by one idempotent activity from one read-only snapshot.
//
//	manifest.json                         format, tenant, schemas with their entities, relationships and counts, sections
//	schemas/<schema>/versions.json        every version of the schema's definition
//	schemas/<schema>/entities/<E>.ndjson  the entity's records, one JSON object per line, in the table's physical order
//	schemas/<schema>/relationships/<R>.ndjson  the relationship's edges
//	schemas/<schema>/history.ndjson       the versions of its entities with history: true
//	files.ndjson                          the confirmed files' metadata, by id
//	files/<file id>                       their bytes
//	sections/<name>.ndjson                keys and webhooks without secrets (see Section)
//	checksums.json                        SHA-256 of every entry above, and the counts
//
// A zip, not a tar: its entries are written without knowing their sizes
// in advance, so records stream from Postgres straight into the archive.

import (
	"archive/zip"
	"bufio"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/klauspost/compress/flate"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/storage"
)

// ArchiveFormat names the archive format in its manifest.
const (
	ArchiveFormat        = "dds-tenant-archive"
	ArchiveFormatVersion = 1
)

// Manifest is an archive's manifest.json.
type Manifest struct {
	Format        string           `json:"format"`
	FormatVersion int              `json:"formatVersion"`
	ExportedAt    time.Time        `json:"exportedAt"`
	Tenant        ManifestTenant   `json:"tenant"`
	Schemas       []ManifestSchema `json:"schemas"`
	Files         int64            `json:"files"`
	Sections      []string         `json:"sections"`
}

// ManifestTenant is the exported tenant.
type ManifestTenant struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// ManifestSchema is one exported schema.
type ManifestSchema struct {
	Name          string          `json:"name"`
	Active        bool            `json:"active"`
	Version       int             `json:"version"`
	Entities      []ManifestTable `json:"entities"`
	Relationships []ManifestTable `json:"relationships"`
	// History is the rows of the schema's history table (history.ndjson),
	// when an entity of it keeps history.
	History *ManifestTable `json:"history,omitempty"`
}

// ManifestTable is one exported entity or relationship and its row count.
type ManifestTable struct {
	Name string `json:"name"`
	Rows int64  `json:"rows"`
}

// ExportResult is the result of an export job.
type ExportResult struct {
	Archive struct {
		ID        string `json:"id"`
		SizeBytes int64  `json:"sizeBytes"`
		SHA256    string `json:"sha256"`
	} `json:"archive"`
	Counts    map[string]int64  `json:"counts"`
	Checksums map[string]string `json:"checksums"`
	// PhasesMs is how long each phase took, in milliseconds (snapshot,
	// tables, files, sections, store).
	PhasesMs map[string]int64 `json:"phasesMs,omitempty"`
}

var exportOptions = workflow.ActivityOptions{
	StartToCloseTimeout: 12 * time.Hour,
	HeartbeatTimeout:    30 * time.Second,
	RetryPolicy: &temporal.RetryPolicy{
		InitialInterval: time.Second, BackoffCoefficient: 2, MaximumInterval: 5 * time.Minute, MaximumAttempts: 5,
		NonRetryableErrorTypes: []string{errTypeRefused},
	},
}

// errTypeRefused marks an error retrying cannot fix (a bad archive, a
// tenant that is gone).
const errTypeRefused = "TENANT_JOB_REFUSED"

// finishing ends a job: succeeded, or failed with the last error.
func finishing(ctx workflow.Context, jobID string, err error) error {
	var a *Activities
	in := FinishInput{JobID: jobID, Status: StatusSucceeded}
	if err != nil {
		in.Status, in.Code, in.Message = StatusFailed, "INTERNAL_ERROR", "the job failed on repeated errors"
		var ae *temporal.ApplicationError
		if errors.As(err, &ae) {
			in.Message = ae.Message()
			if ae.Type() == errTypeRefused {
				in.Code = "VALIDATION_ERROR"
			}
		}
	}
	dctx, _ := workflow.NewDisconnectedContext(ctx)
	dctx = workflow.WithActivityOptions(dctx, stepOptions)
	return workflow.ExecuteActivity(dctx, a.TenantJobFinish, in).Get(dctx, nil)
}

// ExportWorkflow writes a tenant's archive.
func ExportWorkflow(ctx workflow.Context, in Input) (string, error) {
	var a *Activities
	return archiveJob(ctx, in, a.TenantExportWrite)
}

// archiveJob runs a tenant job that is one long activity (an export's
// write, an import's load) between the job's begin and finish; the
// workflow ends with the job's status.
func archiveJob(ctx workflow.Context, in Input, work any) (string, error) {
	var a *Activities
	ctx = workflow.WithActivityOptions(ctx, exportOptions)
	err := workflow.ExecuteActivity(ctx, a.TenantJobBegin, in.JobID).Get(ctx, nil)
	if err == nil {
		err = workflow.ExecuteActivity(ctx, work, in).Get(ctx, nil)
	}
	if ferr := finishing(ctx, in.JobID, err); ferr != nil {
		return "", ferr
	}
	if err != nil {
		// The job row says why; the workflow itself ends normally.
		return StatusFailed, nil //nolint:nilerr // a failed job is a finished workflow
	}
	return StatusSucceeded, nil
}

// progressEvery is how often, at most, a job's progress is written to its
// row while its step stays the same. Each write is a commit: one per file
// of an export with many small files cost it more than hashing the files.
const progressEvery = 250 * time.Millisecond

// progress sets the job's total (an estimate may be passed: a total that
// falls short grows with the work done) and returns the function that records
// how far it is (*done units, at step) in the heartbeat and, when the step
// changes or progressEvery has passed since the last write, in the job (the
// job's end writes the final count).
func (a *Activities) progress(ctx context.Context, jobID string, total int64, done *int64) (func(step string) error, error) {
	if _, err := a.deps.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET total = $2, processed = 0 WHERE id = $1`, jobID, total); err != nil {
		return nil, err
	}
	var last time.Time
	var lastStep string
	return func(step string) error {
		activity.RecordHeartbeat(ctx, *done)
		if step == lastStep && time.Since(last) < progressEvery {
			return nil
		}
		last, lastStep = time.Now(), step
		_, err := a.deps.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET processed = $2, total = greatest(total, $2), step = $3 WHERE id = $1`, jobID, *done, step)
		return err
	}, nil
}

// refused is an error no retry fixes.
func refused(format string, args ...any) error {
	return temporal.NewNonRetryableApplicationError(fmt.Sprintf(format, args...), errTypeRefused, nil)
}

// hashingWriter counts and hashes what goes through it.
type hashingWriter struct {
	w io.Writer
	h hash.Hash
	n int64
}

func (hw *hashingWriter) Write(p []byte) (int, error) {
	n, err := hw.w.Write(p)
	hw.h.Write(p[:n])
	hw.n += int64(n)
	return n, err
}

// archiveWriter writes zip entries, hashing each.
type archiveWriter struct {
	zw        *zip.Writer
	checksums map[string]string
}

func (aw *archiveWriter) entry(name string, fn func(w io.Writer) error) error {
	return aw.entryMethod(name, zip.Deflate, fn)
}

// entryMethod writes an entry compressed with method (zip.Store for bytes
// deflate would not shrink).
func (aw *archiveWriter) entryMethod(name string, method uint16, fn func(w io.Writer) error) error {
	zwr, err := aw.zw.CreateHeader(&zip.FileHeader{Name: name, Method: method, Modified: time.Unix(0, 0).UTC()})
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(zwr, 64<<10)
	hw := &hashingWriter{w: bw, h: sha256.New()}
	if err := fn(hw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	aw.checksums[name] = hex.EncodeToString(hw.h.Sum(nil))
	return nil
}

func (aw *archiveWriter) json(name string, v any) error {
	return aw.entry(name, func(w io.Writer) error {
		e := json.NewEncoder(w)
		e.SetIndent("", "  ")
		return e.Encode(v)
	})
}

// TenantExportWrite writes the archive of the job's tenant to file
// storage and records it; an archive already recorded is not written again.
func (a *Activities) TenantExportWrite(ctx context.Context, in Input) error {
	var ready bool
	if err := a.deps.DB.GetContext(ctx, &ready, `SELECT EXISTS (SELECT 1 FROM dds.tenant_archives WHERE id = $1 AND status = 'ready')`, in.JobID); err != nil || ready {
		return err
	}
	return a.heartbeating(ctx, func(ctx context.Context) error { return a.export(ctx, in) })
}

func (a *Activities) export(ctx context.Context, in Input) error {
	d := a.deps
	phases := exportPhases{start: time.Now()}
	putter, ok := d.Storage.(storage.Putter)
	if !ok {
		return refused("this deployment's file storage cannot store archives")
	}
	// The archive is written to a temporary file and then stored; a store
	// on this machine's disk makes that file in its own directory and
	// moves it into place (filePutter), others are sent a copy.
	fp, direct := d.Storage.(filePutter)
	var tmp *os.File
	var err error
	if direct {
		tmp, err = fp.CreateTemp("dds-export-*.zip")
	} else {
		tmp, err = os.CreateTemp("", "dds-export-*.zip")
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	whole := &hashingWriter{w: tmp, h: sha256.New()}
	zw := zip.NewWriter(whole)
	// The fastest deflate: an archive is written once per export, and at
	// the default level compression, not Postgres, would set its pace.
	// klauspost/compress's level 1 deflates an export's NDJSON in less
	// than half the CPU of the standard library's (and a little smaller);
	// the stream is plain deflate, which every zip reader reads.
	zw.RegisterCompressor(zip.Deflate, func(w io.Writer) (io.WriteCloser, error) { return flate.NewWriter(w, flate.BestSpeed) })
	aw := &archiveWriter{zw: zw, checksums: map[string]string{}}

	// One snapshot: what the archive holds is the tenant at one instant.
	tx, err := d.DB.BeginTxx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	var t struct {
		Name      string     `db:"name"`
		DeletedAt *time.Time `db:"deleted_at"`
	}
	err = tx.GetContext(ctx, &t, `SELECT name, deleted_at FROM dds.tenants WHERE id = $1`, in.TenantID)
	if errors.Is(err, sql.ErrNoRows) || err == nil && t.DeletedAt != nil {
		return refused("tenant %s is deleted", in.TenantID)
	}
	if err != nil {
		return err
	}
	// Each table is read with COPY on its own connection, in this
	// transaction's snapshot.
	var snapshot string
	if err := tx.GetContext(ctx, &snapshot, `SELECT pg_export_snapshot()`); err != nil {
		return err
	}
	schemas, err := d.Schemas.ListIn(ctx, tx, in.TenantID)
	if err != nil {
		return err
	}
	m := Manifest{Format: ArchiveFormat, FormatVersion: ArchiveFormatVersion, ExportedAt: time.Now().UTC(),
		Tenant: ManifestTenant{ID: in.TenantID, Name: t.Name}, Schemas: []ManifestSchema{}, Sections: []string{}}
	counts := map[string]int64{"records": 0, "edges": 0, "files": 0}
	// The progress total is Postgres's estimate of the rows (counting them
	// first would scan every table once more than the export itself); each
	// table's exact count is the one its COPY returns, and the manifest,
	// written after the tables, has those.
	var estimate int64
	for _, s := range schemas {
		pg := schema.PgSchemaName(s.ID)
		ms := ManifestSchema{Name: s.Name, Active: s.Active, Version: s.Version, Entities: []ManifestTable{}, Relationships: []ManifestTable{}}
		for i := range s.Entities {
			n, err := d.Records.EstimateRows(ctx, tx, pg, s.Entities[i].Name)
			if err != nil {
				return err
			}
			ms.Entities = append(ms.Entities, ManifestTable{Name: s.Entities[i].Name})
			estimate += n
		}
		for i := range s.Relationships {
			n, err := d.Records.EstimateRows(ctx, tx, pg, schema.RelTable(&s.Relationships[i]))
			if err != nil {
				return err
			}
			ms.Relationships = append(ms.Relationships, ManifestTable{Name: s.Relationships[i].Name})
			estimate += n
		}
		if keepsHistory(s.Entities) {
			n, err := d.Records.EstimateRows(ctx, tx, pg, schema.HistoryTable)
			if err != nil {
				return err
			}
			ms.History = &ManifestTable{Name: schema.HistoryTable}
			estimate += n
		}
		m.Schemas = append(m.Schemas, ms)
	}
	if m.Files, err = files.CountConfirmed(ctx, tx, in.TenantID); err != nil {
		return err
	}
	for _, sec := range d.Sections {
		m.Sections = append(m.Sections, sec.Name())
	}
	phases.mark("snapshot")
	var done int64
	progress, err := a.progress(ctx, in.JobID, estimate+m.Files, &done)
	if err != nil {
		return err
	}
	for i, s := range schemas {
		pg := schema.PgSchemaName(s.ID)
		dir := "schemas/" + s.Name + "/"
		versions, err := d.Schemas.Versions(ctx, tx, in.TenantID, s.ID)
		if err != nil {
			return err
		}
		if err := aw.json(dir+"versions.json", versions); err != nil {
			return err
		}
		dump := func(kind string, t *ManifestTable) error {
			name := tableEntry(dir, kind, t.Name)
			return aw.entry(name, func(w io.Writer) error {
				err := overlapped(w, func(ow io.Writer) error {
					var err error
					t.Rows, err = d.Records.DumpTable(ctx, snapshot, pg, t.Name, ow)
					return err
				})
				done += t.Rows
				if err != nil {
					return err
				}
				return progress(kind)
			})
		}
		for j := range m.Schemas[i].Entities {
			t := &m.Schemas[i].Entities[j]
			if err := dump("entities", t); err != nil {
				return err
			}
			counts["records"] += t.Rows
		}
		for j := range m.Schemas[i].Relationships {
			t := &m.Schemas[i].Relationships[j]
			if err := dump("relationships", t); err != nil {
				return err
			}
			counts["edges"] += t.Rows
		}
		if t := m.Schemas[i].History; t != nil {
			if err := dump("history", t); err != nil {
				return err
			}
			counts["versions"] += t.Rows
		}
	}
	phases.mark("tables")
	counts["files"] = m.Files
	if err := progress("files"); err != nil {
		return err
	}
	// The files' metadata, then their bytes (zip entries are written one
	// after another, so it takes two passes over the same snapshot).
	if err := aw.entry("files.ndjson", func(w io.Writer) error {
		enc := json.NewEncoder(w)
		return files.Export(ctx, tx, in.TenantID, func(f files.Exported) error { return enc.Encode(f) })
	}); err != nil {
		return err
	}
	fileSums := sha256.New()
	if err := files.Export(ctx, tx, in.TenantID, func(f files.Exported) error {
		name := "files/" + f.ID
		err := aw.entryMethod(name, fileMethod(f.MimeType), func(w io.Writer) error {
			r, err := d.Storage.Open(ctx, f.StorageKey)
			if err != nil {
				return fmt.Errorf("file %s: %w", f.ID, err)
			}
			defer r.Close()
			n, err := io.Copy(w, r)
			if err == nil && n != f.SizeBytes {
				err = fmt.Errorf("file %s: stored object has %d bytes, want %d", f.ID, n, f.SizeBytes)
			}
			return err
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(fileSums, "%s %s\n", f.ID, aw.checksums[name])
		done++
		return progress("files")
	}); err != nil {
		return err
	}
	phases.mark("files")
	for _, sec := range d.Sections {
		if err := aw.entry("sections/"+sec.Name()+".ndjson", func(w io.Writer) error {
			enc := json.NewEncoder(w)
			return sec.Export(ctx, in.TenantID, func(v any) error { return enc.Encode(v) })
		}); err != nil {
			return err
		}
	}
	if err := aw.json("manifest.json", m); err != nil {
		return err
	}
	sums := aw.checksums
	if err := aw.json("checksums.json", map[string]any{"entries": sums, "counts": counts}); err != nil {
		return err
	}
	if err := aw.zw.Close(); err != nil {
		return err
	}
	phases.mark("sections")
	key := archiveKey(in.JobID)
	if direct {
		err = fp.PutFile(ctx, key, "application/zip", tmp, whole.n)
	} else if _, err = tmp.Seek(0, io.SeekStart); err == nil {
		err = putter.Put(ctx, key, "application/zip", tmp, whole.n)
	}
	if err != nil {
		return err
	}
	phases.mark("store")
	if d.Log != nil {
		d.Log.Info("tenant export written", append([]any{"tenant", in.TenantID, "job", in.JobID, "records", counts["records"],
			"edges", counts["edges"], "files", counts["files"], "bytes", whole.n}, phases.attrs()...)...)
	}
	var res ExportResult
	res.Archive.ID, res.Archive.SizeBytes, res.Archive.SHA256 = in.JobID, whole.n, hex.EncodeToString(whole.h.Sum(nil))
	res.Counts, res.PhasesMs = counts, phases.ms()
	// The job's result keeps the checksum of every data entry, and one
	// over all files (an archive's checksums.json has each file's).
	res.Checksums = map[string]string{"files": hex.EncodeToString(fileSums.Sum(nil))}
	for name, sum := range sums {
		if len(name) > 8 && name[:8] == "schemas/" {
			res.Checksums[name] = sum
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		return err
	}
	return recordArchive(ctx, d.DB, in, key, res, b)
}

// keepsHistory is whether an entity of es keeps history (so its schema
// has a history table whose versions an archive carries).
func keepsHistory(es []schema.Entity) bool {
	for i := range es {
		if es[i].History {
			return true
		}
	}
	return false
}

// filePutter is a file storage that stores a finished file by moving it
// (storage.Local): the archive is made where it can be moved from.
type filePutter interface {
	CreateTemp(pattern string) (*os.File, error)
	PutFile(ctx context.Context, key, contentType string, f *os.File, size int64) error
}

func recordArchive(ctx context.Context, d *sqlx.DB, in Input, key string, res ExportResult, result []byte) error {
	tx, err := d.BeginTxx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if _, err := tx.ExecContext(ctx, `INSERT INTO dds.tenant_archives (id, tenant_id, source, storage_key, size_bytes, sha256, status)
		VALUES ($1, $2, 'export', $3, $4, $5, 'ready')
		ON CONFLICT (id) DO UPDATE SET size_bytes = EXCLUDED.size_bytes, sha256 = EXCLUDED.sha256, status = 'ready'`,
		in.JobID, in.TenantID, key, res.Archive.SizeBytes, res.Archive.SHA256); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `UPDATE dds.tenant_jobs SET result = $2, processed = coalesce(total, processed) WHERE id = $1`, in.JobID, result); err != nil {
		return err
	}
	return tx.Commit()
}

// exportPhases times the phases of an export or import (logged with its
// end and kept in its result, so an operator sees where a slow job spends
// its time).
type exportPhases struct {
	start, last time.Time
	names       []string
	took        []time.Duration
}

func (p *exportPhases) mark(name string) {
	now := time.Now()
	if p.last.IsZero() {
		p.last = p.start
	}
	p.names, p.took = append(p.names, name), append(p.took, now.Sub(p.last))
	p.last = now
}

func (p *exportPhases) ms() map[string]int64 {
	out := make(map[string]int64, len(p.names))
	for i, n := range p.names {
		out[n] = p.took[i].Milliseconds()
	}
	return out
}

func (p *exportPhases) attrs() []any {
	out := make([]any, 0, 2*len(p.names))
	for i, n := range p.names {
		out = append(out, n, p.took[i].Round(time.Millisecond).String())
	}
	return out
}

// fileMethod is how a file of this type is stored in an archive: deflated
// when it is text, as it is otherwise. Images, video, PDFs and archives are
// compressed already, and deflating their bytes costs an export more CPU
// than its whole records for nothing; an entry's method does not change
// its checksum (that of its bytes), and the importer reads both.
func fileMethod(mimeType string) uint16 {
	mt := strings.ToLower(strings.TrimSpace(strings.SplitN(mimeType, ";", 2)[0]))
	switch {
	case strings.HasPrefix(mt, "text/"), strings.HasSuffix(mt, "json"), strings.HasSuffix(mt, "xml"),
		mt == "application/javascript", mt == "application/x-ndjson", mt == "image/svg+xml":
		return zip.Deflate
	}
	return zip.Store
}

// archiveKey is the storage key of an archive: outside every tenant's
// prefix (a tenant's files are <tenant id>/<file id>).
func archiveKey(id string) string { return "tenant-archives/" + id + ".zip" }

// tableEntry is the archive entry of a table of kind ("entities",
// "relationships" or "history") in a schema's directory dir: the history
// table, one per schema, is dir's history.ndjson.
func tableEntry(dir, kind, table string) string {
	if kind == "history" {
		return dir + "history.ndjson"
	}
	return dir + kind + "/" + table + ".ndjson"
}

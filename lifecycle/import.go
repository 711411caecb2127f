package lifecycle

// Tenant import: an archive (an export of this or another deployment)
// becomes a new tenant. One activity does it and starts over when run
// again: it first removes what an interrupted attempt left, and removes
// what it made if it fails, so a tenant either arrives whole or not at
// all. Keys and webhook secrets are issued anew and shown once.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/uuid"
	"github.com/klauspost/compress/flate"
	"go.temporal.io/sdk/workflow"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/schema"
	"github.com/dds-project/dds/storage"
)

// ImportSpec is what an import job was asked to do.
type ImportSpec struct {
	FileID string `json:"fileId"`
	Name   string `json:"name,omitempty"`
}

// maxLine bounds one NDJSON line of an archive (a record with a large JSON
// or vector field fits many times over).
const maxLine = 64 << 20

// ImportWorkflow makes a tenant from an archive.
func ImportWorkflow(ctx workflow.Context, in Input) (string, error) {
	var a *Activities
	return archiveJob(ctx, in, a.TenantImportLoad)
}

// TenantImportLoad imports the job's archive as tenant in.TenantID.
func (a *Activities) TenantImportLoad(ctx context.Context, in Input) error {
	var done bool
	if err := a.deps.DB.GetContext(ctx, &done, `SELECT result IS NOT NULL FROM dds.tenant_jobs WHERE id = $1`, in.JobID); err != nil || done {
		return err
	}
	if err := a.discard(ctx, in.TenantID); err != nil {
		return err
	}
	err := a.heartbeating(ctx, func(ctx context.Context) error { return a.importArchive(ctx, in) })
	if err != nil {
		if derr := a.discard(context.WithoutCancel(ctx), in.TenantID); derr != nil && a.deps.Log != nil {
			a.deps.Log.Error("tenant import: remove the partial tenant", "tenant", in.TenantID, "err", derr)
		}
		var ae *apperr.Error
		if errors.As(err, &ae) && ae.Code != apperr.Internal && ae.Code != apperr.Unavailable {
			return refused("%s", ae.Message)
		}
	}
	return err
}

// discard removes whatever exists of tenant (an interrupted import's).
func (a *Activities) discard(ctx context.Context, tenant string) error {
	d := a.deps
	if _, err := d.Records.DropTenantSchemas(ctx, tenant, nil); err != nil {
		return err
	}
	if _, err := files.PurgeTenant(ctx, d.DB, d.Storage, tenant, nil); err != nil {
		return err
	}
	_, err := d.DB.ExecContext(ctx, `DELETE FROM dds.tenants WHERE id = $1`, tenant)
	return err
}

// archiveReader reads the entries of a downloaded archive.
type archiveReader struct{ byName map[string]*zip.File }

func (ar *archiveReader) open(name string) (io.ReadCloser, *zip.File, error) {
	f := ar.byName[name]
	if f == nil {
		return nil, nil, apperr.New(apperr.Validation, "the archive has no entry %s", name)
	}
	r, err := f.Open()
	if err != nil {
		return nil, nil, apperr.New(apperr.Validation, "archive entry %s: %v", name, err)
	}
	return r, f, nil
}

func (ar *archiveReader) json(name string, v any) error {
	r, _, err := ar.open(name)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := json.NewDecoder(io.LimitReader(r, maxLine)).Decode(v); err != nil {
		return apperr.New(apperr.Validation, "archive entry %s: %v", name, err)
	}
	return nil
}

// lines returns a reader of the NDJSON lines of an entry (nil, nil at its
// end; blank lines skipped); the slice is valid until the next call.
func lines(name string, r io.Reader) func() ([]byte, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var buf []byte
	n := 0
	return func() ([]byte, error) {
		for {
			buf = buf[:0]
			for {
				chunk, err := br.ReadSlice('\n')
				buf = append(buf, chunk...)
				if len(buf) > maxLine {
					return nil, apperr.New(apperr.Validation, "%s, line %d: longer than %d bytes", name, n+1, maxLine)
				}
				if errors.Is(err, bufio.ErrBufferFull) {
					continue
				}
				if errors.Is(err, io.EOF) {
					if len(bytes.TrimSpace(buf)) == 0 {
						return nil, nil
					}
					break
				}
				if err != nil {
					return nil, apperr.New(apperr.Validation, "%s: %v", name, err)
				}
				break
			}
			n++
			if line := bytes.TrimSpace(buf); len(line) > 0 {
				return line, nil
			}
		}
	}
}

func (a *Activities) importArchive(ctx context.Context, in Input) error {
	d := a.deps
	phases := exportPhases{start: time.Now()}
	var specRaw []byte
	if err := d.DB.GetContext(ctx, &specRaw, `SELECT spec FROM dds.tenant_jobs WHERE id = $1`, in.JobID); err != nil {
		return err
	}
	var spec ImportSpec
	if err := json.Unmarshal(specRaw, &spec); err != nil {
		return err
	}
	var key string
	if err := d.DB.GetContext(ctx, &key, `SELECT storage_key FROM dds.tenant_archives WHERE id = $1 AND status = 'ready'`, spec.FileID); err != nil {
		return apperr.New(apperr.Validation, "archive %s is gone", spec.FileID)
	}
	// The archive is read at random (a zip's directory is at its end): it
	// is copied to a temporary file first, never held in memory.
	src, err := d.Storage.Open(ctx, key)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp("", "dds-import-*.zip")
	if err != nil {
		src.Close()
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	size, err := io.Copy(tmp, src)
	src.Close()
	if err != nil {
		return err
	}
	zr, err := zip.NewReader(tmp, size)
	if err != nil {
		return apperr.New(apperr.Validation, "the archive is not a zip file: %v", err)
	}
	// klauspost/compress inflates as the standard library does, faster.
	zr.RegisterDecompressor(zip.Deflate, flate.NewReader)
	ar := &archiveReader{byName: map[string]*zip.File{}}
	for _, f := range zr.File {
		ar.byName[f.Name] = f
	}
	phases.mark("download")
	var m Manifest
	if err := ar.json("manifest.json", &m); err != nil {
		return err
	}
	if m.Format != ArchiveFormat || m.FormatVersion != ArchiveFormatVersion {
		return apperr.New(apperr.Validation, "manifest.json: not a %s of version %d", ArchiveFormat, ArchiveFormatVersion)
	}
	name := m.Tenant.Name
	if spec.Name != "" {
		name = spec.Name
	}
	if err := d.Tenants.Restore(ctx, in.TenantID, name); err != nil {
		return err
	}
	var total int64
	for _, s := range m.Schemas {
		for _, t := range append(append([]ManifestTable{}, s.Entities...), s.Relationships...) {
			total += t.Rows
		}
		if s.History != nil {
			total += s.History.Rows
		}
	}
	total += m.Files
	var done int64
	progress, err := a.progress(ctx, in.JobID, total, &done)
	if err != nil {
		return err
	}
	counts := map[string]int64{"records": 0, "edges": 0, "files": 0}
	for _, ms := range m.Schemas {
		if !schema.ValidIdent(ms.Name) {
			return apperr.New(apperr.Validation, "manifest.json: schema name %q is not a name", ms.Name)
		}
		dir := "schemas/" + ms.Name + "/"
		var versions []schema.StoredVersion
		if err := ar.json(dir+"versions.json", &versions); err != nil {
			return err
		}
		info, err := d.Schemas.Restore(ctx, in.TenantID, versions, ms.Active)
		if err != nil {
			return fmt.Errorf("schema %s: %w", ms.Name, err)
		}
		if info.Name != ms.Name {
			return apperr.New(apperr.Validation, "schema %s: its last version is named %s", ms.Name, info.Name)
		}
		pg := schema.PgSchemaName(info.ID)
		load := func(kind, table string) error {
			entry := tableEntry(dir, kind, table)
			r, _, err := ar.open(entry)
			if err != nil {
				return err
			}
			defer r.Close()
			base := done
			n, err := d.Records.LoadTable(ctx, pg, table, lines(entry, r), func(n int64) {
				done = base + n
				_ = progress(kind)
			})
			if err != nil {
				return err
			}
			done = base + n
			switch kind {
			case "entities":
				counts["records"] += n
			case "history":
				counts["versions"] += n
			default:
				counts["edges"] += n
			}
			return progress(kind)
		}
		// Entities first: edges reference their records.
		for i := range info.Entities {
			if err := load("entities", info.Entities[i].Name); err != nil {
				return err
			}
		}
		for i := range info.Relationships {
			if err := load("relationships", schema.RelTable(&info.Relationships[i])); err != nil {
				return err
			}
		}
		// The versions the tenant's history had (archives of earlier DDS
		// versions have none; their records get a first version at their
		// next write, as when history is switched on). The records above
		// were loaded without the history trigger: an import is no write.
		if ms.History != nil {
			if !keepsHistory(info.Entities) {
				return apperr.New(apperr.Validation, "schema %s: the archive has history but no entity of the schema keeps it", ms.Name)
			}
			if err := load("history", schema.HistoryTable); err != nil {
				return err
			}
		}
	}
	phases.mark("tables")
	n, err := a.importFiles(ctx, ar, in.TenantID, func() error { done++; return progress("files") })
	if err != nil {
		return err
	}
	counts["files"] = n
	phases.mark("files")
	result := map[string]any{"tenantId": in.TenantID, "name": name, "counts": counts, "secretsShown": false}
	for _, sec := range d.Sections {
		next := func(any) (bool, error) { return false, nil }
		entry := "sections/" + sec.Name() + ".ndjson"
		if f := ar.byName[entry]; f != nil {
			r, _, err := ar.open(entry)
			if err != nil {
				return err
			}
			defer r.Close()
			read := lines(entry, r)
			next = func(v any) (bool, error) {
				line, err := read()
				if err != nil || line == nil {
					return false, err
				}
				if err := json.Unmarshal(line, v); err != nil {
					return false, apperr.New(apperr.Validation, "%s: %v", entry, err)
				}
				return true, nil
			}
		}
		shown, err := sec.Import(ctx, in.TenantID, next)
		if err != nil {
			return fmt.Errorf("%s: %w", sec.Name(), err)
		}
		if shown != nil {
			result[sec.Name()] = shown
		}
	}
	phases.mark("sections")
	result["phasesMs"] = phases.ms()
	if d.Log != nil {
		d.Log.Info("tenant import loaded", append([]any{"tenant", in.TenantID, "job", in.JobID, "records", counts["records"],
			"edges", counts["edges"], "files", counts["files"]}, phases.attrs()...)...)
	}
	b, err := json.Marshal(result)
	if err != nil {
		return err
	}
	_, err = d.DB.ExecContext(ctx, `UPDATE dds.tenant_jobs SET result = $2, processed = coalesce(total, processed) WHERE id = $1`, in.JobID, b)
	return err
}

// importFiles stores each file of files.ndjson under the new tenant, from
// its files/<id> entry, and records it.
func (a *Activities) importFiles(ctx context.Context, ar *archiveReader, tenant string, each func() error) (int64, error) {
	d := a.deps
	putter, ok := d.Storage.(storage.Putter)
	if !ok {
		return 0, apperr.New(apperr.Validation, "this deployment's file storage cannot store imported files")
	}
	r, _, err := ar.open("files.ndjson")
	if err != nil {
		return 0, err
	}
	defer r.Close()
	read := lines("files.ndjson", r)
	var n int64
	for {
		line, err := read()
		if err != nil || line == nil {
			return n, err
		}
		var f files.Exported
		if err := json.Unmarshal(line, &f); err != nil {
			return n, apperr.New(apperr.Validation, "files.ndjson, line %d: %v", n+1, err)
		}
		if _, err := uuid.Parse(f.ID); err != nil {
			return n, apperr.New(apperr.Validation, "files.ndjson, line %d: id %q is not a file id", n+1, f.ID)
		}
		entry := "files/" + f.ID
		body, zf, err := ar.open(entry)
		if err != nil {
			return n, err
		}
		if int64(zf.UncompressedSize64) != f.SizeBytes {
			body.Close()
			return n, apperr.New(apperr.Validation, "%s has %d bytes; files.ndjson says %d", entry, zf.UncompressedSize64, f.SizeBytes)
		}
		// Put needs to seek (S3 signs the body): through a temporary file.
		if err := putVia(ctx, putter, files.StorageKey(tenant, f.ID), f.MimeType, body, f.SizeBytes); err != nil {
			body.Close()
			return n, err
		}
		body.Close()
		if err := files.Restore(ctx, d.DB, tenant, f); err != nil {
			return n, err
		}
		n++
		if err := each(); err != nil {
			return n, err
		}
	}
}

func putVia(ctx context.Context, p storage.Putter, key, contentType string, r io.Reader, size int64) error {
	tmp, err := os.CreateTemp("", "dds-import-file-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	n, err := io.Copy(tmp, io.LimitReader(r, size+1))
	if err != nil {
		return apperr.New(apperr.Validation, "file %s: %v", key, err)
	}
	if n != size {
		return apperr.New(apperr.Validation, "file %s has %d bytes, want %d", key, n, size)
	}
	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	return p.Put(ctx, key, contentType, tmp, size)
}

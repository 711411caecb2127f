package jobs

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"golang.org/x/sync/errgroup"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// MaxLineBytes is the longest line (NDJSON) or physical line (CSV) an
// import reads; a longer one fails the job (the file is most likely not
// NDJSON or CSV).
const MaxLineBytes = 1 << 20

// stagingSchema holds the UNLOGGED staging tables of running imports.
const stagingSchema = "dds_jobs"

// stageName is the staging table of a job (unqualified).
func stageName(id string) string { return "stage_" + strings.ReplaceAll(id, "-", "") }

// stageTable is the qualified staging table of a job. Job ids are UUIDs
// made here, so the name is a valid identifier.
func stageTable(id string) string { return schema.QualifiedIdent(stagingSchema, stageName(id)) }

// Staging columns besides the entity's fields: the 0-based line (or CSV
// data row) and the id the record will get. They start with an underscore,
// which no field name may.
const (
	colLine = `"_line"`
	colID   = `"_id"`
)

// failures collects failed items: every one is counted, the first
// MaxFailures are kept.
type failures struct {
	list  []records.BatchFailure
	count atomic.Int64 // read by the COPY goroutine for progress
}

func (f *failures) add(index int64, item any, err error) {
	f.count.Add(1)
	if len(f.list) >= MaxFailures {
		return
	}
	e := apperr.As(err)
	be := records.BatchError{Code: e.Code, Message: e.Message, Details: e.Details}
	if len(e.Details) > 0 {
		be.Field = e.Details[0].Field
	}
	f.list = append(f.list, records.BatchFailure{Index: int(index), Item: item, Error: be})
}

// merge adds other's failures, keeping the MaxFailures lowest indexes.
func (f *failures) merge(o *failures) {
	f.count.Add(o.count.Load())
	f.list = append(f.list, o.list...)
	slices.SortStableFunc(f.list, func(a, b records.BatchFailure) int { return cmp.Compare(a.Index, b.Index) })
	if len(f.list) > MaxFailures {
		f.list = f.list[:MaxFailures]
	}
}

// stage streams the job's file, validates each item as the API validates a
// create, COPYs the valid rows into a fresh UNLOGGED staging table, then
// runs the checks that need every row in SQL: unique values within the file
// and against the stored records, and FILE references to the tenant's
// confirmed files. It returns the failures (none: the job may be applied).
func (x *Executor) stage(ctx context.Context, j *jobRow, spec Spec, sc *records.Scope, e *schema.Entity, beat Beat) (*Result, error) {
	f, err := loadConfirmedFile(ctx, x.db, j.TenantID, spec.FileID)
	if err != nil {
		return nil, err
	}
	// A first pass counts the lines, so progress has a total (a CSV field
	// holding line breaks makes it an upper bound until staging ends).
	total, err := x.countLines(ctx, f.StorageKey)
	if err != nil {
		return nil, err
	}
	if spec.Format == FormatCSV && total > 0 {
		total-- // the header
	}
	if _, err := x.Progress(ctx, j.ID, 0, &total); err != nil {
		return nil, fmt.Errorf("record progress: %w", err)
	}

	table := stageTable(j.ID)
	cols := []string{"_line", "_id"}
	defs := []string{colLine + " bigint NOT NULL", colID + " text NOT NULL"}
	for i := range e.Fields {
		// Text: every value arrives in its column type's text form (what
		// the API binds), and is cast when checked and applied.
		cols = append(cols, e.Fields[i].Name)
		defs = append(defs, schema.Ident(e.Fields[i].Name)+" text")
	}
	if _, err := x.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+table+`; CREATE UNLOGGED TABLE `+table+` (`+strings.Join(defs, ", ")+`)`); err != nil {
		return nil, fmt.Errorf("create staging table: %w", err)
	}

	rc, err := x.objects.Open(ctx, f.StorageKey)
	if err != nil {
		return nil, fmt.Errorf("open import file: %w", err)
	}
	defer rc.Close()

	fails := &failures{}
	staged, err := x.copyRows(ctx, rc, spec.Format, e, cols, stageName(j.ID), fails, beat)
	if err != nil {
		return nil, err
	}
	if _, err := x.Progress(ctx, j.ID, staged+fails.count.Load(), ptr(staged+fails.count.Load())); err != nil {
		return nil, fmt.Errorf("record progress: %w", err)
	}
	if _, err := x.db.ExecContext(ctx, `ANALYZE `+table); err != nil {
		return nil, fmt.Errorf("analyze staging table: %w", err)
	}
	sqlFails, err := x.checkStaged(ctx, sc, e, table)
	if err != nil {
		return nil, err
	}
	fails.merge(sqlFails)
	return &Result{FailureCount: fails.count.Load(), Failed: nonNil(fails.list)}, nil
}

func nonNil(l []records.BatchFailure) []records.BatchFailure {
	if l == nil {
		return []records.BatchFailure{}
	}
	return l
}

func ptr[T any](v T) *T { return &v }

// countLines counts the non-empty lines of the stored file.
func (x *Executor) countLines(ctx context.Context, key string) (int64, error) {
	rc, err := x.objects.Open(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("open import file: %w", err)
	}
	defer rc.Close()
	buf := make([]byte, 256<<10)
	var n int64
	last := byte('\n')
	for {
		k, err := rc.Read(buf)
		for _, b := range buf[:k] {
			if b == '\n' && last != '\n' {
				n++
			}
			last = b
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return 0, fmt.Errorf("read import file: %w", err)
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// stagedRow is one validated item ready for COPY.
type stagedRow []any

// copyRows parses and validates the items on one goroutine and COPYs them
// on another (bounded channel: memory stays flat whatever the file size).
// It returns how many rows were staged.
func (x *Executor) copyRows(ctx context.Context, r io.Reader, format string, e *schema.Entity, cols []string, table string, fails *failures, beat Beat) (int64, error) {
	g, gctx := errgroup.WithContext(ctx)
	batches := make(chan []stagedRow, 8)
	pos := make(map[*schema.Field]int, len(e.Fields))
	for i := range e.Fields {
		pos[&e.Fields[i]] = 2 + i
	}
	g.Go(func() error {
		defer close(batches)
		p := &parser{e: e, pos: pos, width: len(cols), fails: fails}
		batch := make([]stagedRow, 0, 512)
		emit := func(row stagedRow) error {
			batch = append(batch, row)
			if len(batch) == cap(batch) {
				select {
				case batches <- batch:
				case <-gctx.Done():
					return gctx.Err()
				}
				batch = make([]stagedRow, 0, 512)
			}
			return nil
		}
		var err error
		if format == FormatCSV {
			err = p.csv(r, emit)
		} else {
			err = p.ndjson(r, emit)
		}
		if err != nil {
			return err
		}
		if len(batch) > 0 {
			select {
			case batches <- batch:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	var staged int64
	g.Go(func() error {
		conn, err := x.db.Conn(gctx)
		if err != nil {
			return fmt.Errorf("staging connection: %w", err)
		}
		defer conn.Close()
		return conn.Raw(func(dc any) error {
			pc, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("staging needs the pgx driver, got %T", dc)
			}
			var batch []stagedRow
			next := 0
			last := time.Now()
			src := pgx.CopyFromFunc(func() ([]any, error) {
				if next == len(batch) {
					var more bool
					if batch, more = <-batches; !more {
						return nil, gctx.Err()
					}
					next = 0
					staged += int64(len(batch))
					if time.Since(last) > time.Second {
						last = time.Now()
						if err := beat(staged + fails.count.Load()); err != nil {
							return nil, err
						}
					}
				}
				next++
				return batch[next-1], nil
			})
			_, err := pc.Conn().CopyFrom(gctx, pgx.Identifier{stagingSchema, table}, cols, src)
			return copyError(err)
		})
	})
	err := g.Wait()
	return staged, err
}

// copyError wraps a COPY failure (nil stays nil). A Beat's error (a
// cancellation) is kept as is.
func copyError(err error) error {
	if err == nil || errors.Is(err, ErrCancelled) {
		return err
	}
	return fmt.Errorf("COPY into staging: %w", err)
}

// parser turns items into staged rows, recording the failures.
type parser struct {
	e     *schema.Entity
	pos   map[*schema.Field]int
	width int
	fails *failures
}

// row validates one item (index = its line or data row) as a create.
func (p *parser) row(index int64, item map[string]any, echo any) (stagedRow, bool) {
	prepared, errs := records.Prepare(p.e, item, records.Create)
	if len(errs) > 0 {
		p.fails.add(index, echo, apperr.Fields(errs))
		return nil, false
	}
	row := make(stagedRow, p.width)
	row[0] = index
	row[1] = uuid.Must(uuid.NewV7()).String()
	for k, f := range prepared.Fields {
		t, ok, err := records.TextValue(prepared.Values[k])
		if err != nil {
			p.fails.add(index, echo, apperr.Field(f.Name, "cannot be stored: %v", err))
			return nil, false
		}
		if ok {
			row[p.pos[f]] = t
		}
	}
	return row, true
}

func (p *parser) ndjson(r io.Reader, emit func(stagedRow) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLineBytes)
	var line int64 = -1
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		err := d.Decode(&v)
		if err == nil && d.More() {
			err = errors.New("more than one JSON value on the line")
		}
		if err != nil {
			p.fails.add(line, truncate(b), apperr.New(apperr.Validation, "line %d is not valid JSON: %v", line, err))
			continue
		}
		obj, ok := v.(map[string]any)
		if !ok {
			p.fails.add(line, v, apperr.New(apperr.Validation, "line %d must be a JSON object of fields", line))
			continue
		}
		if row, ok := p.row(line, obj, obj); ok {
			if err := emit(row); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return apperr.New(apperr.Validation, "line %d is longer than %d bytes: is the file NDJSON (one JSON object per line)?", line+1, MaxLineBytes)
		}
		return fmt.Errorf("read import file: %w", err)
	}
	return nil
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// csv reads RFC 4180 CSV: a header row of field names, then one record per
// row; each value is parsed by its field's type (a list, JSON or VECTOR
// field as JSON), an empty value is null.
func (p *parser) csv(r io.Reader, emit func(stagedRow) error) error {
	cr := csv.NewReader(&lineLimit{r: r, max: MaxLineBytes})
	cr.ReuseRecord = true
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil
	}
	if err != nil {
		return csvError(err)
	}
	fields := make([]*schema.Field, len(header))
	seen := map[string]bool{}
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if seen[h] {
			return apperr.Field(h, "the CSV header names %q twice", h)
		}
		seen[h] = true
		if schema.IsReserved(h) {
			continue // system fields are ignored, as in the API
		}
		f, ok := p.e.Field(h)
		if !ok {
			return apperr.Field(h, "the CSV header names %q, which is not a field of %s", h, p.e.Name)
		}
		fields[i] = f
	}
	cr.FieldsPerRecord = len(header)
	for index := int64(0); ; index++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, csv.ErrFieldCount) {
			p.fails.add(index, strings.Join(rec, ","), apperr.New(apperr.Validation, "row %d has %d values; the header has %d", index, len(rec), len(header)))
			continue
		}
		if err != nil {
			return csvError(err)
		}
		item := make(map[string]any, len(rec))
		echo := make(map[string]any, len(rec))
		var errs []apperr.FieldError
		for i, s := range rec {
			echo[header[i]] = s
			if fields[i] == nil {
				continue
			}
			v, err := csvValue(fields[i], s)
			if err != nil {
				errs = append(errs, apperr.FieldError{Field: fields[i].Name, Message: err.Error()})
				continue
			}
			item[fields[i].Name] = v
		}
		if len(errs) > 0 {
			p.fails.add(index, echo, apperr.Fields(errs))
			continue
		}
		if row, ok := p.row(index, item, echo); ok {
			if err := emit(row); err != nil {
				return err
			}
		}
	}
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return apperr.New(apperr.Validation, "the file is not valid CSV: line %d: %v", pe.Line, pe.Err)
	}
	if errors.Is(err, errLineTooLong) {
		return apperr.New(apperr.Validation, "a line is longer than %d bytes: is the file CSV?", MaxLineBytes)
	}
	return fmt.Errorf("read import file: %w", err)
}

// csvValue parses one CSV value by its field's type.
func csvValue(f *schema.Field, s string) (any, error) {
	if s == "" {
		return nil, nil
	}
	if f.List || f.Type == schema.JSON || f.Type == schema.Vector {
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil || d.More() {
			return nil, errors.New("must be JSON (list, JSON and VECTOR values are written as JSON in CSV)")
		}
		return v, nil
	}
	switch f.Type {
	case schema.Integer, schema.Number:
		return json.Number(strings.TrimSpace(s)), nil
	case schema.Boolean:
		b, err := strconv.ParseBool(strings.TrimSpace(s))
		if err != nil {
			return nil, errors.New("must be a boolean (true or false)")
		}
		return b, nil
	}
	return s, nil
}

var errLineTooLong = errors.New("line too long")

// lineLimit fails a read once a physical line exceeds max bytes, so a file
// without line breaks cannot make the CSV reader buffer all of it.
type lineLimit struct {
	r   io.Reader
	max int
	n   int
}

func (l *lineLimit) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	for _, b := range p[:n] {
		if b == '\n' {
			l.n = 0
			continue
		}
		l.n++
		if l.n > l.max {
			return n, errLineTooLong
		}
	}
	return n, err
}

// checkStaged runs the set-based checks on the staged rows
// (records.CheckStaged).
func (x *Executor) checkStaged(ctx context.Context, sc *records.Scope, e *schema.Entity, table string) (*failures, error) {
	problems, more, err := x.records.CheckStaged(ctx, sc, e.Name, table, MaxFailures)
	if err != nil {
		return nil, err
	}
	fails := &failures{}
	for _, p := range problems {
		fails.add(p.Line, p.Item, p.Err)
	}
	fails.count.Add(more)
	return fails, nil
}

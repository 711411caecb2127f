package records

// Whole-table reads and writes for tenant export and import. They serve
// no principal (the operator exports or imports a whole tenant), so they
// take the Postgres schema and table of a DDS schema the caller resolved
// from the tenant's own dds.schemas rows and validated definition; each
// checks that the table exists in that schema before naming it in SQL.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/lib/pq"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

func quoted(cols []string) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += ", "
		}
		s += schema.Ident(c)
	}
	return s
}

// DumpTable writes every row of pg.table to w, in its physical order, as one JSON object
// of its stored columns per line, members in the order of their names,
// exactly as Postgres's row_to_json prints the row (generated columns
// such as the full-text one are left out). The table streams out in
// COPY's text format and the JSON is rendered here (dumpjson.go), which
// spares Postgres the JSON work; a column of a type dumpjson.go does not
// render sends the table through row_to_json instead. Naming the columns in name order, not the table's, makes
// the bytes of a row the same in every deployment, whatever order its
// columns were added in there, so a re-export after an import checksums
// the same. It reads in the snapshot an
// export's transaction exported (pg_export_snapshot), so every table of an
// archive is of the same instant, and with COPY … TO STDOUT, so rows
// stream at COPY's speed and memory stays bounded whatever the table's
// size. It returns the rows written.
//
// CSV with a delimiter and a quote character that Postgres never leaves
// raw in JSON text (control characters are \u-escaped) makes COPY emit
// each JSON text as is, one per line.
func (s *Store) DumpTable(ctx context.Context, snapshot, pg, table string, w io.Writer) (int64, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, apperr.Wrap(err, "dump %s", table)
	}
	defer conn.Close()
	var n int64
	err = conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("dumping needs the pgx driver, got %T", dc)
		}
		c := pc.Conn()
		tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // read-only
		if _, err := tx.Exec(ctx, `SET TRANSACTION SNAPSHOT `+pq.QuoteLiteral(snapshot)); err != nil {
			return err
		}
		cols, err := dumpColumns(ctx, tx, pg, table)
		if err != nil {
			return err
		}
		if len(cols) == 0 {
			return apperr.New(apperr.NotFound, "no table %s in schema %s", table, pg)
		}
		slices.SortFunc(cols, func(a, b dumpCol) int { return strings.Compare(a.name, b.name) })
		names := make([]string, len(cols))
		kinds := make([]dumpKind, len(cols))
		arrays := make([]bool, len(cols))
		known := true
		for i, c := range cols {
			names[i], arrays[i] = c.name, c.array
			var ok bool
			kinds[i], ok = dumpKindOf(c.typname)
			known = known && ok
		}
		// In the table's physical order: a sequential scan from its first
		// block (synchronize_seqscans would let it start where another
		// scan of the table is), by this backend alone (a parallel scan's
		// workers would interleave their blocks). Reading by id through the
		// primary key cost Postgres twice the CPU of this scan while the worker
		// rendered beside it (docs/operations.md, "Sixth run"). The bytes
		// of a re-export after an import are still the same: the import
		// copies the archive's lines in order into a new table, whose
		// physical order is then the archive's.
		//
		// Timestamps print in ISO style for appendTimestamp; JSON's form
		// (row_to_json's path) does not depend on DateStyle.
		if _, err := tx.Exec(ctx, `SET LOCAL synchronize_seqscans = off; SET LOCAL max_parallel_workers_per_gather = 0; SET LOCAL DateStyle = ISO`); err != nil {
			return err
		}
		var tag pgconn.CommandTag
		if known {
			nw := newNDJSONWriter(w, names, kinds, arrays)
			tag, err = c.PgConn().CopyTo(ctx, nw, fmt.Sprintf(`COPY (SELECT %s FROM %s) TO STDOUT`,
				quoted(names), schema.QualifiedIdent(pg, table)))
			if err != nil {
				return err
			}
			if err := nw.Close(); err != nil {
				return err
			}
		} else {
			tag, err = c.PgConn().CopyTo(ctx, w, fmt.Sprintf(`COPY (SELECT row_to_json(r)::text FROM (SELECT %s FROM %s t) r) TO STDOUT (FORMAT csv, DELIMITER E'\x02', QUOTE E'\x01')`,
				"t."+joinWith(names, ", t."), schema.QualifiedIdent(pg, table)))
			if err != nil {
				return err
			}
		}
		n = tag.RowsAffected()
		return tx.Commit(ctx)
	})
	if err != nil {
		return n, apperr.Wrap(err, "dump %s", table)
	}
	return n, nil
}

// LoadTable inserts rows into pg.table in one transaction, as they were:
// the table's own triggers (those of history) do not fire for them, so an
// import writes no history versions of its own (an archive carries the
// history the tenant had, loaded into the history table like any other).
// Each line from
// next (nil at the end) is one JSON object of column values as DumpTable
// wrote them. The lines become rows of COPY's text format in the worker
// (loadcopy.go) and are copied (COPY … FROM STDIN, streamed) into the
// table, each value converted by its column's input function, so a value
// of the wrong type fails the load, naming the record, and nothing is
// written. A table with a column of a type DumpTable does not render
// itself is loaded through a temporary table and jsonb_populate_record
// instead. Unknown members are ignored; missing ones are NULL. It returns
// the rows inserted.
func (s *Store) LoadTable(ctx context.Context, pg, table string, next func() ([]byte, error), progress func(int64)) (int64, error) {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return 0, apperr.Wrap(err, "load %s", table)
	}
	defer conn.Close()
	var inserted int64
	err = conn.Raw(func(dc any) error {
		pc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("loading needs the pgx driver, got %T", dc)
		}
		tx, err := pc.Conn().Begin(ctx)
		if err != nil {
			return err
		}
		defer tx.Rollback(ctx) //nolint:errcheck // a no-op after Commit
		cols, err := dumpColumns(ctx, tx, pg, table)
		if err != nil {
			return err
		}
		if len(cols) == 0 {
			return apperr.New(apperr.NotFound, "no table %s in schema %s", table, pg)
		}
		// Disabled for the load alone: ALTER TABLE is transactional, so a
		// rollback undoes it, and the ENABLE below, before the commit, ends
		// it on success (the table is an import's own meanwhile: ALTER
		// TABLE locks it).
		qt := schema.QualifiedIdent(pg, table)
		if _, err := tx.Exec(ctx, `ALTER TABLE `+qt+` DISABLE TRIGGER USER`); err != nil {
			return err
		}
		lc := make([]loadColumn, len(cols))
		names := make([]string, len(cols))
		known := true
		for i, c := range cols {
			_, ok := dumpKindOf(c.typname)
			known = known && ok
			names[i] = c.name
			lc[i] = loadColumn{name: c.name, json: c.typname == "json" || c.typname == "jsonb", array: c.array}
		}
		if !known {
			inserted, err = loadThroughJSONB(ctx, tx, pg, table, names, next, progress)
		} else {
			src := newCopyRows(lc, next, progress)
			var tag pgconn.CommandTag
			tag, err = tx.Conn().PgConn().CopyFrom(ctx, src, fmt.Sprintf(`COPY %s (%s) FROM STDIN`, qt, quoted(names)))
			switch {
			case src.readErr != nil: // the archive's own (a line too long), or reading it failed
				err = src.readErr
			case src.convErr != nil:
				err = apperr.New(apperr.Validation, "%s, %v", table, src.convErr)
			case err != nil:
				err = loadError(table, copyRecord(err), err)
			}
			inserted = tag.RowsAffected()
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `ALTER TABLE `+qt+` ENABLE TRIGGER USER`); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	return inserted, err
}

// copyRecord is the 0-based record a COPY … FROM failed on, from its
// error's context ("COPY T, line 5, column n: …"); -1 when it names none.
func copyRecord(err error) int64 {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return -1
	}
	// The context may have lines of its own first ("JSON data, line 1: …").
	where := pe.Where
	if c := strings.Index(where, "COPY "); c >= 0 {
		where = where[c:]
	}
	i := strings.Index(where, ", line ")
	if i < 0 {
		return -1
	}
	var n int64
	for _, b := range []byte(where[i+len(", line "):]) {
		if b < '0' || b > '9' {
			break
		}
		n = n*10 + int64(b-'0')
	}
	return n - 1
}

// loadThroughJSONB loads a table whose columns include a type DumpTable
// leaves to row_to_json: the lines are copied into a temporary table and
// inserted from there in one statement, jsonb_populate_record converting
// each value, in the lines' order (so the table's physical order is the
// archive's, as after a COPY, and a re-export has the same bytes).
func loadThroughJSONB(ctx context.Context, tx pgx.Tx, pg, table string, cols []string, next func() ([]byte, error), progress func(int64)) (int64, error) {
	if _, err := tx.Exec(ctx, `CREATE TEMP TABLE dds_load (n bigserial, line jsonb) ON COMMIT DROP`); err != nil {
		return 0, err
	}
	var n int64
	var lineErr error
	src := pgx.CopyFromFunc(func() ([]any, error) {
		b, err := next()
		if err != nil || b == nil {
			lineErr = err
			return nil, err
		}
		n++
		if progress != nil && n%10_000 == 0 {
			progress(n)
		}
		return []any{string(b)}, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"dds_load"}, []string{"line"}, src); err != nil {
		if lineErr != nil {
			return 0, lineErr
		}
		return 0, loadError(table, n-1, err)
	}
	qt := schema.QualifiedIdent(pg, table)
	tag, err := tx.Exec(ctx, fmt.Sprintf(`INSERT INTO %s (%s) SELECT %s FROM dds_load l, jsonb_populate_record(NULL::%s, l.line) r ORDER BY l.n`,
		qt, quoted(cols), "r."+joinWith(cols, ", r."), qt))
	if err != nil {
		return 0, loadError(table, -1, err)
	}
	return tag.RowsAffected(), nil
}

func joinWith(cols []string, sep string) string {
	s := ""
	for i, c := range cols {
		if i > 0 {
			s += sep
		}
		s += schema.Ident(c)
	}
	return s
}

// loadError names the table (and line, when known) a load failed on, with
// Postgres' reason, which names the value and type, never SQL, when the
// archive's data is at fault (a data exception or an integrity violation:
// SQLSTATE classes 22 and 23). Any other failure (a lost connection, a
// timeout, a full disk) is not the archive's: it stays an internal error,
// which the job's step retries.
func loadError(table string, line int64, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || !strings.HasPrefix(pe.Code, "22") && !strings.HasPrefix(pe.Code, "23") {
		return apperr.Wrap(err, "load %s", table)
	}
	msg := pe.Message
	if pe.Detail != "" {
		msg += " (" + pe.Detail + ")"
	}
	if line >= 0 {
		return apperr.New(apperr.Validation, "%s, record %d: %s", table, line+1, msg)
	}
	return apperr.New(apperr.Validation, "%s: %s", table, msg)
}

// dumpCol is a stored column of a dumped table and its type's name (of
// the element type, for an array).
type dumpCol struct {
	name, typname string
	array         bool
}

func dumpColumns(ctx context.Context, tx pgx.Tx, pg, table string) ([]dumpCol, error) {
	rows, err := tx.Query(ctx, `SELECT a.attname, coalesce(e.typname, t.typname), e.oid IS NOT NULL
		FROM pg_attribute a
		JOIN pg_class c ON c.oid = a.attrelid
		JOIN pg_namespace n ON n.oid = c.relnamespace
		JOIN pg_type t ON t.oid = a.atttypid
		LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A'
		WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
		ORDER BY a.attnum`, pg, table)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (dumpCol, error) {
		var c dumpCol
		err := r.Scan(&c.name, &c.typname, &c.array)
		return c, err
	})
}

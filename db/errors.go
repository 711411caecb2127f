package db

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dds-project/dds/apperr"
)

// Unavailable reports whether err means Postgres could not be reached or went
// away — a refused or reset connection, a server shutting down or starting
// up, a connection that broke mid-statement — as opposed to a statement
// Postgres refused. Such a failure is worth retrying later, so the API
// answers 503 with Retry-After rather than 500. It reads SQLSTATEs through
// the SQLState method both lib/pq and pgx errors have, so it does not depend
// on the driver.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var st interface{ SQLState() string }
	if errors.As(err, &st) {
		c := st.SQLState()
		switch {
		case strings.HasPrefix(c, "08"): // connection_exception
			return true
		case c == "57P01", c == "57P02", c == "57P03": // admin/crash shutdown, cannot connect now
			return true
		case c == "53300": // too_many_connections
			return true
		}
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) ||
		errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// LimitExceeded reports whether Postgres refused a value because it exceeds
// one of its own limits (SQLSTATE 54000 program_limit_exceeded: an index row
// larger than a third of a page, a tsvector over 1 MB), which is the caller's
// input to blame, not the server.
func LimitExceeded(err error) bool {
	var st interface{ SQLState() string }
	return errors.As(err, &st) && strings.HasPrefix(st.SQLState(), "54")
}

// PgError returns the Postgres error inside err, if there is one.
func PgError(err error) (*pgconn.PgError, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe, true
	}
	return nil, false
}

// Classify returns err as a public error: apperr.As, except that an internal
// error caused by an unreachable database becomes UNAVAILABLE (503), since
// retrying later will work. Every surface (REST, GraphQL, Connect) renders
// errors through it.
func Classify(err error) *apperr.Error {
	e := apperr.As(err)
	if e.Code == apperr.Internal && Unavailable(e.Err) {
		return &apperr.Error{Code: apperr.Unavailable, Message: "the database is unavailable; retry later", Err: err}
	}
	return e
}

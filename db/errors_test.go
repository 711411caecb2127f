package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

func TestUnavailable(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"refused dial", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{"wrapped refused", fmt.Errorf("load key: %w", syscall.ECONNREFUSED), true},
		{"bad conn", driver.ErrBadConn, true},
		{"eof mid-statement", fmt.Errorf("query: %w", io.ErrUnexpectedEOF), true},
		{"admin shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"cannot connect now", &pgconn.PgError{Code: "57P03"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"statement timeout", &pgconn.PgError{Code: "57014"}, false},
		{"cancelled", context.Canceled, false},
		{"other", errors.New("boom"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Unavailable(c.err); got != c.want {
				t.Errorf("Unavailable(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

func TestLimitExceeded(t *testing.T) {
	if !LimitExceeded(fmt.Errorf("insert: %w", &pgconn.PgError{Code: "54000"})) {
		t.Error("54000 is a limit")
	}
	if LimitExceeded(&pgconn.PgError{Code: "22001"}) || LimitExceeded(errors.New("x")) {
		t.Error("only class 54 is a limit")
	}
}

package db

import (
	"context"
	"database/sql/driver"
	"errors"
	"net"

	"github.com/jackc/pgx/v5/pgconn"
)

// Through a transaction pooler a connection never sends a cancel request.
// Choosing pgconn.DeadlineContextWatcherHandler (db.go) keeps a statement
// whose context ends from sending one, but pgx also sends one whenever it
// closes a connection it considers broken (pgconn's asyncClose: a
// statement interrupted by its deadline, a client gone mid-request), and
// PgBouncer 1.18 exits on a cancel request that races its client's close
// ("FATAL ... disconnect_client(): bad client state"), taking every pooled
// connection of every server with it. pgx dials cancel requests through
// the same DialFunc as connections, so the pool marks the contexts of its
// own connection attempts (connectingConnector) and the dialer refuses any
// other dial (noCancelDial): asyncClose then only sends Terminate and
// closes, and Postgres stops the statement within
// client_connection_check_interval (the pooler's connect_query sets it).

// errNoCancelRequest is what a cancel request's dial gets.
var errNoCancelRequest = errors.New("db: no cancel requests through a transaction pooler")

type connectingKey struct{}

// connectingConnector marks the context of every connection attempt of the
// pool it serves.
type connectingConnector struct{ driver.Connector }

func (c connectingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	return c.Connector.Connect(context.WithValue(ctx, connectingKey{}, true))
}

// noCancelDial wraps dial so that it dials only for a connection attempt
// (a context connectingConnector marked).
func noCancelDial(dial pgconn.DialFunc) pgconn.DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if ctx.Value(connectingKey{}) == nil {
			return nil, errNoCancelRequest
		}
		return dial(ctx, network, addr)
	}
}

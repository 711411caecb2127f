package db

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dds-project/dds/internal/testenv/teststack"
)

// countingProxy forwards TCP connections to target and counts them; open
// is how many are still open.
type countingProxy struct {
	ln             net.Listener
	accepted, open atomic.Int32
	wg             sync.WaitGroup
}

func newCountingProxy(t *testing.T, target string) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.wg.Wait() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.accepted.Add(1)
			p.open.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer p.open.Add(-1)
				defer c.Close()
				s, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer s.Close()
				done := make(chan struct{}, 2)
				go func() { _, _ = io.Copy(s, c); done <- struct{}{} }()
				go func() { _, _ = io.Copy(c, s); done <- struct{}{} }()
				<-done
			}()
		}
	}()
	return p
}

// TestNoCancelRequestThroughATransactionPooler: a statement cut short by
// its deadline makes pgx close the connection as broken; in session mode
// it also sends Postgres a cancel request (a second connection), through
// a transaction pooler never (PgBouncer 1.18 exits on one that races the
// close). A proxy in front of Postgres counts the connections.
func TestNoCancelRequestThroughATransactionPooler(t *testing.T) {
	teststack.Need(t, "DATABASE_URL")
	u, err := url.Parse(os.Getenv("DATABASE_URL"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name        string
		opts        []Option
		connections int32
	}{
		{"session mode: the connection and a cancel request", nil, 2},
		{"transaction pooler: the connection only", []Option{ThroughTransactionPooler()}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newCountingProxy(t, u.Host)
			via := *u
			via.Host = p.ln.Addr().String()
			ctx := context.Background()
			d, err := Open(ctx, via.String(), 1, c.opts...)
			if err != nil {
				t.Fatal(err)
			}
			qctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			_, err = d.ExecContext(qctx, `SELECT pg_sleep(5)`)
			cancel()
			if err == nil {
				t.Fatal("a 5 s sleep finished within its 200 ms deadline")
			}
			// Close the pool (in session mode the cancelled connection is
			// still good; through the pooler pgx closed it as broken, after
			// its cancel request if it sent one) and wait until no
			// connection is open.
			d.Close()
			deadline := time.Now().Add(20 * time.Second)
			for p.open.Load() > 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%d connections still open", p.open.Load())
				}
				time.Sleep(20 * time.Millisecond) // polling a counter another goroutine moves
			}
			if got := p.accepted.Load(); got != c.connections {
				t.Fatalf("%d connections reached Postgres, want %d", got, c.connections)
			}
		})
	}
}

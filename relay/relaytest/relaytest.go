// Package relaytest runs the webhook side of a worker inside a test binary:
// a Temporal dev server, a worker with the delivery workflow and a relay
// over the test binary's own database (webhooktest.IsolatedURL).
package relaytest

import (
	"context"
	"crypto/x509"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/searchattr"
	"github.com/dds-project/dds/webhook"
	"github.com/dds-project/dds/webhook/webhooktest"
)

// Stack is a running dev server + worker + relay.
type Stack struct {
	Temporal  client.Client
	TaskQueue string
	DBURL     string
	HostPort  string // the dev server's frontend address
	stop      []func()
}

// Start starts the stack; the delivery client trusts httptest's TLS
// certificate and allows private addresses. Call Stop when done.
func Start(taskQueue string, verbose bool) (*Stack, error) {
	return StartWith(taskQueue, verbose, relay.SetupOptions{})
}

// StartWith is Start with relay options: Trace, BatchSize,
// InFlightBatches and InFlightEvents are taken from o (benchmarks).
func StartWith(taskQueue string, verbose bool, o relay.SetupOptions) (*Stack, error) {
	s := &Stack{TaskQueue: taskQueue}
	fail := func(err error) (*Stack, error) { s.Stop(); return nil, err }
	url, err := webhooktest.IsolatedURL()
	if err != nil {
		return fail(err)
	}
	s.DBURL = url
	srv, err := webhooktest.StartTemporal()
	if err != nil {
		return fail(err)
	}
	s.stop = append(s.stop, func() { _ = srv.Stop() })
	s.Temporal = srv.Client()
	s.HostPort = srv.FrontendHostPort()
	ctx, cancel := context.WithCancel(context.Background())
	d, err := db.Open(ctx, url, 20)
	if err != nil {
		cancel()
		return fail(err)
	}
	s.stop = append(s.stop, func() { d.Close() })
	// Every httptest TLS server uses the same certificate: trust it.
	probe := httptest.NewTLSServer(nil)
	pool := x509.NewCertPool()
	pool.AddCert(probe.Certificate())
	probe.Close()
	caFile, err := os.CreateTemp("", "dds-webhook-ca-*.pem")
	if err != nil {
		cancel()
		return fail(err)
	}
	s.stop = append(s.stop, func() { os.Remove(caFile.Name()) })
	if err := webhooktest.WriteCertPEM(caFile.Name(), probe.Certificate()); err != nil {
		cancel()
		return fail(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if verbose {
		log = slog.Default()
	}
	w := worker.New(s.Temporal, taskQueue, worker.Options{})
	hub := pgnotify.New(url, log)
	// As `dds worker` wires it, with DDS_WEBHOOK_ALLOW_PRIVATE and DDS_WEBHOOK_CA_FILE.
	dl, err := webhook.NewDeliverer(d, webhook.ClientConfig{AllowPrivate: true, CAFile: caFile.Name()}, nil)
	if err != nil {
		cancel()
		return fail(err)
	}
	webhook.Register(w, dl)
	webhook.RegisterReplay(w, dl.Store, s.Temporal, taskQueue)
	if err := searchattr.Ensure(ctx, s.Temporal, "default"); err != nil {
		log.Warn("could not register the search attributes", "err", err)
	}
	// The default lease, as dds worker runs: a one-second lease here made
	// a loaded machine's pauses re-claim batches in flight (the documented
	// duplicate bound), which the no-crash tests count as repeats.
	r, err := relay.Setup(d, s.Temporal, dl, relay.SetupOptions{TaskQueue: taskQueue, Hub: hub, Log: log,
		Trace: o.Trace, BatchSize: o.BatchSize, InFlightBatches: o.InFlightBatches, InFlightEvents: o.InFlightEvents})
	if err != nil {
		cancel()
		return fail(err)
	}
	if err := w.Start(); err != nil {
		cancel()
		return fail(err)
	}
	go hub.Run(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	// Stopped in reverse order: relay, worker, database, dev server.
	s.stop = append(s.stop, w.Stop, func() { cancel(); <-done })
	return s, nil
}

// Stop stops everything Start started.
func (s *Stack) Stop() {
	for i := len(s.stop) - 1; i >= 0; i-- {
		s.stop[i]()
	}
	s.stop = nil
}

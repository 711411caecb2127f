// Command crashworker is the webhook half of `dds worker` (relay plus
// delivery workflow worker, wired exactly as the worker wires them) as a standalone process, so the crash test can SIGKILL it
// without depending on every other package of the binary. Configuration:
// DATABASE_URL, TEMPORAL_ADDRESS, DDS_TASK_QUEUE, DDS_WEBHOOK_CA_FILE,
// DDS_WEBHOOK_ALLOW_PRIVATE; -lease sets the relay's claim lease.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"

	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/pgnotify"
	"github.com/dds-project/dds/relay"
	"github.com/dds-project/dds/searchattr"
	"github.com/dds-project/dds/webhook"
)

func main() {
	lease := flag.Duration("lease", 2*time.Minute, "relay claim lease")
	flag.Parse()
	if err := run(*lease); err != nil {
		fmt.Fprintln(os.Stderr, "crashworker:", err)
		os.Exit(1)
	}
}

func run(lease time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	url := os.Getenv("DATABASE_URL")
	d, err := db.Open(ctx, url, 20)
	if err != nil {
		return err
	}
	defer d.Close()
	tc, err := client.DialContext(ctx, client.Options{HostPort: os.Getenv("TEMPORAL_ADDRESS")})
	if err != nil {
		return err
	}
	defer tc.Close()
	tq := os.Getenv("DDS_TASK_QUEUE")
	w := worker.New(tc, tq, worker.Options{})
	hub := pgnotify.New(url, log)
	go hub.Run(ctx)
	dl, err := webhook.NewDeliverer(d, webhook.ClientConfig{
		AllowPrivate: os.Getenv("DDS_WEBHOOK_ALLOW_PRIVATE") == "true", CAFile: os.Getenv("DDS_WEBHOOK_CA_FILE")}, nil)
	if err != nil {
		return err
	}
	webhook.Register(w, dl)
	if err := searchattr.Ensure(ctx, tc, "default"); err != nil {
		log.Warn("could not register the search attributes", "err", err)
	}
	r, err := relay.Setup(d, tc, dl, relay.SetupOptions{TaskQueue: tq, Hub: hub, Lease: lease, Log: log})
	if err != nil {
		return err
	}
	if err := w.Start(); err != nil {
		return err
	}
	defer w.Stop()
	fmt.Println("ready")
	return r.Run(ctx)
}

package main

// The faults of the engines around DDS: the Temporal server restarted
// while webhook deliveries wait in it for their retry, a server cut off
// from Postgres, and the primary restarted.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"time"

	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/log"
)

func faultScenarios() []scenarioDef {
	return []scenarioDef{
		{
			name: "kill -9 the Temporal server while deliveries wait for retry",
			// The receiver refuses every delivery until the fault: their first
			// attempts fail and each waits in a retry workflow (1 min timer).
			prepare:      func(c *cluster) error { c.failing.Store(true); return nil },
			fault:        restartTemporal,
			eventsWithin: 4 * time.Minute,
		},
		{name: "cut one server off from Postgres (restored once drained)", fault: cutServer},
		{name: "restart the primary (immediate shutdown: crash recovery)", fault: restartPrimary, only503: true},
	}
}

// restartTemporal kills the Temporal server (SIGKILL) once deliveries wait
// in it and starts it again (deploy/stack.sh restart); the receiver takes
// deliveries from the fault on, so every waiting one must arrive after the
// restart, from the timers the server kept in Postgres.
func restartTemporal(c *cluster) error {
	n, err := c.awaitWaitingDeliveries(30 * time.Second)
	c.failing.Store(false)
	if err != nil {
		return err
	}
	c.note("%d deliveries waited for retry in the Temporal server when it was killed", n)
	t0 := time.Now()
	if err := c.stackRestart("temporal-server", "KILL"); err != nil {
		return err
	}
	c.note("Temporal server killed and serving again after %s", time.Since(t0).Round(time.Millisecond))
	return nil
}

// awaitWaitingDeliveries waits until the Temporal server's visibility
// counts running delivery workflows of this cluster's task queue, and
// returns their number once it stops growing.
func (c *cluster) awaitWaitingDeliveries(within time.Duration) (int64, error) {
	q := fmt.Sprintf("WorkflowType = 'Delivery' AND ExecutionStatus = 'Running' AND TaskQueue = '%s'", c.taskQueue)
	deadline := time.Now().Add(within)
	var last int64
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := c.temporal.CountWorkflow(ctx, &workflowservice.CountWorkflowExecutionsRequest{Namespace: "default", Query: q})
		cancel()
		// Counted until two counts 300 ms apart agree: the hand-over of the
		// refused deliveries is then done, and all of them wait.
		if err == nil && resp.GetCount() > 0 {
			if resp.GetCount() == last || time.Now().After(deadline) {
				return last, nil
			}
			last = resp.GetCount()
			time.Sleep(300 * time.Millisecond)
			continue
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no delivery waited for retry in Temporal within %s (last error: %w)", within, err)
		}
		time.Sleep(200 * time.Millisecond) // visibility is eventually consistent: poll it
	}
}

// cutServer takes the namespaced server's database link down, waits for
// HAProxy to drain it (its /readyz fails), keeps it cut 2 s more, restores
// the link and waits for the server to come back.
func cutServer(c *cluster) error {
	s := c.servers[1]
	t0 := time.Now()
	if err := netCut(c.o); err != nil {
		return err
	}
	if err := c.awaitStatus(s.name, "DOWN", 30*time.Second); err != nil {
		_ = netHeal(c.o)
		return err
	}
	c.note("HAProxy drained %s %s after the cut (its /readyz failed)", s.name, time.Since(t0).Round(time.Millisecond))
	time.Sleep(2 * time.Second) // the server stays cut off for a while: the fault itself
	t1 := time.Now()
	if err := netHeal(c.o); err != nil {
		return err
	}
	if err := c.awaitUp(s.name); err != nil {
		return err
	}
	c.note("%s back UP %s after the link returned", s.name, time.Since(t1).Round(time.Millisecond))
	return nil
}

// restartPrimary stops Postgres in immediate mode (no checkpoint: the
// restart recovers from the WAL as after a crash) and starts it again.
func restartPrimary(c *cluster) error {
	t0 := time.Now()
	if err := c.stackRestart("postgres", "QUIT"); err != nil {
		return err
	}
	c.note("Postgres stopped (immediate) and accepting connections again after %s", time.Since(t0).Round(time.Millisecond))
	return nil
}

// stackRestart restarts one service of the stack with deploy/stack.sh.
func (c *cluster) stackRestart(service, sig string) error {
	cmd := exec.CommandContext(context.Background(), "bash", c.o.stack, "restart", service, "--signal", sig) //nolint:gosec // G204: the check's own script
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("restart %s: %w\n%s", service, err, out)
	}
	return nil
}

// quietLogger keeps the Temporal client's reconnect chatter out of the table.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}

var _ log.Logger = quietLogger{}

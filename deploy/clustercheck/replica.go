package main

import (
	"bufio"
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dds-project/dds/db"
)

// The read replica of the topology: the stack's streaming replica
// (deploy/stack.sh --with-replica exports DDS_TEST_REPLICA_URL), which every
// server reads from behind its LSN barrier (DATABASE_REPLICA_URLS).

// replicaURL returns the replica's URL for database name, or "" when the
// stack runs none.
func replicaURL(name string) (string, error) {
	raw := os.Getenv("DDS_TEST_REPLICA_URL")
	if raw == "" {
		return "", nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("DDS_TEST_REPLICA_URL: %w", err)
	}
	u.Path = "/" + name
	if os.Getenv("DDS_TEST_PGBOUNCER_URL") != "" {
		// The servers' pools then run in transaction mode (no settings sent
		// at connection, for PgBouncer's sake); the replica is reached
		// directly, so its URL carries what the pooler's connect_query sets.
		// Spaces as %20: the driver does not read "+" as a space.
		u.RawQuery += "&options=" + strings.ReplaceAll(url.QueryEscape("-c jit=off -c hnsw.ef_search=400"), "+", "%20")
	}
	return u.String(), nil
}

// commitSynchronously makes the cluster's database commit as production
// does. The test profile's Postgres commits asynchronously, and then only
// the WAL insert position covers an acknowledged commit, which the replica
// receives after the WAL writer's next flush (up to 200 ms): most reads
// right after a write would wait for the primary, and the scenario would
// not show the replica serving.
func commitSynchronously(ctx context.Context, direct string) error {
	d, err := db.Open(ctx, direct, 1)
	if err != nil {
		return err
	}
	defer d.Close()
	_, err = d.ExecContext(ctx, `ALTER DATABASE dds_cluster SET synchronous_commit = on`)
	return err
}

// stack runs deploy/stack.sh with args (the replica's stop and start).
func stack(args ...string) error {
	cmd := exec.CommandContext(context.Background(), "bash", append([]string{filepath.Join("deploy", "stack.sh")}, args...)...) //nolint:gosec // G204: our own script, fixed arguments
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("stack.sh %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}

// replicaReads sums dds_db_reads_total{target="replica"} over the servers.
func (c *cluster) replicaReads() float64 {
	total := 0.0
	for i := range c.servers {
		resp, err := c.client.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", c.o.base+1+i)) //nolint:noctx // a bounded client, a local server
		if err != nil {
			continue // a server down during another scenario's fault reads nothing
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), `dds_db_reads_total{target="replica"} `); ok {
				f, _ := strconv.ParseFloat(v, 64)
				total += f
			}
		}
		resp.Body.Close()
	}
	return total
}

// stopReplica is the fault "stop the replica": a fast shutdown of the
// standby (what an operator's restart or a crash of its host looks like to
// the servers), 2 s without it, then it is started again and catches up.
// It reports how many reads the replica served before, during and after.
func (c *cluster) stopReplica(report *string) func(*cluster) error {
	return func(c *cluster) error {
		before := c.replicaReads()
		if before == 0 {
			return fmt.Errorf("the replica served no read before the fault: reads are not routed to it")
		}
		f, err := os.CreateTemp("", "dds-replica-only-")
		if err != nil {
			return err
		}
		only := f.Name()
		defer os.Remove(only)
		_, err = f.WriteString("replica\n")
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if err := stack("down", "--started-file", only); err != nil {
			return err
		}
		time.Sleep(time.Second) // the servers notice within a poll; then reads run without the replica
		stopped := c.replicaReads()
		time.Sleep(time.Second)
		during := c.replicaReads() - stopped
		if err := stack("up", "--with-replica", "--no-temporal", "--profile", "test"); err != nil {
			return err
		}
		back := c.replicaReads()
		deadline := time.Now().Add(10 * time.Second)
		for c.replicaReads() == back {
			if time.Now().After(deadline) {
				return fmt.Errorf("the replica served no read within 10 s of coming back")
			}
			time.Sleep(100 * time.Millisecond) // the servers poll it every 50 ms
		}
		*report = fmt.Sprintf("    replica: %.0f reads served before the stop, %.0f while stopped, again after it returned", before, during)
		if during > 0 {
			return fmt.Errorf("the stopped replica served %.0f reads", during)
		}
		return nil
	}
}

package main

// WebSocket clients that resume: graphql-ws clients (deploy/npm/clients/
// resume.mjs) follow noteChanged(after:) through HAProxy while a server is
// killed; the ones whose socket was on it reconnect through the balancer to
// another server with their last cursor. Every event the outbox holds from
// the scenario must reach every client exactly once, in the outbox's order.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/dds-project/dds/db"
)

const wsClients = 4

// subscribers are the node clients of one scenario.
type subscribers struct {
	cmd        *exec.Cmd
	done       chan struct{}
	marker     string // the cursor every client starts after
	tenant     string
	markerSeq  int64
	mu         sync.Mutex
	cursors    [wsClients][]string
	sockets    [wsClients]int // sockets acknowledged per client
	closes     [wsClients][]string
	errs       []string
	unexpected []string
}

// startSubscribers writes a marker record, finds its event's cursor and
// starts the clients after it, through HAProxy; it returns once every
// client's socket is acknowledged.
func (c *cluster) startSubscribers() (*subscribers, error) {
	code, b, err := c.do("POST", "/api/v1/dynamic/Note", c.key, map[string]any{"n": -1})
	if err != nil || code != http.StatusCreated {
		return nil, fmt.Errorf("marker record: %d %s: %w", code, b, err)
	}
	var rec struct{ ID string }
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	s := &subscribers{done: make(chan struct{})}
	ctx := context.Background()
	d, err := db.Open(ctx, c.direct, 1)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	if err := d.QueryRowxContext(ctx, `SELECT id::text, tenant_id::text, seq FROM dds.events WHERE entity_id = $1`, rec.ID).Scan(&s.marker, &s.tenant, &s.markerSeq); err != nil {
		return nil, fmt.Errorf("the marker's event: %w", err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return nil, fmt.Errorf("node is not installed (deploy/install.sh installs it): %w", err)
	}
	ws := "ws" + strings.TrimPrefix(c.url, "http") + "/api/v1/dynamic-gql/ws"
	s.cmd = exec.CommandContext(ctx, node, filepath.Join("deploy", "npm", "clients", "resume.mjs"), ws, c.key, fmt.Sprint(wsClients), "noteChanged", //nolint:gosec // G204: our own client script
		`subscription($after: String) { noteChanged(after: $after) { type cursor } }`, s.marker)
	s.cmd.Stderr = os.Stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l struct {
				Client    int
				Connected int
				Cursor    string
				Closed    *string
				Error     string
			}
			if json.Unmarshal(sc.Bytes(), &l) != nil || l.Client < 0 || l.Client >= wsClients {
				s.mu.Lock()
				s.unexpected = append(s.unexpected, sc.Text())
				s.mu.Unlock()
				continue
			}
			s.mu.Lock()
			switch {
			case l.Connected > 0:
				s.sockets[l.Client]++
			case l.Cursor != "":
				s.cursors[l.Client] = append(s.cursors[l.Client], l.Cursor)
			case l.Closed != nil:
				s.closes[l.Client] = append(s.closes[l.Client], *l.Closed)
			case l.Error != "":
				s.errs = append(s.errs, fmt.Sprintf("client %d: %s", l.Client, l.Error))
			}
			s.mu.Unlock()
		}
		_ = s.cmd.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s.mu.Lock()
		up := 0
		for _, n := range s.sockets {
			if n > 0 {
				up++
			}
		}
		errs := slices.Clone(s.errs)
		s.mu.Unlock()
		switch {
		case len(errs) > 0:
			s.stop()
			return nil, fmt.Errorf("subscribe: %v", errs)
		case up == wsClients:
			return s, nil
		case time.Now().After(deadline):
			s.stop()
			return nil, fmt.Errorf("%d of %d graphql-ws clients connected within 30 s", up, wsClients)
		}
		time.Sleep(50 * time.Millisecond) // the clients report on their own schedule
	}
}

func (s *subscribers) stop() {
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// verify waits until every client has as many events as the outbox holds
// after the marker (up to within), stops the clients, and says what is
// wrong: an event missing, duplicated or out of order for any client, or no
// client that had to resume (the fault then tested nothing).
func (s *subscribers) verify(c *cluster, within time.Duration) (notes []string, problem string, err error) {
	defer s.stop()
	ctx := context.Background()
	d, err := db.Open(ctx, c.direct, 1)
	if err != nil {
		return nil, "", err
	}
	defer d.Close()
	var want []string
	if err := d.SelectContext(ctx, &want, `SELECT id::text FROM dds.events WHERE tenant_id = $1 AND entity_name = 'Note' AND seq > $2 ORDER BY seq`, s.tenant, s.markerSeq); err != nil {
		return nil, "", err
	}
	deadline := time.Now().Add(within)
	for {
		s.mu.Lock()
		behind := 0
		for _, got := range s.cursors {
			if len(got) < len(want) {
				behind++
			}
		}
		s.mu.Unlock()
		if behind == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // events arrive on their own schedule
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	resumed := 0
	var problems []string
	for i, got := range s.cursors {
		if s.sockets[i] > 1 {
			resumed++
		}
		if len(s.closes[i]) > 0 {
			notes = append(notes, fmt.Sprintf("ws client %d: %d events on %d sockets (closed: %s)", i, len(got), s.sockets[i], strings.Join(s.closes[i], "; ")))
		}
		if slices.Equal(got, want) {
			continue
		}
		seen := map[string]int{}
		dups := 0
		for _, g := range got {
			if seen[g]++; seen[g] == 2 {
				dups++
			}
		}
		missing := 0
		for _, w := range want {
			if seen[w] == 0 {
				missing++
			}
		}
		problems = append(problems, fmt.Sprintf("client %d received %d events of %d (%d missing, %d duplicated): not the outbox's sequence",
			i, len(got), len(want), missing, dups))
	}
	notes = append(notes, fmt.Sprintf("%d graphql-ws clients through HAProxy: %d resumed on another socket with their cursor; each received %d events", wsClients, resumed, len(want)))
	switch {
	case len(s.errs) > 0:
		problems = append(problems, fmt.Sprint("subscription errors: ", s.errs))
	case len(s.unexpected) > 0:
		problems = append(problems, fmt.Sprint("unexpected client output: ", s.unexpected))
	case resumed == 0:
		problems = append(problems, "no graphql-ws client's socket was on the killed server: nothing resumed")
	case len(want) == 0:
		problems = append(problems, "the outbox holds no event of the scenario")
	}
	return notes, strings.Join(problems, "; "), nil
}

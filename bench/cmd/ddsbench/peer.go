package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/dds-project/dds/bench/load"
)

// PostGraphile 5 is the peer: installed by `make bench` (npm ci in
// bench/peer), run under the Node on PATH (the Makefile puts Node 22
// first), over the same tables as DDS, with bench/peer/graphile.config.mjs
// (the amber preset and the connection-filter plugin).
const peerPath = "/graphql"

// Its operations doing the work of DDS's get by id and create.
// (PostGraphile's preset names the id column rowId: id is its global node id.)
const (
	peerFields   = `rowId name price stock tags createdAt updatedAt`
	peerGetQuery = `query($id: UUID!) { productByRowId(rowId: $id) { ` + peerFields + ` } }`
	// The list section's range filter comes from the connection-filter plugin;
	// ties of createdAt are broken by id ascending, as DDS does.
	peerListQuery   = `query($n: Float!) { allProducts(first: 20, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC], filter: {price: {greaterThanOrEqualTo: $n}}) { nodes { ` + peerFields + ` } } }`
	peerCreateQuery = `mutation($p: ProductInput!) { createProduct(input: {product: $p}) { product { ` + peerFields + ` } } }`
)

// startPeer starts PostGraphile on pgSchema, or returns nil and why when it
// is not installed.
func startPeer(ctx context.Context, root, databaseURL, pgSchema string) (*proc, string, error) {
	return startPeerWith(ctx, root, databaseURL, pgSchema, "graphile.config.mjs", nil)
}

// startPeerWith is startPeer with another config file of bench/peer and
// more environment for it.
func startPeerWith(ctx context.Context, root, databaseURL, pgSchema, config string, env []string) (*proc, string, error) {
	script := filepath.Join(root, "bench", "peer", "node_modules", "postgraphile", "dist", "cli-run.js")
	if !exists(script) {
		return nil, "PostGraphile is not installed (make bench runs npm ci in bench/peer)", nil
	}
	if !onPath("node") {
		return nil, "node is not on PATH (make bench puts Node 22 there)", nil
	}
	addr, err := freeAddr(ctx)
	if err != nil {
		return nil, "", err
	}
	host, port, _ := strings.Cut(addr, ":")
	// Not CommandContext: proc.Stop and Pdeathsig end the child, as for dds serve.
	// The connection and schema go in the environment: the config builds
	// the pool from them with its own settings (graphile.config.mjs).
	cmd := exec.Command("node", script, "-n", host, "-p", port, "-C", config) //nolint:noctx // lifetime managed by proc.Stop
	cmd.Dir = filepath.Join(root, "bench", "peer")
	cmd.Env = append(append(os.Environ(), "GRAPHILE_ENV=production", "NODE_ENV=production",
		"DDSBENCH_PEER_CONNECTION="+databaseURL, "DDSBENCH_PEER_SCHEMA="+pgSchema), env...)
	cmd.SysProcAttr = dieWithParent()
	errs := &tailBuffer{}
	cmd.Stdout, cmd.Stderr = io.Discard, errs
	if err := cmd.Start(); err != nil {
		return nil, "", err
	}
	p := &proc{name: "postgraphile", cmd: cmd, URL: "http://" + addr, errs: errs}
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, err := load.Call(ctx, load.Client(1), "POST", p.URL+peerPath, "", []byte(`{"query":"{__typename}"}`), 200, nil)
		if err == nil {
			return p, "", nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			p.Stop()
			return nil, "", fmt.Errorf("PostGraphile did not start: %w: %s", err, errs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func onPath(cmd string) bool {
	_, err := exec.LookPath(cmd)
	return err == nil
}

// peerResult decodes a GraphQL response and fails on errors or a null
// result, so a misconfigured peer cannot pass for a fast one.
func peerResult(body []byte, field string) error {
	var r struct {
		Data   map[string]json.RawMessage `json:"data"`
		Errors []any                      `json:"errors"`
	}
	if err := json.Unmarshal(body, &r); err != nil || len(r.Errors) > 0 || len(r.Data[field]) == 0 || string(r.Data[field]) == "null" {
		return fmt.Errorf("PostGraphile answered %.400s", body)
	}
	return nil
}

// checkPeer asserts PostGraphile finds the record, lists and creates.
func checkPeer(ctx context.Context, url, id string) error {
	b, err := load.Call(ctx, load.Client(1), "POST", url, "", gqlBody(peerFlatQuery, nil), 200, nil)
	if err != nil {
		return err
	}
	if err := peerResult(b, "allProducts"); err != nil {
		return err
	}
	b, err = load.Call(ctx, load.Client(1), "POST", url, "", gqlBody(peerGetQuery, map[string]any{"id": id}), 200, nil)
	if err != nil {
		return err
	}
	if err := peerResult(b, "productByRowId"); err != nil {
		return err
	}
	b, err = load.Call(ctx, load.Client(1), "POST", url, "", peerCreateBody(uuid.Must(uuid.NewV7()).String()), 200, nil)
	if err != nil {
		return err
	}
	return peerResult(b, "createProduct")
}

// peerCreateBody is a create of a random product with id (the table's id
// has no default: DDS makes ids); "{{uuid}}" has requests.lua make one per
// request.
func peerCreateBody(id string) []byte {
	p := randomProduct()
	return gqlBody(peerCreateQuery, map[string]any{"p": map[string]any{
		"rowId": id, "name": p.Name, "price": p.Price, "stock": fmt.Sprint(p.Stock), "tags": p.Tags}})
}

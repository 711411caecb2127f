package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"reflect"

	"github.com/dds-project/dds/bench/load"
	"github.com/dds-project/dds/query"
)

// The deep section: a page far down the newest-first feed, as an app's
// "load more" reaches it. Both DDS (a GraphQL connection's `after`) and
// PostGraphile (its connection cursor) seek by keyset: the page costs an
// index walk to the cursor's position, not an offset's scan of the rows
// before it. The minimal handler runs the same keyset page as one plain
// statement (the list compiler's, with the cursor's values).
const (
	deepRows      = 5000 // rows before the page
	deepCursorEnv = "DDSBENCH_DEEP_AFTER"
)

var (
	gqlDeepQuery = `query($after: String!) { productsConnection(first: 20, after: $after, orderBy: [{field: "createdAt", direction: DESC}]) {
		edges { node { id name price } } } }`
	peerDeepQuery = `query($after: Cursor!) { allProducts(first: 20, after: $after, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { nodes { rowId name price } } }`
)

// deepPlan is the minimal handler's page: DDS's list of the same rows,
// after the cursor's (createdAt, id).
func deepPlan(cursor string) (query.List, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return query.List{}, err
	}
	var c struct{ V []json.RawMessage }
	if err := json.Unmarshal(raw, &c); err != nil || len(c.V) != 2 {
		return query.List{}, fmt.Errorf("not a createdAt, id cursor: %s", raw)
	}
	vals := make([]any, len(c.V))
	for i, v := range c.V {
		d := json.NewDecoder(bytes.NewReader(v))
		d.UseNumber()
		if err := d.Decode(&vals[i]); err != nil {
			return query.List{}, err
		}
	}
	return query.List{Entity: entity, Select: query.Selection{Fields: []string{"id", "name", "price"}, Output: outputOf("id", "name", "price")},
		OrderBy: []query.Order{{Field: "createdAt", Desc: true}}, Limit: 20, Seek: &query.Seek{Values: vals}}, nil
}

// deepCursors walks DDS's connection to the row deepRows (pages of 100,
// its largest) and asks PostGraphile for its cursor of the same row; the
// DDS cursor is also handed to the minimal handler's process (deepCursorEnv).
func deepCursors(ctx context.Context, gqlURL, peerURL, key string) (dds, peer string, err error) {
	c := load.Client(1)
	q := `query($after: String) { productsConnection(first: 100, after: $after, orderBy: [{field: "createdAt", direction: DESC}]) { pageInfo { endCursor } } }`
	for range deepRows / 100 {
		vars := map[string]any{}
		if dds != "" {
			vars["after"] = dds
		}
		var r struct {
			Data struct {
				ProductsConnection struct{ PageInfo struct{ EndCursor string } }
			}
		}
		if _, err := load.Call(ctx, c, "POST", gqlURL, key, gqlBody(q, vars), http.StatusOK, &r); err != nil {
			return "", "", err
		}
		if dds = r.Data.ProductsConnection.PageInfo.EndCursor; dds == "" {
			return "", "", fmt.Errorf("fewer than %d products", deepRows)
		}
	}
	if err := os.Setenv(deepCursorEnv, dds); err != nil {
		return "", "", err
	}
	if peerURL != "" {
		b, err := load.Call(ctx, c, "POST", peerURL, "", gqlBody(fmt.Sprintf(`{ allProducts(first: 1, offset: %d, orderBy: [CREATED_AT_DESC, PRIMARY_KEY_DESC]) { pageInfo { endCursor } } }`, deepRows-1), nil), http.StatusOK, nil)
		if err != nil {
			return "", "", err
		}
		var r struct {
			Data struct {
				AllProducts struct{ PageInfo struct{ EndCursor string } }
			}
		}
		if err := json.Unmarshal(b, &r); err != nil || r.Data.AllProducts.PageInfo.EndCursor == "" {
			return "", "", fmt.Errorf("PostGraphile's cursor: %.300s", b)
		}
		peer = r.Data.AllProducts.PageInfo.EndCursor
	}
	return dds, peer, nil
}

// checkSameDeep asserts the minimal handler, DDS and PostGraphile (when it
// runs) return the same 20 products, in order.
func checkSameDeep(ctx context.Context, gqlURL, minURL, peerURL, key, cursor, peerCursor string) error {
	c := load.Client(1)
	var viaMin struct{ Items []map[string]any }
	if _, err := load.Call(ctx, c, "GET", minURL+"/p", "", nil, http.StatusOK, &viaMin); err != nil {
		return err
	}
	var viaDDS struct {
		Data struct {
			ProductsConnection struct {
				Edges []struct{ Node map[string]any }
			}
		}
	}
	if _, err := load.Call(ctx, c, "POST", gqlURL, key, gqlBody(gqlDeepQuery, map[string]any{"after": cursor}), http.StatusOK, &viaDDS); err != nil {
		return err
	}
	var nodes []map[string]any
	for _, e := range viaDDS.Data.ProductsConnection.Edges {
		nodes = append(nodes, e.Node)
	}
	if len(nodes) != 20 || !reflect.DeepEqual(nodes, viaMin.Items) {
		return fmt.Errorf("the deep pages differ:\n minimal: %v\n DDS:     %v", viaMin.Items, nodes)
	}
	if peerURL == "" {
		return nil
	}
	var viaPeer struct {
		Data struct {
			AllProducts struct{ Nodes []struct{ RowID string } }
		}
	}
	if _, err := load.Call(ctx, c, "POST", peerURL, "", gqlBody(peerDeepQuery, map[string]any{"after": peerCursor}), http.StatusOK, &viaPeer); err != nil {
		return err
	}
	for i, n := range viaPeer.Data.AllProducts.Nodes {
		if i >= len(nodes) || n.RowID != nodes[i]["id"] {
			return fmt.Errorf("PostGraphile's deep page differs: %v", viaPeer.Data.AllProducts.Nodes)
		}
	}
	if len(viaPeer.Data.AllProducts.Nodes) != 20 {
		return fmt.Errorf("PostGraphile's deep page has %d products", len(viaPeer.Data.AllProducts.Nodes))
	}
	return nil
}

package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/dds-project/dds/internal/testenv"
)

// TestGraphQLPreparedQueriesFollowSchemaChanges: a GraphQL operation is
// prepared once and its statement kept (Postgres builds the response), so
// after the schema evolves the same document must be answered against the
// new schema: a field added is served, a field dropped is a validation
// error, not a statement naming a column that is gone.
func TestGraphQLPreparedQueriesFollowSchemaChanges(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	def := func(fields ...string) string {
		return `{"name":"shop","entities":[{"name":"Product","fields":[` + strings.Join(fields, ",") + `]}]}`
	}
	name, price, color := `{"name":"name","type":"STRING"}`, `{"name":"price","type":"NUMBER"}`, `{"name":"color","type":"STRING"}`
	schemaID := app.Must(t, http.StatusCreated, "POST", "/api/v1/schemas", key, def(name, price)).JSON(t)["id"].(string)
	id := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "lamp", "price": 12.5}).JSON(t)["id"].(string)
	path := "/api/v1/dynamic-gql/" + tenantID
	gql := func(query string) (int, string) {
		t.Helper()
		req := map[string]any{"query": query}
		if strings.Contains(query, "$id") {
			req["variables"] = map[string]any{"id": id}
		}
		body, _ := json.Marshal(req)
		r := app.Do(t, "POST", path, key, string(body), "Content-Type", "application/json", "Accept", "application/graphql-response+json")
		return r.Status, string(r.Body)
	}
	const list = `{ products(limit: 5) { name price } }`
	const get = `query($id: ID!) { product(id: $id) { name price } }`
	for _, q := range []string{list, get, list, get} { // twice: the second runs the kept statement
		if status, body := gql(q); status != 200 || !strings.Contains(body, `{"name":"lamp","price":12.5}`) {
			t.Fatalf("before the change, %s: %d %s", q, status, body)
		}
	}

	// A field added: the same documents still run, and the new field is served.
	app.Must(t, http.StatusOK, "PUT", "/api/v1/schemas/"+schemaID, key, def(name, price, color))
	app.Must(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Product/"+id, key, map[string]any{"color": "red"})
	for _, q := range []string{list, get} {
		if status, body := gql(q); status != 200 || !strings.Contains(body, `{"name":"lamp","price":12.5}`) {
			t.Errorf("after adding a field, %s: %d %s", q, status, body)
		}
		withColor := strings.Replace(q, "name price", "name price color", 1)
		if status, body := gql(withColor); status != 200 || !strings.Contains(body, `{"name":"lamp","price":12.5,"color":"red"}`) {
			t.Errorf("the added field, %s: %d %s", withColor, status, body)
		}
	}

	// A field dropped: the documents naming it are refused by validation.
	app.Must(t, http.StatusOK, "PUT", "/api/v1/schemas/"+schemaID+"?allowDataLoss=true", key, def(name, color))
	for _, q := range []string{list, get} {
		if status, body := gql(q); status != 400 || !strings.Contains(body, "GRAPHQL_VALIDATION_FAILED") || !strings.Contains(body, "price") {
			t.Errorf("after dropping price, %s: %d %s", q, status, body)
		}
		without := strings.Replace(q, "name price", "name color", 1)
		if status, body := gql(without); status != 200 || !strings.Contains(body, `{"name":"lamp","color":"red"}`) {
			t.Errorf("after dropping price, %s: %d %s", without, status, body)
		}
	}
}

// TestConcurrentRequestsGetTheirOwnAnswers: GraphQL request bodies,
// parsers and response buffers are pooled, and statements are shared
// between requests; many clients at once must each get the record they
// asked for, through POST, GET and REST alike.
func TestConcurrentRequestsGetTheirOwnAnswers(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "shop", "entities": []any{map[string]any{"name": "Product",
		"fields": []any{map[string]any{"name": "name", "type": "STRING"}}}}})
	const n = 16
	ids := make([]string, n)
	for i := range ids {
		ids[i] = app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": fmt.Sprint("p", i)}).JSON(t)["id"].(string)
	}
	gqlURL := app.URL + "/api/v1/dynamic-gql/" + tenantID
	const get = `query($id: ID!) { product(id: $id) { id name } }`
	// Each client checks what it got and reports, never stopping the test
	// from its own goroutine.
	ask := func(i, round int) error {
		var req *http.Request
		var err error
		switch round % 3 {
		case 0:
			body, _ := json.Marshal(map[string]any{"query": get, "variables": map[string]any{"id": ids[i]}})
			req, err = http.NewRequest("POST", gqlURL, bytes.NewReader(body))
			if err == nil {
				req.Header.Set("Content-Type", "application/json")
			}
		case 1:
			req, err = http.NewRequest("GET", gqlURL+"?query="+url.QueryEscape(get)+"&variables="+url.QueryEscape(`{"id":"`+ids[i]+`"}`), nil)
		default:
			req, err = http.NewRequest("GET", app.URL+"/api/v1/dynamic/Product/"+ids[i], nil)
		}
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		raw, err := io.ReadAll(res.Body)
		if err != nil {
			return err
		}
		var got struct {
			ID   string `json:"id"`
			Name string `json:"name"`
			Data *struct {
				Product struct {
					ID   string `json:"id"`
					Name string `json:"name"`
				} `json:"product"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &got); err != nil {
			return fmt.Errorf("%d %s: %w", res.StatusCode, raw, err)
		}
		if got.Data != nil {
			got.ID, got.Name = got.Data.Product.ID, got.Data.Product.Name
		}
		if res.StatusCode != 200 || got.ID != ids[i] || got.Name != fmt.Sprint("p", i) {
			return fmt.Errorf("%s %s: %d %s, want id %s and name p%d", req.Method, req.URL.Path, res.StatusCode, raw, ids[i], i)
		}
		return nil
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 30 {
				if errs[i] = ask(i, round); errs[i] != nil {
					return
				}
			}
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("client %d: %v", i, err)
		}
	}
}

// TestGraphQLAnswersWhatWasAsked covers three answers that shared
// statements and Postgres-built JSON could get wrong, through the server:
// an alias longer than Postgres keeps a column name (63 bytes) is the key
// of the answer whole; an Int variable written 1.0 is the limit 1; and a
// get selecting a file's metadata, after a REST GET of the same record
// selecting only its name, still carries the metadata.
func TestGraphQLAnswersWhatWasAsked(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	tenantID, key := app.Tenant(t)
	app.Schema(t, key, map[string]any{"name": "shop", "entities": []any{map[string]any{"name": "Product", "fields": []any{
		map[string]any{"name": "name", "type": "STRING"},
		map[string]any{"name": "manual", "type": "FILE"},
	}}}})
	fileID := uuid.Must(uuid.NewV7()).String()
	if _, err := testenv.DB(t).Exec(`INSERT INTO dds.files (id, tenant_id, file_name, mime_type, size_bytes, status, storage_key, upload_expires_at, created_at)
		VALUES ($1, $2, 'manual.pdf', 'application/pdf', 1234, 'confirmed', $3, now() + interval '15 minutes', now())`, fileID, tenantID, tenantID+"/"+fileID); err != nil {
		t.Fatal(err)
	}
	id := app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "lamp", "manual": fileID}).JSON(t)["id"].(string)
	app.Must(t, http.StatusCreated, "POST", "/api/v1/dynamic/Product", key, map[string]any{"name": "desk"})
	path := "/api/v1/dynamic-gql/" + tenantID
	gql := func(query string, vars map[string]any) string {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"query": query, "variables": vars})
		r := app.Do(t, "POST", path, key, string(body), "Content-Type", "application/json")
		if r.Status != 200 || strings.Contains(string(r.Body), `"errors"`) {
			t.Fatalf("%s: %d %s", query, r.Status, r.Body)
		}
		return string(r.Body)
	}

	long := strings.Repeat("a", 70)
	for _, q := range []string{
		`{ products(orderBy: [{field: "name"}], limit: 1) { ` + long + `x: name ` + long + `y: name } }`,
		`query($id: ID!) { product(id: $id) { ` + long + `x: name ` + long + `y: name } }`,
	} {
		for range 2 { // the second runs the kept statement
			body := gql(q, map[string]any{"id": id})
			for _, k := range []string{long + "x", long + "y"} {
				if !strings.Contains(body, `"`+k+`":"`) {
					t.Errorf("%s: the key %s is not in %s", q, k, body)
				}
			}
		}
	}

	const page = `query($n: Int!) { products(limit: $n, orderBy: [{field: "name"}]) { name } }`
	for _, n := range []any{1.0, json.Number("1e0"), 1} {
		if body := gql(page, map[string]any{"n": n}); !strings.Contains(body, `{"products":[{"name":"desk"}]}`) {
			t.Errorf("limit %v: %s, want one product", n, body)
		}
	}

	app.Must(t, http.StatusOK, "GET", "/api/v1/dynamic/Product/"+id+"?select=name", key, nil)
	body := gql(`query($id: ID!) { product(id: $id) { name manualFile { fileName sizeBytes } } }`, map[string]any{"id": id})
	if !strings.Contains(body, `"manualFile":{"fileName":"manual.pdf","sizeBytes":1234}`) {
		t.Errorf("a get with file metadata after a REST get of the name: %s", body)
	}
}

package graphql

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	gql "github.com/dds-project/dds/graphql"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/schema"
)

// insertFile writes a dds.files row directly (the file service's upload
// flow is not what these tests are about) and returns its id.
func (e *env) insertFile(t testing.TB, tenantID, name, status string, size int64, confirmedAt *time.Time) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	_, err := e.DB.Exec(`INSERT INTO dds.files (id, tenant_id, file_name, mime_type, size_bytes, status, storage_key, upload_expires_at, created_at)
		VALUES ($1, $2, $3, 'application/pdf', $4, $5, $6, now() + interval '15 minutes', $7)`,
		id, tenantID, name, size, status, tenantID+"/"+id, confirmedAt)
	if err != nil {
		t.Fatalf("insert file: %v", err)
	}
	return id
}

// setColumn writes a record column with SQL, bypassing the store's
// validation (a FILE field holding another tenant's file id).
func (e *env) setColumn(t testing.TB, tenantID, entity, id, column string, v any) {
	t.Helper()
	sc := e.scope(t, tenantID)
	if _, err := e.DB.Exec(`UPDATE `+sc.Table(entity)+` SET `+schema.Ident(column)+` = $1 WHERE id = $2`, v, id); err != nil {
		t.Fatalf("set %s.%s: %v", entity, column, err)
	}
}

// fileShop is the shop fixture with files: p[0] holds a confirmed file of
// the tenant, p[1] a confirmed file of ANOTHER tenant (written with SQL),
// p[2] nothing, and p[3] a pending file of the tenant.
type fileShop struct {
	*shop
	own, foreign, pending string
	confirmedAt           time.Time
}

func newFileShop(t *testing.T) *fileShop {
	e := testEnv(t)
	fs := &fileShop{shop: newShop(t), confirmedAt: time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)}
	other, err := e.Tenants.Create(context.Background(), t.Name()+" other")
	if err != nil {
		t.Fatal(err)
	}
	fs.own = e.insertFile(t, fs.tenant, "manual.pdf", "confirmed", 1234, &fs.confirmedAt)
	fs.foreign = e.insertFile(t, other.TenantID, "secret.pdf", "confirmed", 999, &fs.confirmedAt)
	fs.pending = e.insertFile(t, fs.tenant, "draft.pdf", "pending", 5, nil)
	e.setColumn(t, fs.tenant, "Product", fs.p[0], "manual", fs.own)
	e.setColumn(t, fs.tenant, "Product", fs.p[1], "manual", fs.foreign)
	fs.p = append(fs.p, e.create(t, fs.tenant, "Product", map[string]any{"name": "Desk"}))
	e.setColumn(t, fs.tenant, "Product", fs.p[3], "manual", fs.pending)
	return fs
}

// ownMeta is the expected metadata of the confirmed file of the tenant.
func (fs *fileShop) ownMeta(t *testing.T, got any) {
	t.Helper()
	m, ok := got.(map[string]any)
	if !ok {
		t.Fatalf("manualFile = %v, want an object", got)
	}
	at, err := time.Parse(time.RFC3339, fmt.Sprint(m["createdAt"]))
	if err != nil || !at.Equal(fs.confirmedAt) {
		t.Errorf("createdAt = %v, want %s", m["createdAt"], fs.confirmedAt)
	}
	delete(m, "createdAt")
	jsonEq(t, m, fmt.Sprintf(`{"id": %q, "fileName": "manual.pdf", "mimeType": "application/pdf", "sizeBytes": 1234, "__typename": "File"}`, fs.own))
}

func TestFileFieldMetadata(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	fs := newFileShop(t)
	const meta = `manualFile { id fileName mimeType sizeBytes createdAt __typename }`

	// Root list: own confirmed file → metadata; another tenant's file id,
	// a pending file and a null field → null (the FILE column still shows
	// the stored id).
	d := e.gql(t, fs.tenant, fs.key, `{ products(orderBy: [{field: "name"}]) { name manual `+meta+` } }`, nil).ok(t)
	items := d["products"].([]any)
	if len(items) != 4 {
		t.Fatalf("%d products", len(items))
	}
	byName := map[string]map[string]any{}
	for _, it := range items {
		m := it.(map[string]any)
		byName[m["name"].(string)] = m
	}
	fs.ownMeta(t, byName["Apple"]["manualFile"])
	if b := byName["Banana"]; b["manual"] != fs.foreign || b["manualFile"] != nil {
		t.Errorf("another tenant's file: manual=%v manualFile=%v, want the id and null", b["manual"], b["manualFile"])
	}
	if c := byName["Carrot cake"]; c["manual"] != nil || c["manualFile"] != nil {
		t.Errorf("null FILE field: %v", c)
	}
	if dk := byName["Desk"]; dk["manualFile"] != nil {
		t.Errorf("pending file: %v", dk["manualFile"])
	}

	// One record, aliases, file selected without its FILE field.
	d = e.gql(t, fs.tenant, fs.key, fmt.Sprintf(`{ a: product(id: %q) { m: manualFile { n: fileName size: sizeBytes } }
	  b: product(id: %q) { manualFile { id } } }`, fs.p[0], fs.p[1]), nil).ok(t)
	jsonEq(t, d, `{"a": {"m": {"n": "manual.pdf", "size": 1234}}, "b": {"manualFile": null}}`)

	// Connection nodes.
	d = e.gql(t, fs.tenant, fs.key, `{ productsConnection(first: 2, orderBy: [{field: "name"}]) { totalCount edges { node { name manualFile { fileName } } } } }`, nil).ok(t)
	jsonEq(t, d, `{"productsConnection": {"totalCount": 4, "edges": [
	  {"node": {"name": "Apple", "manualFile": {"fileName": "manual.pdf"}}},
	  {"node": {"name": "Banana", "manualFile": null}}]}}`)

	// Nested relationship selections and relationship connections.
	d = e.gql(t, fs.tenant, fs.key, `{ categories(orderBy: [{field: "rank"}]) { name
	  products(orderBy: [{field: "name"}]) { name manualFile { fileName } }
	  productsConnection(orderBy: [{field: "name"}]) { edges { node { manualFile { sizeBytes } } } } } }`, nil).ok(t)
	jsonEq(t, d, `{"categories": [
	  {"name": "Fruit", "products": [{"name": "Apple", "manualFile": {"fileName": "manual.pdf"}}, {"name": "Banana", "manualFile": null}],
	   "productsConnection": {"edges": [{"node": {"manualFile": {"sizeBytes": 1234}}}, {"node": {"manualFile": null}}]}},
	  {"name": "Bakery", "products": [{"name": "Carrot cake", "manualFile": null}],
	   "productsConnection": {"edges": [{"node": {"manualFile": null}}]}}]}`)
}

func TestFileFieldMetadataInMutations(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	fs := newFileShop(t)
	// The test store has no file service, so a FILE write only needs a
	// well-formed id: the read must still refuse another tenant's file.
	d := e.gql(t, fs.tenant, fs.key, fmt.Sprintf(`mutation { p: createProduct(input: {name: "Lamp", manual: %q}) { id name `+
		`manualFile { id fileName mimeType sizeBytes createdAt __typename } } }`, fs.own), nil).ok(t)
	p := d["p"].(map[string]any)
	fs.ownMeta(t, p["manualFile"])
	id := p["id"].(string)

	d = e.gql(t, fs.tenant, fs.key, fmt.Sprintf(`mutation { updateProduct(id: %q, input: {manual: %q}) { manual manualFile { id } } }`, id, fs.foreign), nil).ok(t)
	jsonEq(t, d, fmt.Sprintf(`{"updateProduct": {"manual": %q, "manualFile": null}}`, fs.foreign))
	d = e.gql(t, fs.tenant, fs.key, fmt.Sprintf(`mutation { updateProduct(id: %q, input: {manual: null}) { manual manualFile { id } } }`, id), nil).ok(t)
	jsonEq(t, d, `{"updateProduct": {"manual": null, "manualFile": null}}`)

	// delete returns the record as it was, file metadata included.
	d = e.gql(t, fs.tenant, fs.key, fmt.Sprintf(`mutation { deleteProduct(id: %q) { name manualFile { fileName } } }`, fs.p[0]), nil).ok(t)
	jsonEq(t, d, `{"deleteProduct": {"name": "Apple", "manualFile": {"fileName": "manual.pdf"}}}`)

	// Batch results take no file metadata (like relationship fields).
	r := e.gql(t, fs.tenant, fs.key, `mutation { batchCreateProduct(input: [{name: "x"}]) { successful { manualFile { id } } } }`, nil)
	if r.code(0) != "BAD_REQUEST" {
		t.Errorf("batch with file metadata: %s", r.Body)
	}
	// Selecting file metadata on a write reads the record: the key needs read.
	k := e.key(t, fs.tenant, "entity:Product:create")
	r = e.gql(t, fs.tenant, k, `mutation { createProduct(input: {name: "y"}) { manualFile { id } } }`, nil)
	if r.code(0) != "FORBIDDEN" {
		t.Errorf("create-only key reading file metadata: %s", r.Body)
	}
}

func TestFileFieldIsOneStatementPerRootField(t *testing.T) {
	t.Parallel()
	e := testEnv(t)
	fs := newFileShop(t)
	sc := e.scope(t, fs.tenant)
	m, err := model.ModelFor(sc, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, counter := countingStore(e.Store)
	eng := gql.NewEngine(store, Limits{}, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	// sc is the system principal's (every scope), as the admin key's would be.
	q := fmt.Sprintf(`{
	  products(orderBy: [{field: "name"}], limit: 10) { manualFile { fileName } categories(limit: 5) { products(limit: 5) { manualFile { id } } } }
	  product(id: %q) { manualFile { fileName } }
	  productsConnection(first: 10) { totalCount edges { node { manualFile { fileName } } } }
	  categories(limit: 5) { productsConnection(limit: 5) { edges { node { manualFile { id } } } } }
	}`, fs.p[0])
	pr, res := eng.Prepare(context.Background(), m, protocol.Request{Query: q})
	if res != nil {
		t.Fatalf("%+v", res.Errors)
	}
	out := eng.Execute(context.Background(), sc, pr)
	if len(out.Errors) > 0 {
		t.Fatalf("%+v", out.Errors)
	}
	if n := counter.Load(); n != 4 {
		t.Errorf("%d SQL statements for 4 root fields, want 4", n)
	}
	if !strings.Contains(string(out.Data), `"product":{"manualFile":{"fileName":"manual.pdf"}}`) {
		t.Errorf("data: %s", out.Data)
	}
}

func TestFileFieldNameCollisions(t *testing.T) {
	for _, tc := range []struct {
		name string
		def  *schema.Definition
		want string
	}{
		{"user field named like the metadata field", &schema.Definition{Name: "x", Entities: []schema.Entity{{Name: "Doc", Fields: []schema.Field{
			{Name: "scan", Type: schema.File}, {Name: "scanFile", Type: schema.String}}}}}, "Doc.scanFile is generated twice"},
		{"entity named File next to a FILE field", &schema.Definition{Name: "x", Entities: []schema.Entity{
			{Name: "Doc", Fields: []schema.Field{{Name: "scan", Type: schema.File}}},
			{Name: "File", Fields: []schema.Field{{Name: "n", Type: schema.String}}}}}, "type File is generated twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := model.Build(tc.def)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one naming %q", err, tc.want)
			}
		})
	}
	// Without FILE fields no File type is generated: an entity may be named File.
	if _, err := model.Build(&schema.Definition{Name: "x", Entities: []schema.Entity{{Name: "File", Fields: []schema.Field{{Name: "n", Type: schema.String}}}}}); err != nil {
		t.Errorf("entity File without FILE fields: %v", err)
	}
	// The generated field is an object of type File.
	m, err := model.Build(&schema.Definition{Name: "x", Entities: []schema.Entity{{Name: "Doc", Fields: []schema.Field{{Name: "scan", Type: schema.File}}}}})
	if err != nil {
		t.Fatal(err)
	}
	if f := m.Field("Doc", "scanFile"); f == nil || f.Named != "File" || f.List || f.NonNull {
		t.Errorf("Doc.scanFile = %v", f)
	}
	if f := m.Field("File", "sizeBytes"); f == nil || f.Named != "Int" || f.List || !f.NonNull {
		t.Errorf("File.sizeBytes = %+v", f)
	}
}

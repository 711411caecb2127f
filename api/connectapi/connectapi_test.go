package connectapi_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/dds-project/dds/api/connectapi"
	"github.com/dds-project/dds/internal/testenv"
	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
)

const shop = `{"name": "shop", "entities": [
  {"name": "Product", "fields": [
    {"name": "name", "type": "STRING", "required": true, "searchable": true},
    {"name": "price", "type": "NUMBER"},
    {"name": "stock", "type": "INTEGER", "default": 0},
    {"name": "tags", "type": "STRING", "list": true},
    {"name": "status", "type": "ENUM", "values": ["draft", "live"]}]},
  {"name": "Category", "fields": [{"name": "name", "type": "STRING"}]}]}`

// bearer sets the Authorization header on every call of a client.
type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if b != "" {
			req.Header().Set("Authorization", "Bearer "+string(b))
		}
		return next(ctx, req)
	}
}
func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}
func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

func records(app *testenv.App, key string, opts ...connect.ClientOption) ddsv1connect.RecordServiceClient {
	return ddsv1connect.NewRecordServiceClient(app.Client, app.URL, append(opts, connect.WithInterceptors(bearer(key)))...)
}

func schemas(app *testenv.App, key string) ddsv1connect.SchemaServiceClient {
	return ddsv1connect.NewSchemaServiceClient(app.Client, app.URL, connect.WithInterceptors(bearer(key)))
}

func obj(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// tenant creates a tenant with the shop schema and returns its admin key.
func tenant(t *testing.T, app *testenv.App) string {
	t.Helper()
	_, key := app.Tenant(t)
	app.Schema(t, key, shop)
	return key
}

// keyWith creates a key of the admin key's tenant with scopes.
func keyWith(t *testing.T, app *testenv.App, admin string, scopes ...string) string {
	t.Helper()
	k := app.Must(t, http.StatusCreated, "POST", "/api/v1/api-keys", admin, map[string]any{"name": "scoped", "scopes": scopes}).JSON(t)
	return k["key"].(string)
}

// wantCode fails unless err is a Connect error with code.
func wantCode(t *testing.T, err error, code connect.Code) {
	t.Helper()
	_ = codeErr(t, err, code) // the *connect.Error is the checked result, not a failure
}

// codeErr is wantCode returning the Connect error, for tests that inspect its details.
func codeErr(t *testing.T, err error, code connect.Code) *connect.Error {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v, want Connect code %v", err, code)
	}
	if ce.Code() != code {
		t.Fatalf("code = %v (%s), want %v", ce.Code(), ce.Message(), code)
	}
	return ce
}

// violations returns the field violations of a google.rpc.BadRequest detail.
func violations(t *testing.T, ce *connect.Error) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, d := range ce.Details() {
		v, err := d.Value()
		if err != nil {
			t.Fatal(err)
		}
		if br, ok := v.(*errdetails.BadRequest); ok {
			for _, fv := range br.FieldViolations {
				out[fv.Field] = fv.Description
			}
		}
	}
	return out
}

func TestRecordServiceCRUD(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	key := tenant(t, app)
	ctx := context.Background()

	for _, codec := range []struct {
		name string
		opts []connect.ClientOption
	}{
		{"protobuf", nil},
		{"json", []connect.ClientOption{connect.WithProtoJSON()}},
		{"http get for reads", []connect.ClientOption{connect.WithHTTPGet()}},
	} {
		t.Run(codec.name, func(t *testing.T) {
			c := records(app, key, codec.opts...)
			created, err := c.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product",
				Record: obj(t, map[string]any{"name": "Lamp " + codec.name, "price": 12.5, "tags": []any{"home", "light"}, "status": "live"})}))
			if err != nil {
				t.Fatal(err)
			}
			rec := created.Msg.Record.AsMap()
			id, _ := rec["id"].(string)
			if id == "" || rec["name"] != "Lamp "+codec.name || rec["price"] != 12.5 || rec["stock"] != 0.0 || rec["createdAt"] == nil {
				t.Fatalf("created record = %v", rec)
			}

			got, err := c.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id, Select: []string{"name"}}))
			if err != nil {
				t.Fatal(err)
			}
			g := got.Msg.Record.AsMap()
			if g["id"] != id || g["name"] != "Lamp "+codec.name || g["price"] != nil {
				t.Errorf("get with select = %v", g)
			}

			upd, err := c.Update(ctx, connect.NewRequest(&ddsv1.UpdateRequest{Entity: "Product", Id: id, Record: obj(t, map[string]any{"stock": 7})}))
			if err != nil {
				t.Fatal(err)
			}
			u := upd.Msg.Record.AsMap()
			if u["stock"] != 7.0 || u["price"] != 12.5 || u["name"] != "Lamp "+codec.name {
				t.Errorf("patch changed other fields or not the field: %v", u)
			}
			rep, err := c.Update(ctx, connect.NewRequest(&ddsv1.UpdateRequest{Entity: "Product", Id: id, Replace: true,
				Record: obj(t, map[string]any{"name": "Lamp " + codec.name})}))
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Msg.Record.AsMap(); r["price"] != nil || r["stock"] != 0.0 || r["tags"] != nil {
				t.Errorf("replace kept fields it should clear: %v", r)
			}

			del, err := c.Delete(ctx, connect.NewRequest(&ddsv1.DeleteRequest{Entity: "Product", Id: id}))
			if err != nil {
				t.Fatal(err)
			}
			if del.Msg.Id != id {
				t.Errorf("delete returned id %q", del.Msg.Id)
			}
			_, err = c.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id}))
			wantCode(t, err, connect.CodeNotFound)
			_, err = c.Delete(ctx, connect.NewRequest(&ddsv1.DeleteRequest{Entity: "Product", Id: id}))
			wantCode(t, err, connect.CodeNotFound)
		})
	}
}

func TestRecordServiceList(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	key := tenant(t, app)
	ctx := context.Background()
	c := records(app, key)
	for i, p := range []struct {
		name  string
		price float64
		tag   string
	}{{"alpha", 5, "sale"}, {"beta", 15, "new"}, {"gamma", 25, "sale"}, {"delta", 35, "sale"}} {
		if _, err := c.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product",
			Record: obj(t, map[string]any{"name": p.name, "price": p.price, "stock": i, "tags": []any{p.tag}})})); err != nil {
			t.Fatal(err)
		}
	}
	res, err := c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product",
		Where:   obj(t, map[string]any{"price": map[string]any{"$gte": 10}, "tags": map[string]any{"$contains": "sale"}}),
		OrderBy: "price", OrderDirection: ddsv1.OrderDirection_ORDER_DIRECTION_DESC, Limit: 1, IncludeCount: true}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Msg.Count == nil || *res.Msg.Count != 2 {
		t.Errorf("count = %v, want 2", res.Msg.Count)
	}
	if len(res.Msg.Items) != 1 || res.Msg.Items[0].AsMap()["name"] != "delta" {
		t.Errorf("items = %v, want [delta]", res.Msg.Items)
	}

	res, err = c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", OrderBy: "price", Offset: 1, Limit: 2, Select: []string{"name"}}))
	if err != nil {
		t.Fatal(err)
	}
	var names []any
	for _, it := range res.Msg.Items {
		names = append(names, it.AsMap()["name"])
		if _, has := it.AsMap()["price"]; has {
			t.Errorf("select ignored: %v", it.AsMap())
		}
	}
	if len(names) != 2 || names[0] != "beta" || names[1] != "gamma" {
		t.Errorf("page = %v, want [beta gamma]", names)
	}
	if res.Msg.Count != nil {
		t.Errorf("count set without includeCount: %d", *res.Msg.Count)
	}

	res, err = c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", Search: "gamma"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Msg.Items) != 1 || res.Msg.Items[0].AsMap()["name"] != "gamma" {
		t.Errorf("search = %v", res.Msg.Items)
	}
}

func TestRecordServiceErrors(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	key := tenant(t, app)
	ctx := context.Background()
	c := records(app, key)
	created, err := c.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"name": "Mine"})}))
	if err != nil {
		t.Fatal(err)
	}
	id := created.Msg.Record.AsMap()["id"].(string)

	t.Run("validation names the field", func(t *testing.T) {
		cases := []struct {
			name  string
			call  func() error
			field string
		}{
			{"required field missing", func() error {
				_, err := c.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"price": 3})}))
				return err
			}, "name"},
			{"wrong type", func() error {
				_, err := c.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"name": "x", "price": "cheap"})}))
				return err
			}, "price"},
			{"fractional integer", func() error {
				_, err := c.Update(ctx, connect.NewRequest(&ddsv1.UpdateRequest{Entity: "Product", Id: id, Record: obj(t, map[string]any{"stock": 1.5})}))
				return err
			}, "stock"},
			{"enum value", func() error {
				_, err := c.Update(ctx, connect.NewRequest(&ddsv1.UpdateRequest{Entity: "Product", Id: id, Record: obj(t, map[string]any{"status": "gone"})}))
				return err
			}, "status"},
			{"unknown field", func() error {
				_, err := c.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"name": "x", "colour": "red"})}))
				return err
			}, "colour"},
			{"filter on an unknown field", func() error {
				_, err := c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", Where: obj(t, map[string]any{"colour": "red"})}))
				return err
			}, "where.colour"},
			{"unknown operator", func() error {
				_, err := c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", Where: obj(t, map[string]any{"price": map[string]any{"$like": 1}})}))
				return err
			}, "where.price"},
			{"negative limit", func() error {
				_, err := c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", Limit: -1}))
				return err
			}, "limit"},
			{"missing entity", func() error {
				_, err := c.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Id: id}))
				return err
			}, "entity"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				ce := codeErr(t, tc.call(), connect.CodeInvalidArgument)
				v := violations(t, ce)
				if _, ok := v[tc.field]; !ok {
					t.Errorf("field violations %v do not name %q (message %q)", v, tc.field, ce.Message())
				}
				if got := ce.Meta().Get(connectapi.ErrorCodeHeader); got != "VALIDATION_ERROR" {
					t.Errorf("%s = %q", connectapi.ErrorCodeHeader, got)
				}
			})
		}
		// Nothing was written by the rejected creates.
		res, err := c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", IncludeCount: true}))
		if err != nil {
			t.Fatal(err)
		}
		if *res.Msg.Count != 1 {
			t.Errorf("count = %d after rejected writes, want 1", *res.Msg.Count)
		}
	})

	t.Run("missing scope is PermissionDenied", func(t *testing.T) {
		reader := records(app, keyWith(t, app, key, "entity:Product:read"))
		if _, err := reader.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id})); err != nil {
			t.Fatalf("read with entity:Product:read: %v", err)
		}
		_, err := reader.Create(ctx, connect.NewRequest(&ddsv1.CreateRequest{Entity: "Product", Record: obj(t, map[string]any{"name": "x"})}))
		wantCode(t, err, connect.CodePermissionDenied)
		_, err = reader.Update(ctx, connect.NewRequest(&ddsv1.UpdateRequest{Entity: "Product", Id: id, Record: obj(t, map[string]any{"name": "y"})}))
		wantCode(t, err, connect.CodePermissionDenied)
		_, err = reader.Delete(ctx, connect.NewRequest(&ddsv1.DeleteRequest{Entity: "Product", Id: id}))
		wantCode(t, err, connect.CodePermissionDenied)
		_, err = reader.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Category"}))
		wantCode(t, err, connect.CodePermissionDenied)
		if _, err := reader.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id})); err != nil {
			t.Errorf("record changed or gone after refused writes: %v", err)
		}
	})

	t.Run("no or bad key is Unauthenticated", func(t *testing.T) {
		for _, k := range []string{"", "dds_test_not-a-real-key", "garbage"} {
			for _, opts := range [][]connect.ClientOption{nil, {connect.WithProtoJSON()}, {connect.WithGRPCWeb()}} {
				_, err := records(app, k, opts...).Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id}))
				ce := codeErr(t, err, connect.CodeUnauthenticated)
				// Rendered in the caller's protocol, with the reason.
				if ce.Message() == "" || ce.Meta().Get(connectapi.ErrorCodeHeader) != "UNAUTHORIZED" {
					t.Errorf("key %q: message %q, %s %q", k, ce.Message(), connectapi.ErrorCodeHeader, ce.Meta().Get(connectapi.ErrorCodeHeader))
				}
			}
		}
		_, err := schemas(app, "").ListSchemas(ctx, connect.NewRequest(&ddsv1.ListSchemasRequest{}))
		wantCode(t, err, connect.CodeUnauthenticated)
	})

	t.Run("another tenant's id is NotFound", func(t *testing.T) {
		other := records(app, tenant(t, app))
		_, err := other.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id}))
		wantCode(t, err, connect.CodeNotFound)
		_, err = other.Update(ctx, connect.NewRequest(&ddsv1.UpdateRequest{Entity: "Product", Id: id, Record: obj(t, map[string]any{"name": "stolen"})}))
		wantCode(t, err, connect.CodeNotFound)
		_, err = other.Delete(ctx, connect.NewRequest(&ddsv1.DeleteRequest{Entity: "Product", Id: id}))
		wantCode(t, err, connect.CodeNotFound)
		res, err := other.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product", IncludeCount: true}))
		if err != nil {
			t.Fatal(err)
		}
		if *res.Msg.Count != 0 {
			t.Errorf("the other tenant sees %d records", *res.Msg.Count)
		}
		got, err := c.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: id}))
		if err != nil || got.Msg.Record.AsMap()["name"] != "Mine" {
			t.Errorf("owner's record changed: %v %v", got, err)
		}
	})

	t.Run("unknown entity and malformed id are NotFound", func(t *testing.T) {
		_, err := c.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "product", Id: id}))
		wantCode(t, err, connect.CodeNotFound)
		_, err = c.Get(ctx, connect.NewRequest(&ddsv1.GetRequest{Entity: "Product", Id: "not-a-uuid"}))
		wantCode(t, err, connect.CodeNotFound)
	})
}

func TestSchemaService(t *testing.T) {
	t.Parallel()
	app := testenv.Server(t)
	_, key := app.Tenant(t)
	created := app.Schema(t, key, shop)
	id := created["id"].(string)
	ctx := context.Background()
	c := schemas(app, key)

	list, err := c.ListSchemas(ctx, connect.NewRequest(&ddsv1.ListSchemasRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Msg.Schemas) != 1 || list.Msg.Schemas[0].Id != id || list.Msg.Schemas[0].Name != "shop" || !list.Msg.Schemas[0].Active {
		t.Fatalf("schemas = %v", list.Msg.Schemas)
	}
	got, err := c.GetSchema(ctx, connect.NewRequest(&ddsv1.GetSchemaRequest{Id: id}))
	if err != nil {
		t.Fatal(err)
	}
	def := got.Msg.Schema.Definition.AsMap()
	ents, _ := def["entities"].([]any)
	if len(ents) != 2 || ents[0].(map[string]any)["name"] != "Product" || got.Msg.Schema.Version != 1 || got.Msg.Schema.CreatedAt == nil {
		t.Errorf("schema = %v", got.Msg.Schema)
	}

	_, otherKey := app.Tenant(t)
	_, err = schemas(app, otherKey).GetSchema(ctx, connect.NewRequest(&ddsv1.GetSchemaRequest{Id: id}))
	wantCode(t, err, connect.CodeNotFound)
	_, err = c.GetSchema(ctx, connect.NewRequest(&ddsv1.GetSchemaRequest{}))
	wantCode(t, err, connect.CodeInvalidArgument)
	_, err = schemas(app, keyWith(t, app, key, "entity:*:*")).ListSchemas(ctx, connect.NewRequest(&ddsv1.ListSchemasRequest{}))
	wantCode(t, err, connect.CodePermissionDenied)
}

func TestRecordServiceTenantRateLimit(t *testing.T) {
	t.Parallel()
	cfg := testenv.Config(t)
	cfg.RateTenant = 3
	app := testenv.NewServer(t, cfg)
	key := tenant(t, app) // the schema creation is the first request of the window
	c := records(app, key)
	ctx := context.Background()
	var err error
	for i := 0; i < 10 && err == nil; i++ {
		_, err = c.List(ctx, connect.NewRequest(&ddsv1.ListRequest{Entity: "Product"}))
	}
	ce := codeErr(t, err, connect.CodeResourceExhausted)
	if ce.Meta().Get("X-RateLimit-Limit") != "3" || ce.Meta().Get("X-RateLimit-Reset") == "" {
		t.Errorf("rate-limit headers missing: %v", ce.Meta())
	}
}

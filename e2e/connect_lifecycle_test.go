package e2e

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"

	ddsv1 "github.com/dds-project/dds/proto/gen/dds/v1"
	"github.com/dds-project/dds/proto/gen/dds/v1/ddsv1connect"
)

// connectAs is a RecordService client of the binary sending cred.
func connectAs(d *deployment, cred string) ddsv1connect.RecordServiceClient {
	return ddsv1connect.NewRecordServiceClient(http.DefaultClient, d.URL, connect.WithInterceptors(connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("Authorization", "Bearer "+cred)
			return next(ctx, req)
		}
	})))
}

// restVersion is a history item as REST answers it.
type restVersion struct {
	ID, Op, At    string
	KeyID, UserID string
	Changed       []string
	Record        map[string]any
}

// restHistory reads every version of a record over REST, pages of limit.
func restHistory(t *testing.T, d *deployment, cred, entity, id string, limit int) []restVersion {
	t.Helper()
	var all []restVersion
	cursor := ""
	for range 20 {
		var p struct {
			Items      []restVersion
			NextCursor string
		}
		d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/"+entity+"/"+id+"/history?limit="+itoa(limit)+"&cursor="+cursor, cred, nil).decode(t, &p)
		all = append(all, p.Items...)
		if p.NextCursor == "" {
			return all
		}
		cursor = p.NextCursor
	}
	t.Fatal("REST history never ended")
	return nil
}

// connectHistory reads every version of a record over Connect, pages of
// limit.
func connectHistory(t *testing.T, rc ddsv1connect.RecordServiceClient, entity, id string, limit int32) ([]*ddsv1.Version, error) {
	t.Helper()
	var all []*ddsv1.Version
	cursor := ""
	for range 20 {
		res, err := rc.History(t.Context(), connect.NewRequest(&ddsv1.HistoryRequest{Entity: entity, Id: id, Limit: limit, Cursor: cursor}))
		if err != nil {
			return all, err
		}
		if limit > 0 && len(res.Msg.Items) > int(limit) {
			t.Fatalf("History page of %d versions, limit %d", len(res.Msg.Items), limit)
		}
		all = append(all, res.Msg.Items...)
		if res.Msg.NextCursor == "" {
			return all, nil
		}
		cursor = res.Msg.NextCursor
	}
	t.Fatal("Connect history never ended")
	return nil, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

// sameVersions fails unless the Connect versions are the REST ones: ids,
// order, op, time, writer, changed fields and record.
func sameVersions(t *testing.T, what string, rest []restVersion, got []*ddsv1.Version) {
	t.Helper()
	if len(rest) != len(got) {
		t.Fatalf("%s: Connect has %d versions, REST %d: %v / %+v", what, len(got), len(rest), got, rest)
	}
	for i, r := range rest {
		g := got[i]
		at, err := time.Parse(time.RFC3339Nano, r.At)
		if err != nil {
			t.Fatalf("%s: REST version time %q: %v", what, r.At, err)
		}
		rec := g.Record.AsMap()
		if g.Id != r.ID || g.Op != r.Op || !g.At.AsTime().Equal(at) || g.KeyId != r.KeyID || g.UserId != r.UserID ||
			!slices.Equal(g.Changed, r.Changed) || len(rec) != len(r.Record) {
			t.Fatalf("%s: version %d over Connect is %v, over REST %+v", what, i, g, r)
		}
		for k, v := range r.Record {
			if gv, ok := rec[k]; !ok || (v != nil && gv != v) {
				t.Fatalf("%s: version %d field %s is %v over Connect, %v over REST", what, i, k, gv, v)
			}
		}
	}
}

// wantConnectCode fails unless err is a Connect error with code.
func wantConnectCode(t *testing.T, what string, err error, code connect.Code) {
	t.Helper()
	_ = connectErrorWith(t, what, err, code)
}

// connectErrorWith is wantConnectCode returning the error.
func connectErrorWith(t *testing.T, what string, err error, code connect.Code) *connect.Error {
	t.Helper()
	var ce *connect.Error
	if !errors.As(err, &ce) || ce.Code() != code {
		t.Fatalf("%s: %v, want %s", what, err, code)
	}
	return ce
}

func violationFields(ce *connect.Error) []string {
	var out []string
	for _, d := range ce.Details() {
		if m, err := d.Value(); err == nil {
			if br, ok := m.(*errdetails.BadRequest); ok {
				for _, v := range br.FieldViolations {
					out = append(out, v.Field)
				}
			}
		}
	}
	return out
}

// History and restore over Connect, through the binary: the versions REST
// lists (same ids, order, times, writer, changed fields, records) in the
// same pages, one version by id, restore of a soft-deleted record, and
// the errors REST gives, as Connect codes.
func TestConnectHistoryAndRestore(t *testing.T) {
	t.Parallel()
	d := local
	_, key := d.tenant(t)
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", key, library(true))
	var writer struct{ ID, Key string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "writer", "scopes": []string{"entity:Author:*"}}).decode(t, &writer)
	var reader struct{ Key string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/api-keys", key, map[string]any{"name": "reader", "scopes": []string{"entity:Author:read"}}).decode(t, &reader)

	var a struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Author", writer.Key, map[string]any{"name": "Ursula", "born": 1929}).decode(t, &a)
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Author/"+a.ID, writer.Key, map[string]any{"name": "Ursula K. Le Guin"})
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Author/"+a.ID, writer.Key, map[string]any{"born": 1930})
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Author/"+a.ID, writer.Key, nil)

	rc := connectAs(d, writer.Key)
	// Restore: only with the delete scope; then the record is back, on
	// REST too, and a second restore answers it unchanged.
	_, err := connectAs(d, reader.Key).Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Author", Id: a.ID}))
	wantConnectCode(t, "Restore with a read-only key", err, connect.CodePermissionDenied)
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Author/"+a.ID, key, nil)
	res, err := rc.Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Author", Id: a.ID}))
	if err != nil || res.Msg.Record.Fields["name"].GetStringValue() != "Ursula K. Le Guin" || res.Msg.Record.Fields["id"].GetStringValue() != a.ID {
		t.Fatalf("Restore: %v %v", res, err)
	}
	d.do(t, http.StatusOK, "GET", "/api/v1/dynamic/Author/"+a.ID, key, nil)
	if _, err := rc.Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Author", Id: a.ID})); err != nil {
		t.Fatalf("a second Restore: %v", err)
	}

	// History: the REST versions, paged alike, newest first.
	rest := restHistory(t, d, reader.Key, "Author", a.ID, 2)
	if len(rest) != 5 || rest[0].Op != "restore" || rest[4].Op != "create" {
		t.Fatalf("REST history: %+v", rest)
	}
	for _, limit := range []int32{2, 0} {
		got, err := connectHistory(t, connectAs(d, reader.Key), "Author", a.ID, limit)
		if err != nil {
			t.Fatalf("History limit %d: %v", limit, err)
		}
		sameVersions(t, "History", rest, got)
	}
	if rest[2].KeyID != writer.ID || !slices.Equal(rest[2].Changed, []string{"born"}) {
		t.Fatalf("REST version 2: %+v", rest[2])
	}
	// One version by id.
	v, err := connectAs(d, reader.Key).GetVersion(t.Context(), connect.NewRequest(&ddsv1.GetVersionRequest{Entity: "Author", Id: a.ID, VersionId: rest[3].ID}))
	if err != nil {
		t.Fatalf("GetVersion: %v", err)
	}
	sameVersions(t, "GetVersion", rest[3:4], []*ddsv1.Version{v.Msg.Version})

	// Errors, as REST's, in Connect codes with the field named.
	var b struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Author", key, map[string]any{"name": "Other"}).decode(t, &b)
	for _, c := range []struct {
		what  string
		call  func() error
		code  connect.Code
		field string
	}{
		{"History with a bad cursor", func() error {
			_, err := rc.History(t.Context(), connect.NewRequest(&ddsv1.HistoryRequest{Entity: "Author", Id: a.ID, Cursor: "not a cursor!"}))
			return err
		}, connect.CodeInvalidArgument, "cursor"},
		{"History with limit 501", func() error {
			_, err := rc.History(t.Context(), connect.NewRequest(&ddsv1.HistoryRequest{Entity: "Author", Id: a.ID, Limit: 501}))
			return err
		}, connect.CodeInvalidArgument, "limit"},
		{"History of a record id that is not a UUID (as REST: 404)", func() error {
			_, err := rc.History(t.Context(), connect.NewRequest(&ddsv1.HistoryRequest{Entity: "Author", Id: "x'; drop"}))
			return err
		}, connect.CodeNotFound, ""},
		{"History of an entity without history", func() error {
			_, err := connectAs(d, key).History(t.Context(), connect.NewRequest(&ddsv1.HistoryRequest{Entity: "Book", Id: a.ID}))
			return err
		}, connect.CodeInvalidArgument, ""},
		{"History without the read scope", func() error {
			_, err := rc.History(t.Context(), connect.NewRequest(&ddsv1.HistoryRequest{Entity: "Book", Id: a.ID}))
			return err
		}, connect.CodePermissionDenied, ""},
		{"GetVersion of a bad version id", func() error {
			_, err := rc.GetVersion(t.Context(), connect.NewRequest(&ddsv1.GetVersionRequest{Entity: "Author", Id: a.ID, VersionId: "v1"}))
			return err
		}, connect.CodeInvalidArgument, "versionId"},
		{"GetVersion of another record's version", func() error {
			_, err := rc.GetVersion(t.Context(), connect.NewRequest(&ddsv1.GetVersionRequest{Entity: "Author", Id: b.ID, VersionId: rest[0].ID}))
			return err
		}, connect.CodeNotFound, ""},
		{"Restore of an entity without soft delete", func() error {
			_, err := connectAs(d, key).Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Nope", Id: a.ID}))
			return err
		}, connect.CodeNotFound, ""},
		{"Restore of a record that does not exist", func() error {
			_, err := rc.Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Author", Id: "0190b0f6-0000-7000-8000-000000000000"}))
			return err
		}, connect.CodeNotFound, ""},
	} {
		ce := connectErrorWith(t, c.what, c.call(), c.code)
		if c.field != "" && !slices.Contains(violationFields(ce), c.field) {
			t.Fatalf("%s: field violations %v, want %s", c.what, violationFields(ce), c.field)
		}
	}
}

// History and restore over Connect under rules, through the binary: a
// user token gets the answers REST gives it. A record the user may not
// read has no history and cannot be restored (NOT_FOUND on both), and a
// role with a field read list sees versions cut to those fields.
func TestConnectHistoryUnderRules(t *testing.T) {
	t.Parallel()
	d := local
	tenant, admin := d.tenant(t)
	_ = tenant
	schema := map[string]any{"name": "todos", "entities": []any{
		map[string]any{"name": "User", "fields": []any{map[string]any{"name": "uid", "type": "STRING"}}},
		map[string]any{"name": "Todo", "softDelete": true, "history": true, "fields": []any{
			map[string]any{"name": "title", "type": "STRING", "required": true},
			map[string]any{"name": "code", "type": "STRING"},
			map[string]any{"name": "ownerId", "type": "STRING", "indexed": true},
			map[string]any{"name": "done", "type": "BOOLEAN"},
			map[string]any{"name": "priority", "type": "INTEGER"},
			map[string]any{"name": "org", "type": "STRING"},
			map[string]any{"name": "embedding", "type": "VECTOR", "vectorDimensions": 2},
		}},
	}, "relationships": []any{map[string]any{"name": "sharedWith", "from": "Todo", "to": "User", "fromField": "sharedWith", "toField": "sharedTodos"}}}
	d.do(t, http.StatusCreated, "POST", "/api/v1/schemas", admin, schema)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/member", admin, memberRole)
	d.do(t, http.StatusCreated, "PUT", "/api/v1/roles/reader", admin, readerRole)
	tok := func(body map[string]any) string {
		return d.do(t, http.StatusCreated, "POST", "/api/v1/auth/token", admin, body).body(t)["accessToken"].(string)
	}
	alice := tok(map[string]any{"userId": "alice", "roles": []any{"member"}})
	bob := tok(map[string]any{"userId": "bob", "roles": []any{"member"}})
	dave := tok(map[string]any{"userId": "dave", "roles": []any{"reader"}, "claims": map[string]any{"org": "acme"}})

	var todo struct{ ID string }
	d.do(t, http.StatusCreated, "POST", "/api/v1/dynamic/Todo", alice, map[string]any{"title": "write report", "org": "acme"}).decode(t, &todo)
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Todo/"+todo.ID, alice, map[string]any{"title": "write the report", "done": true})
	d.do(t, http.StatusOK, "PATCH", "/api/v1/dynamic/Todo/"+todo.ID, admin, map[string]any{"priority": 3})

	// alice owns it: all of it, the same on both APIs, her user id on her writes.
	rest := restHistory(t, d, alice, "Todo", todo.ID, 2)
	if len(rest) != 3 || rest[2].UserID != "alice" || rest[2].Record["ownerId"] != "alice" || !slices.Equal(rest[0].Changed, []string{"priority"}) {
		t.Fatalf("alice's REST history: %+v", rest)
	}
	got, err := connectHistory(t, connectAs(d, alice), "Todo", todo.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	sameVersions(t, "alice's history", rest, got)

	// bob may not read it: NOT_FOUND on REST and on every Connect RPC.
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+todo.ID+"/history", bob, nil)
	_, err = connectHistory(t, connectAs(d, bob), "Todo", todo.ID, 0)
	wantConnectCode(t, "bob's History of alice's todo", err, connect.CodeNotFound)
	_, err = connectAs(d, bob).GetVersion(t.Context(), connect.NewRequest(&ddsv1.GetVersionRequest{Entity: "Todo", Id: todo.ID, VersionId: rest[0].ID}))
	wantConnectCode(t, "bob's GetVersion of alice's todo", err, connect.CodeNotFound)

	// dave reads acme's todos without ownerId and priority: the versions
	// leave them out of the record and of the changed fields, on both APIs.
	rest = restHistory(t, d, dave, "Todo", todo.ID, 50)
	if len(rest) != 3 || len(rest[0].Changed) != 0 || rest[2].Record["title"] != "write report" {
		t.Fatalf("dave's REST history: %+v", rest)
	}
	for _, v := range rest {
		if _, ok := v.Record["ownerId"]; ok {
			t.Fatalf("dave's REST history shows ownerId: %+v", v)
		}
		if _, ok := v.Record["priority"]; ok || slices.Contains(v.Changed, "ownerId") {
			t.Fatalf("dave's REST history shows priority or ownerId: %+v", v)
		}
	}
	got, err = connectHistory(t, connectAs(d, dave), "Todo", todo.ID, 1)
	if err != nil {
		t.Fatal(err)
	}
	sameVersions(t, "dave's history", rest, got)
	v, err := connectAs(d, dave).GetVersion(t.Context(), connect.NewRequest(&ddsv1.GetVersionRequest{Entity: "Todo", Id: todo.ID, VersionId: rest[2].ID}))
	if err != nil {
		t.Fatal(err)
	}
	sameVersions(t, "dave's GetVersion", rest[2:], []*ddsv1.Version{v.Msg.Version})

	// Restore under rules: bob cannot undo alice's delete (NOT_FOUND, as
	// on REST, and the record stays deleted); alice can.
	d.do(t, http.StatusNoContent, "DELETE", "/api/v1/dynamic/Todo/"+todo.ID, alice, nil)
	d.do(t, http.StatusNotFound, "POST", "/api/v1/dynamic/Todo/"+todo.ID+"/restore", bob, nil)
	_, err = connectAs(d, bob).Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Todo", Id: todo.ID}))
	wantConnectCode(t, "bob's Restore of alice's todo", err, connect.CodeNotFound)
	d.do(t, http.StatusNotFound, "GET", "/api/v1/dynamic/Todo/"+todo.ID, alice, nil)
	res, err := connectAs(d, alice).Restore(t.Context(), connect.NewRequest(&ddsv1.RestoreRequest{Entity: "Todo", Id: todo.ID}))
	if err != nil || res.Msg.Record.Fields["title"].GetStringValue() != "write the report" {
		t.Fatalf("alice's Restore: %v %v", res, err)
	}
	rest = restHistory(t, d, alice, "Todo", todo.ID, 50)
	if len(rest) != 5 || rest[0].Op != "restore" || rest[0].UserID != "alice" || rest[1].Op != "delete" {
		t.Fatalf("history after alice's delete and restore: %+v", rest)
	}
}

package records_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// The live feed evaluates a subscription's where in Go when it can
// (query.Local) and in Postgres otherwise. The two must agree on every
// record, nulls included: every filter below runs both ways on the event
// records of real writes, and the ones marked local must not need SQL.
func TestLocalMatchesAgreeWithSQL(t *testing.T) {
	ctx := context.Background()
	d, schemas, tenant := tenantSchema(t, &schema.Definition{Name: "match", Entities: []schema.Entity{{Name: "Item", Fields: []schema.Field{
		{Name: "name", Type: schema.String},
		{Name: "body", Type: schema.Text},
		{Name: "kind", Type: schema.Enum, Values: []string{"a", "b"}},
		{Name: "qty", Type: schema.Integer},
		{Name: "price", Type: schema.Number},
		{Name: "ok", Type: schema.Boolean},
		{Name: "at", Type: schema.Timestamp},
		{Name: "tags", Type: schema.String, List: true},
	}}}})
	s := records.NewStore(d, schemas, nil)
	sc, err := s.Scope(ctx, records.SystemPrincipal(tenant))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{
		`{"name": "apple", "body": "red fruit", "kind": "a", "qty": 3, "price": 0.1, "ok": true, "at": "2026-01-02T03:04:05.123456Z", "tags": ["x"]}`,
		`{"name": "Apple", "body": "50% off_sale", "kind": "b", "qty": -7, "price": 2.5, "ok": false, "at": "2025-12-31T23:59:59Z"}`,
		`{"name": "banana"}`,
		`{}`,
	} {
		dec := json.NewDecoder(strings.NewReader(in))
		dec.UseNumber()
		var fields map[string]any
		if err := dec.Decode(&fields); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, sc, "Item", fields); err != nil {
			t.Fatal(err)
		}
	}
	var evs []outbox.Event
	if err := d.Select(&evs, `SELECT id, tenant_id, '' AS tenant_name, schema_name, type, entity_name, entity_id, record, created_at, seq
		FROM dds.events WHERE tenant_id = $1 ORDER BY seq`, tenant); err != nil || len(evs) != 4 {
		t.Fatalf("%d events, %v", len(evs), err)
	}
	var id string
	if err := json.Unmarshal(evs[0].Record, &struct{ ID *string }{&id}); err != nil {
		t.Fatal(err)
	}
	keyedWheres := map[string]bool{`{"name": "apple"}`: true, `{"kind": "b"}`: true, `{"ok": true}`: true, `{"id": "` + id + `"}`: true,
		`{"$and": [{"kind": "a"}, {"qty": {"$gt": 0}}]}`: true, `{"id": "` + strings.ToUpper(id) + `"}`: true, `{"qty": 3}`: true}
	for _, c := range []struct {
		where string
		local bool
	}{
		{`{"name": "apple"}`, true},
		{`{"name": {"$neq": "apple"}}`, true},
		{`{"name": {"$eq": null}}`, true},
		{`{"name": {"$neq": null}}`, true},
		{`{"name": {"$in": ["apple", "banana"]}}`, true},
		{`{"name": {"$notIn": ["apple"]}}`, true},
		{`{"name": {"$isNull": true}}`, true},
		{`{"name": {"$contains": "ppl"}}`, true},
		{`{"body": {"$contains": "% off_"}}`, true},
		{`{"name": {"$startsWith": "A"}}`, true},
		{`{"body": {"$endsWith": "fruit"}}`, true},
		{`{"kind": "b"}`, true},
		{`{"qty": {"$gt": 0}}`, true},
		{`{"qty": {"$lte": -7}}`, true},
		{`{"qty": {"$in": [3, 4]}}`, true},
		{`{"price": {"$gte": 0.1}}`, true},
		{`{"price": 2.5}`, true},
		{`{"ok": true}`, true},
		{`{"ok": {"$neq": true}}`, true},
		{`{"at": {"$gt": "2026-01-01T00:00:00Z"}}`, true},
		{`{"at": "2026-01-02T04:04:05.123456+01:00"}`, true},
		{`{"createdAt": {"$lt": "2100-01-01T00:00:00Z"}}`, true},
		{`{"id": "` + id + `"}`, true},
		{`{"$not": {"name": "apple"}}`, true},
		{`{"$not": {"qty": {"$gt": 0}}}`, true},
		{`{"$or": [{"qty": {"$gt": 0}}, {"ok": false}]}`, true},
		{`{"$and": [{"name": {"$neq": "x"}}, {"$not": {"price": {"$lt": 1}}}]}`, true},
		// Postgres decides these: collation, lists, sub-microsecond times.
		{`{"name": {"$gt": "B"}}`, false},
		{`{"tags": {"$contains": "x"}}`, false},
		{`{"at": {"$gt": "2026-01-02T03:04:05.1234567Z"}}`, false},
		// Keyed: the live feed offers an event only to subscribers whose key it carries.
		{`{"$and": [{"kind": "a"}, {"qty": {"$gt": 0}}]}`, true},
		{`{"id": "` + strings.ToUpper(id) + `"}`, true},
		{`{"qty": 3}`, true},
		{`{"ok": false}`, true},
	} {
		f, err := query.ParseWhereJSON(c.where, "where")
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		m, err := records.CompileMatch(sc, "Item", f)
		if err != nil {
			t.Fatalf("%s: %v", c.where, err)
		}
		for i := range evs {
			ev := &evs[i]
			want, err := s.Matches(ctx, m, ev.Record)
			if err != nil {
				t.Fatalf("%s: %v", c.where, err)
			}
			fields, err := ev.Fields()
			if err != nil {
				t.Fatal(err)
			}
			// A filter's equality key must be carried by every record it
			// matches (else the live feed would never offer it the event).
			if key, keyed := m.Key(); keyed {
				if value, present, ok := key.Of(fields); want && (!ok || !present || value != key.Value) {
					t.Fatalf("%s matches %s, but its key %s=%q is not carried (%q, %v, %v)", c.where, ev.Record, key.Field, key.Value, value, present, ok)
				}
			} else if keyedWheres[c.where] {
				t.Fatalf("%s: no equality key", c.where)
			}
			got, ok := m.MatchesLocally(fields)
			if ok != c.local {
				t.Fatalf("%s: evaluated locally = %v, want %v", c.where, ok, c.local)
			}
			if ok && got != want {
				t.Fatalf("%s on %s: Go says %v, Postgres %v", c.where, ev.Record, got, want)
			}
		}
	}
}

package exec

import (
	"bytes"
	"encoding/json"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// aggOut is one member of an aggregate's response: a measure (Alias set),
// an object of members (Sub), the group key object, or __typename.
type aggOut struct {
	key      string
	alias    string // the measure's alias in the statement's result
	typename string // set for __typename
	keyField string // a member of the group key
	sub      []aggOut
}

// aggregateField resolves <plural>Aggregate(where, groupBy): the members
// outside groups are one aggregation over every matching record, groups
// another grouped by groupBy; each is one statement (both run only when
// both are selected).
func (x *execCtx) aggregateField(e *schema.Entity, cf *cfield, args map[string]any) ([]byte, error) {
	where, err := x.where(e, args["where"])
	if err != nil {
		return nil, err
	}
	t := e.Name + "Aggregate"
	total := query.Aggregation{Entity: e.Name, Where: where}
	var groups *query.Aggregation
	var groupsOut []aggOut
	var out []aggOut
	for _, c := range x.collect(cf.sel, t) {
		switch c.field.Name {
		case "__typename":
			out = append(out, aggOut{key: c.key, typename: t})
		case "groups":
			p := query.Aggregation{Entity: e.Name, Where: where}
			for _, f := range stringList(args["groupBy"]) {
				p.GroupBy = append(p.GroupBy, query.GroupKey{Field: f})
			}
			if len(p.GroupBy) == 0 {
				return nil, apperr.Field("groupBy", "groups needs groupBy")
			}
			if err := buckets(&p, args["buckets"]); err != nil {
				return nil, err
			}
			gargs := c.field.ArgumentMap(x.vars)
			p.Limit, _ = operation.IntArg(gargs["limit"])
			p.Offset, _ = operation.IntArg(gargs["offset"])
			ms, err := x.measures(e, x.collect(c.sel, t+"Group"), t+"Group", &p)
			if err != nil {
				return nil, err
			}
			if err := x.groupOrderHaving(&p, gargs); err != nil { // groups.go
				return nil, err
			}
			groups, groupsOut = &p, ms
			out = append(out, aggOut{key: c.key, alias: "\x00groups"})
		default:
			ms, err := x.measures(e, []*cfield{c}, t, &total)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	var totalRow map[string]json.RawMessage
	if len(total.Measures) > 0 {
		raw, err := x.aggregate(total)
		if err != nil {
			return nil, err
		}
		if totalRow, err = firstGroup(raw); err != nil {
			return nil, err
		}
	}
	var groupRows []map[string]json.RawMessage
	var groupsJSON []byte // the groups as the response has them (Output)
	if groups != nil {
		if len(groups.Measures) == 0 { // only keys selected: count them anyway, to group
			groups.Measures = []query.Measure{{Alias: "_n", Func: query.Count, Field: "*"}}
		}
		groups.Output = groupOutput(groupsOut)
		raw, err := x.aggregate(*groups)
		if err != nil {
			return nil, namedMeasures(groups, err)
		}
		if groups.Output != nil {
			groupsJSON = raw
		} else {
			var res struct {
				Groups []map[string]json.RawMessage `json:"groups"`
			}
			if err := json.Unmarshal(raw, &res); err != nil {
				return nil, apperr.Wrap(err, "read aggregate")
			}
			groupRows = res.Groups
		}
	}
	var b bytes.Buffer
	writeAgg(&b, out, totalRow, func(b *bytes.Buffer) {
		if groupsJSON != nil {
			// Postgres wrote the groups as the response has them; only the
			// spaces json_build_object and json_agg put between members go.
			if err := json.Compact(b, groupsJSON); err != nil {
				b.WriteString("[]") // not reached: Postgres writes valid JSON
			}
			return
		}
		b.WriteByte('[')
		for i, g := range groupRows {
			if i > 0 {
				b.WriteByte(',')
			}
			var keys map[string]json.RawMessage
			_ = json.Unmarshal(g["key"], &keys)
			writeGroup(b, groupsOut, g, keys)
		}
		b.WriteByte(']')
	})
	return b.Bytes(), nil
}

// groupOutput is the JSON of one group as out writes it, for Postgres to
// build (query.Aggregation.Output); nil when an object of it has more
// members than one json_build_object takes (Go then writes the groups).
func groupOutput(out []aggOut) []query.GroupMember {
	if len(out) > 50 {
		return nil
	}
	ms := make([]query.GroupMember, 0, len(out))
	for _, o := range out {
		m := query.GroupMember{Key: o.key}
		switch {
		case o.typename != "":
			m.Const = o.typename
		case o.alias != "":
			m.Measure = o.alias
		case o.keyField != "":
			m.KeyField = o.keyField
		default:
			if m.Sub = groupOutput(o.sub); m.Sub == nil {
				return nil
			}
		}
		ms = append(ms, m)
	}
	return ms
}

func (x *execCtx) aggregate(p query.Aggregation) ([]byte, error) {
	raw, err := x.e.store.Aggregate(x.ctx, x.sc, p)
	return raw, noRow(err)
}

func firstGroup(raw []byte) (map[string]json.RawMessage, error) {
	var res struct {
		Groups []map[string]json.RawMessage `json:"groups"`
	}
	if err := json.Unmarshal(raw, &res); err != nil || len(res.Groups) != 1 {
		return nil, apperr.New(apperr.Internal, "aggregate: want one group")
	}
	return res.Groups[0], nil
}

// measures adds to p the measures fields of type typ select (count,
// countDistinct {f}, sum {f}, ..., and key {f} in a group) and returns how
// to write them.
func (x *execCtx) measures(e *schema.Entity, fields []*cfield, typ string, p *query.Aggregation) ([]aggOut, error) {
	add := func(fn query.AggFunc, field string) string { return addMeasure(p, fn, field) }
	out := make([]aggOut, 0, len(fields))
	for _, c := range fields {
		out = append(out, x.measure(e, c, typ, add))
	}
	return out, nil
}

func (x *execCtx) measure(e *schema.Entity, c *cfield, typ string, add func(query.AggFunc, string) string) aggOut {
	switch c.field.Name {
	case "__typename":
		return aggOut{key: c.key, typename: typ}
	case "count":
		return aggOut{key: c.key, alias: add(query.Count, "*")}
	case "key":
		o := aggOut{key: c.key}
		kt := e.Name + "AggregateKey"
		for _, kc := range x.collect(c.sel, kt) {
			if kc.field.Name == "__typename" {
				o.sub = append(o.sub, aggOut{key: kc.key, typename: kt})
				continue
			}
			o.sub = append(o.sub, aggOut{key: kc.key, keyField: kc.field.Name})
		}
		if o.sub == nil {
			o.sub = []aggOut{}
		}
		return o
	}
	fn := query.AggFunc(c.field.Name)
	st := e.Name + "Aggregate" + upper(c.field.Name)
	o := aggOut{key: c.key, sub: []aggOut{}}
	for _, fc := range x.collect(c.sel, st) {
		if fc.field.Name == "__typename" {
			o.sub = append(o.sub, aggOut{key: fc.key, typename: st})
			continue
		}
		o.sub = append(o.sub, aggOut{key: fc.key, alias: add(fn, fc.field.Name)})
	}
	return o
}

func upper(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// writeAgg writes members out of row (groups written by groups).
func writeAgg(b *bytes.Buffer, out []aggOut, row map[string]json.RawMessage, groups func(*bytes.Buffer)) {
	b.WriteByte('{')
	for i, o := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(o.key)
		b.Write(k)
		b.WriteByte(':')
		if o.alias == "\x00groups" {
			groups(b)
		} else {
			writeMember(b, o, row, nil)
		}
	}
	b.WriteByte('}')
}

func writeGroup(b *bytes.Buffer, out []aggOut, row, keys map[string]json.RawMessage) {
	b.WriteByte('{')
	for i, o := range out {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(o.key)
		b.Write(k)
		b.WriteByte(':')
		writeMember(b, o, row, keys)
	}
	b.WriteByte('}')
}

func writeMember(b *bytes.Buffer, o aggOut, row, keys map[string]json.RawMessage) {
	switch {
	case o.typename != "":
		t, _ := json.Marshal(o.typename)
		b.Write(t)
	case o.alias != "":
		if v, ok := row[o.alias]; ok {
			b.Write(v)
		} else {
			b.WriteString("null")
		}
	case o.keyField != "":
		if v, ok := keys[o.keyField]; ok {
			b.Write(v)
		} else {
			b.WriteString("null")
		}
	default:
		b.WriteByte('{')
		for i, s := range o.sub {
			if i > 0 {
				b.WriteByte(',')
			}
			k, _ := json.Marshal(s.key)
			b.Write(k)
			b.WriteByte(':')
			writeMember(b, s, row, keys)
		}
		b.WriteByte('}')
	}
}

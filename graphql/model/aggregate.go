package model

import (
	"github.com/dds-project/dds/schema"
)

// AggregateFunc names the members of <E>Aggregate and <E>AggregateGroup
// holding one aggregate function per field, with the type holding them.
var AggregateFuncs = []string{"countDistinct", "sum", "avg", "min", "max"}

// aggregateRoot declares <plural>Aggregate(where, groupBy) and its types
// (docs/graphql.md, Aggregates):
//
//	<E>Aggregate      { count, countDistinct {f}, sum {f}, avg {f}, min {f}, max {f}, groups(limit, offset) }
//	<E>AggregateGroup { key {f}, count, countDistinct {f}, ... }
//
// Each per-function type lists the fields that function takes; a function
// no field takes is left out.
func (g *gen) aggregateRoot(e *schema.Entity, n entityNames, rf RootField) {
	t := e.Name + "Aggregate"
	members, key := g.aggregateMembers(e)
	g.aggregateGroupInputs(e)
	var agg, group []string
	agg = append(agg, "  \"Records matching where.\"", "  count: Int!")
	group = append(group, "  \"The group's groupBy values.\"", "  key: "+t+"Key!", "  count: Int!")
	for _, fn := range AggregateFuncs {
		if len(members[fn]) == 0 {
			continue
		}
		tn := t + upperFirst(fn)
		g.typ("type", tn, "", members[fn])
		agg = append(agg, "  "+fn+": "+tn+"!")
		group = append(group, "  "+fn+": "+tn+"!")
	}
	agg = append(agg, "  \"One entry per distinct groupBy value (buckets applied), ordered by orderBy (default: the keys, null last), filtered by having.\"",
		"  groups(limit: Int, offset: Int, having: "+t+"Having, orderBy: ["+t+"OrderBy!]): ["+t+"Group!]!")
	g.typ("type", t+"Key", "", key)
	g.typ("type", t+"Group", "", group)
	g.typ("type", t, "", agg)
	g.root(&g.query, n.List+"Aggregate", with(rf, KindAggregate),
		"(where: "+n.Where+", \"Fields to group by (groups).\" groupBy: [String!], \"Date buckets of TIMESTAMP or DATE groupBy fields.\" buckets: [AggregateBucket!]): "+t+"!")
}

// aggregateGroupInputs declares the inputs of <E>Aggregate.groups (and,
// once per schema, AggregateBucket and DateBucket):
//
//	<E>AggregateHaving  { AND, OR, NOT, count: IntFilter, sum: { f: <filter> }, ... }
//	<E>AggregateOrderBy { field: "count" | "<function>.<field>" | a groupBy field, direction }
//
// A having member is a filter of the aggregate's type (a sum of an INTEGER
// field an IntFilter, an average a FloatFilter, a min or max the field's
// own filter).
func (g *gen) aggregateGroupInputs(e *schema.Entity) {
	if !g.defined["AggregateBucket"] {
		g.typ("enum", "DateBucket", "A date_trunc unit, in UTC.", []string{"  hour", "  day", "  week", "  month"})
		g.typ("input", "AggregateBucket", "Groups a TIMESTAMP or DATE groupBy field by a date_trunc unit, in UTC.",
			[]string{"  \"A TIMESTAMP or DATE field named in groupBy.\"", "  field: String!", "  unit: DateBucket!"})
	}
	t := e.Name + "Aggregate"
	fields := g.aggregated(e)
	members := map[string][]string{}
	for _, f := range fields {
		if f.List || f.Type == schema.JSON || f.Type == schema.Vector {
			continue
		}
		members["countDistinct"] = append(members["countDistinct"], "  "+f.Name+": IntFilter")
		if f.Type == schema.Integer || f.Type == schema.Number {
			members["sum"] = append(members["sum"], "  "+f.Name+": "+elemType(e.Name, f)+"Filter")
			members["avg"] = append(members["avg"], "  "+f.Name+": FloatFilter")
		}
		if f.Ordered() {
			members["min"] = append(members["min"], "  "+f.Name+": "+filterType(e.Name, f))
			members["max"] = append(members["max"], "  "+f.Name+": "+filterType(e.Name, f))
		}
	}
	having := []string{"  AND: [" + t + "Having!]", "  OR: [" + t + "Having!]", "  NOT: " + t + "Having", "  count: IntFilter"}
	for _, fn := range AggregateFuncs {
		if len(members[fn]) == 0 {
			continue
		}
		tn := t + upperFirst(fn) + "Having"
		g.typ("input", tn, "", members[fn])
		having = append(having, "  "+fn+": "+tn)
	}
	g.typ("input", t+"Having", "Conditions on a group's aggregates.", having)
	g.typ("input", t+"OrderBy", "", []string{
		"  \"count, <function>.<field> (e.g. sum.price), or a groupBy field (key.<field> when it is named count).\"",
		"  field: String!", "  direction: SortDirection = ASC"})
}

// aggregateMembers lists, per aggregate function, the members of its type
// (the fields it takes), and the members of the group key type.
func (g *gen) aggregateMembers(e *schema.Entity) (members map[string][]string, key []string) {
	fields := g.aggregated(e)
	members = map[string][]string{}
	for _, f := range fields {
		if f.List || f.Type == schema.JSON || f.Type == schema.Vector {
			continue
		}
		out := elemType(e.Name, f)
		if f.Type != schema.File {
			key = append(key, "  "+f.Name+": "+out)
		}
		members["countDistinct"] = append(members["countDistinct"], "  "+f.Name+": Int!")
		if f.Type == schema.Integer || f.Type == schema.Number {
			members["sum"] = append(members["sum"], "  "+f.Name+": "+out)
			members["avg"] = append(members["avg"], "  "+f.Name+": Float")
		}
		if f.Ordered() {
			members["min"] = append(members["min"], "  "+f.Name+": "+out)
			members["max"] = append(members["max"], "  "+f.Name+": "+out)
		}
	}
	return members, key
}

// RelatedAggregateType names the type of a relationship field's
// <field>Aggregate whose far entity is target.
func RelatedAggregateType(target string) string { return target + "RelatedAggregate" }

// relatedAggregate declares, once per far entity, the type of the
// relationship fields' <field>Aggregate(where) (docs/graphql.md,
// Aggregates over a relationship):
//
//	<T>RelatedAggregate { count, countDistinct {f}, sum {f}, avg {f}, min {f}, max {f} }
//
// sharing the per-function types of <T>Aggregate (declared by the far
// entity's aggregateRoot: a relationship field exists only where its far
// entity may be read).
func (g *gen) relatedAggregate(target *schema.Entity) string {
	tn := RelatedAggregateType(target.Name)
	if g.defined[tn] {
		return tn
	}
	members, _ := g.aggregateMembers(target)
	lines := []string{"  \"Related records matching where.\"", "  count: Int!"}
	for _, fn := range AggregateFuncs {
		if len(members[fn]) > 0 {
			lines = append(lines, "  "+fn+": "+target.Name+"Aggregate"+upperFirst(fn)+"!")
		}
	}
	g.typ("type", tn, "Aggregates over the "+target.Name+" records related to a record, in the record's statement.", lines)
	return tn
}

// aggregated lists the fields of e aggregates may name: createdAt,
// updatedAt and the fields the credential may read.
func (g *gen) aggregated(e *schema.Entity) []*schema.Field {
	fields := []*schema.Field{
		{Name: schema.ColCreatedAt, Type: schema.Timestamp, Required: true},
		{Name: schema.ColUpdatedAt, Type: schema.Timestamp, Required: true},
	}
	for i := range e.Fields {
		if g.readable(e, &e.Fields[i]) {
			fields = append(fields, &e.Fields[i])
		}
	}
	return fields
}

package openapi

import (
	"slices"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// distinctOnSchema is the query body's distinctOn: sortable fields other
// than id (which is unique), which must lead orderBy.
func distinctOnSchema(e *schema.Entity) *openapi3.Schema {
	fields := slices.DeleteFunc(sortable(e), func(v any) bool { return v == schema.ColID })
	s := array(val(&openapi3.Schema{Type: &openapi3.Types{"string"}, Enum: fields}))
	s.Description = "keep the first record (in the order) of each group of records with equal values of these fields; they must lead orderBy, which defaults to them"
	return s
}

// aggregatePath documents POST .../aggregate (docs/rest.md, Aggregates):
// its body and its result, whose measures are named by the request.
func (b *builder) aggregatePath(e *schema.Entity, base string) {
	n := e.Name
	fields := slices.DeleteFunc(sortable(e), func(v any) bool { return v == schema.ColID })
	field := &openapi3.Schema{Type: &openapi3.Types{"string"}, Description: "a field (or \"*\" for count)"}
	fn := openapi3.Schemas{}
	for _, f := range []string{"count", "countDistinct", "sum", "avg", "min", "max"} {
		fn[f] = val(field)
	}
	one := closed(object(fn))
	one.MinProps, one.MaxProps = 1, uptr(1)
	one.Description = "exactly one function: count (\"*\" or a field: its non-null values), countDistinct, sum and avg (INTEGER, NUMBER), min, max (sortable fields)"
	aggs := object(nil)
	aggs.AdditionalProperties = openapi3.AdditionalProperties{Schema: val(one)}
	aggs.Description = "alias → function; the alias names the value in each group and in having and orderBy"
	bucket := str("truncate a TIMESTAMP or DATE key (UTC)")
	bucket.Enum = []any{"hour", "day", "week", "month"}
	fieldName := str("a field to group by")
	fieldName.Enum = fields
	key := &openapi3.Schema{OneOf: openapi3.SchemaRefs{val(fieldName), val(closed(object(openapi3.Schemas{"field": val(fieldName), "bucket": val(bucket)}, "field")))}}
	limit := integer("groups per page")
	limit.Min, limit.Max, limit.Default = fptr(1), fptr(query.MaxLimit), query.DefaultLimit
	offset := integer("groups to skip")
	offset.Min, offset.Default = fptr(0), 0
	dir := str("")
	dir.Enum = []any{"ASC", "DESC"}
	having := object(nil)
	having.Description = "a filter over the aliases (same operators as where)"
	body := closed(object(openapi3.Schemas{
		"where":          ref(n + ".Filter"),
		"groupBy":        val(array(val(key))),
		"aggregates":     val(aggs),
		"having":         val(having),
		"orderBy":        val(withDesc(typed("string"), "an alias or a groupBy field, or an array of {field, direction}")),
		"orderDirection": val(dir),
		"limit":          val(limit),
		"offset":         val(offset),
	}, "aggregates"))
	b.schemas[n+".Aggregate"] = val(body)
	group := object(openapi3.Schemas{"key": val(withDesc(typed("object"), "the group's groupBy values by field ({} without groupBy)"))}, "key")
	group.AdditionalProperties = openapi3.AdditionalProperties{Schema: val(withDesc(&openapi3.Schema{}, "the value of each alias: an integer for count, countDistinct and the sum of an INTEGER, a number for avg, the field's type for min and max; null over no values"))}
	b.schemas[n+".AggregateResult"] = val(object(openapi3.Schemas{"groups": val(array(val(group)))}, "groups"))
	b.item(base + "/aggregate").Post = op{id: "aggregate" + n, summary: "Aggregate " + n + " records, grouped", scope: "entity:" + n + ":read", tag: n,
		body: jsonBody("The aggregation.", ref(n+".Aggregate")),
		ok:   map[int]*openapi3.ResponseRef{200: jsonResp("The groups.", ref(n+".AggregateResult"))}}.build()
}

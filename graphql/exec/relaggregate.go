package exec

import (
	"strconv"

	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/query"
)

// relAggregate adds to sel the aggregates a relationship field's
// <field>Aggregate(where) selects (query.RelAggregate: a correlated
// subquery in the record's own statement) and returns the field's shape:
// the record's member holds {"m0": value, ...}, one member per selected
// function and field; count and each function object are written from it.
func (x *execCtx) relAggregate(rf model.RelField, cf *cfield, args map[string]any, sel *query.Selection) (*jsonshape.OutField, error) {
	where, err := x.where(rf.Target, args["where"])
	if err != nil {
		return nil, err
	}
	ra := query.RelAggregate{Key: x.nextKey(), Relationship: rf.Rel.Name, Direction: rf.Dir, Where: where}
	add := func(fn query.AggFunc, field string) string {
		alias := "m" + strconv.Itoa(len(ra.Measures))
		for _, m := range ra.Measures { // the same measure selected twice (aliases) is computed once
			if m.Func == fn && m.Field == field {
				return m.Alias
			}
		}
		ra.Measures = append(ra.Measures, query.Measure{Alias: alias, Func: fn, Field: field, Path: string(fn) + "." + field})
		return alias
	}
	t := model.RelatedAggregateType(rf.Target.Name)
	sh := &jsonshape.Shape{}
	for _, c := range x.collect(cf.sel, t) {
		switch c.field.Name {
		case "__typename":
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Typename, Typename: t})
		case "count":
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: c.key, Src: add(query.Count, "*"), Kind: jsonshape.Scalar})
		default:
			fn := query.AggFunc(c.field.Name)
			ft := rf.Target.Name + "Aggregate" + upper(c.field.Name)
			sub := &jsonshape.Shape{}
			for _, fc := range x.collect(c.sel, ft) {
				if fc.field.Name == "__typename" {
					sub.Fields = append(sub.Fields, jsonshape.OutField{Key: fc.key, Kind: jsonshape.Typename, Typename: ft})
					continue
				}
				sub.Fields = append(sub.Fields, jsonshape.OutField{Key: fc.key, Src: add(fn, fc.field.Name), Kind: jsonshape.Scalar})
			}
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Self, Sub: sub})
		}
	}
	if len(ra.Measures) == 0 { // only __typename (or empty objects) selected: the object still comes from the record
		add(query.Count, "*")
	}
	sel.Aggregates = append(sel.Aggregates, ra)
	return &jsonshape.OutField{Key: cf.key, Src: ra.Key, Kind: jsonshape.Object, Sub: sh}, nil
}

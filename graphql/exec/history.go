package exec

import (
	"bytes"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// history resolves <one>History(id, first, after): a page of the record's
// versions, newest first, from records.Store.History (the same page as
// REST's, reshaped to the selection).
func (x *execCtx) history(e *schema.Entity, cf *cfield, args map[string]any) ([]byte, error) {
	first, hasFirst := operation.IntArg(args["first"])
	if hasFirst && (first < 1 || first > records.MaxHistoryLimit) {
		return nil, apperr.Field("first", "must be between 1 and %d", records.MaxHistoryLimit)
	}
	id, _ := args["id"].(string)
	after, _ := args["after"].(string)
	raw, err := x.e.store.History(x.ctx, x.sc, e.Name, id, first, after)
	if err != nil {
		return nil, err
	}
	pageT, versionT := model.HistoryTypes(e.Name)
	page := &jsonshape.Shape{}
	for _, c := range x.collect(cf.sel, pageT) {
		switch c.field.Name {
		case "__typename":
			page.Fields = append(page.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Typename, Typename: pageT})
		case "nextCursor":
			page.Fields = append(page.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Scalar, Src: "nextCursor"})
		case "items":
			v := &jsonshape.Shape{}
			for _, f := range x.collect(c.sel, versionT) {
				if f.field.Name == "__typename" {
					v.Fields = append(v.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Typename, Typename: versionT})
					continue
				}
				// id, op, at, keyId, userId, changed, record: the
				// members of records' version objects, by the same names.
				v.Fields = append(v.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Scalar, Src: f.field.Name})
			}
			page.Fields = append(page.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.List, Src: "items", Sub: v})
		}
	}
	var b bytes.Buffer
	if err := jsonshape.WriteObj(&b, page, raw); err != nil {
		return nil, apperr.Wrap(err, "reshape result")
	}
	return b.Bytes(), nil
}

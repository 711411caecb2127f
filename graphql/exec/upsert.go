package exec

import (
	"bytes"
	"encoding/json"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
)

// upsert runs upsert<E> and batchUpsert<E> through records.Store.Upsert:
// one INSERT ... ON CONFLICT ... DO UPDATE statement whose events say, per
// row, entity.created or entity.updated. An upsert may create and may
// update, so it needs both scopes.
func (x *execCtx) upsert(rf model.RootField, cf *cfield, args map[string]any) ([]byte, error) {
	e := rf.Entity
	for _, op := range []string{"create", "update"} {
		if err := x.p.Require("entity", e.Name, op); err != nil {
			return nil, err
		}
	}
	oc, _ := norm(args["onConflict"]).(map[string]any)
	field, _ := oc["field"].(string)
	var update []string
	if list, ok := oc["update"].([]any); ok {
		update = make([]string, 0, len(list))
		for _, v := range list {
			s, _ := v.(string)
			update = append(update, s)
		}
	}
	if rf.Kind == model.KindBatchUpsert {
		items, _ := norm(args["input"]).([]any)
		return x.batchResult(e, cf, func() (*records.BatchResult, error) {
			res, err := x.e.store.Upsert(x.ctx, x.sc, e.Name, records.Upsert{OnConflict: field, Update: update, Items: items})
			if err != nil {
				return nil, err
			}
			return res.BatchResult, nil
		})
	}
	var sel query.Selection
	sh, err := x.record(e, cf.sel, &sel)
	if err != nil {
		return nil, err
	}
	if readsMore(&sel) {
		if err := x.p.Require("entity", e.Name, "read"); err != nil {
			return nil, err
		}
	}
	in, _ := norm(args["input"]).(map[string]any)
	raw, _, err := x.e.store.UpsertOne(x.ctx, x.sc, e.Name, field, update, in)
	if err != nil {
		return nil, err
	}
	if readsMore(&sel) {
		var m struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, apperr.Wrap(err, "read result")
		}
		return x.byID(e, cf, m.ID)
	}
	var b bytes.Buffer
	if err := jsonshape.WriteObj(&b, sh, raw); err != nil {
		return nil, apperr.Wrap(err, "reshape result")
	}
	return b.Bytes(), nil
}

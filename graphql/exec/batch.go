package exec

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// batch runs batchCreate/batchUpdate/batchDelete through the records store
// (validate every item, then one atomic statement with its outbox events).
// A rejected batch is data, not an error: successful is empty and failed
// lists every problem, as in REST.
func (x *execCtx) batch(rf model.RootField, cf *cfield, args map[string]any) ([]byte, error) {
	e := rf.Entity
	op := map[model.RootKind]string{model.KindBatchCreate: "create", model.KindBatchUpdate: "update", model.KindBatchDelete: "delete"}[rf.Kind]
	if err := x.p.Require("entity", e.Name, op); err != nil {
		return nil, err
	}
	return x.batchResult(e, cf, func() (*records.BatchResult, error) {
		switch rf.Kind {
		case model.KindBatchCreate:
			items, _ := norm(args["input"]).([]any)
			return x.e.store.BatchCreate(x.ctx, x.sc, e.Name, items)
		case model.KindBatchUpdate:
			list, _ := norm(args["input"]).([]any)
			items := make([]records.BatchUpdateItem, len(list))
			for i, it := range list {
				m, _ := it.(map[string]any)
				data, _ := m["data"].(map[string]any)
				items[i] = records.BatchUpdateItem{ID: m["id"], Data: data, Raw: it}
			}
			return x.e.store.BatchUpdate(x.ctx, x.sc, e.Name, items)
		default:
			ids, _ := norm(args["ids"]).([]any)
			return x.e.store.BatchDelete(x.ctx, x.sc, e.Name, ids)
		}
	})
}

// batchResult checks the selection of an <E>BatchResult, runs the batch
// and writes its result.
func (x *execCtx) batchResult(e *schema.Entity, cf *cfield, run func() (*records.BatchResult, error)) ([]byte, error) {
	resT := e.Name + "BatchResult"
	var sel query.Selection
	type part struct {
		cf *cfield
		sh *jsonshape.Shape
	}
	var parts []part
	for _, c := range x.collect(cf.sel, resT) {
		p := part{cf: c}
		switch c.field.Name {
		case "successful":
			sh, err := x.record(e, c.sel, &sel)
			if err != nil {
				return nil, err
			}
			if len(sel.Nested) > 0 || len(sel.Aggregates) > 0 {
				return nil, apperr.New(apperr.BadRequest, "relationship fields are not available on batch results; query the records by id")
			}
			if len(sel.Files) > 0 {
				return nil, apperr.New(apperr.BadRequest, "file metadata fields are not available on batch results; query the records by id")
			}
			p.sh = sh
		case "failed":
			p.sh = x.failureShape(c)
		}
		parts = append(parts, p)
	}
	res, err := run()
	if err != nil {
		return nil, err
	}
	failed, err := json.Marshal(res.Failed)
	if err != nil {
		return nil, apperr.Wrap(err, "encode failures")
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, p := range parts {
		if i > 0 {
			b.WriteByte(',')
		}
		jsonshape.WriteKey(&b, p.cf.key)
		switch p.cf.field.Name {
		case "__typename":
			jsonshape.WriteString(&b, resT)
		case "successful":
			succ := []byte(res.Successful)
			if len(succ) == 0 {
				succ = []byte("[]")
			}
			if err := jsonshape.WriteList(&b, p.sh, succ); err != nil {
				return nil, apperr.Wrap(err, "reshape result")
			}
		case "failed":
			if err := jsonshape.WriteList(&b, p.sh, failed); err != nil {
				return nil, apperr.Wrap(err, "reshape result")
			}
		case "totalCount":
			b.WriteString(strconv.Itoa(res.TotalCount))
		case "successCount":
			b.WriteString(strconv.Itoa(res.SuccessCount))
		case "failureCount":
			b.WriteString(strconv.Itoa(res.FailureCount))
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func (x *execCtx) failureShape(cf *cfield) *jsonshape.Shape {
	sh := &jsonshape.Shape{}
	for _, f := range x.collect(cf.sel, "BatchFailure") {
		switch f.field.Name {
		case "__typename":
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Typename, Typename: "BatchFailure"})
		case "error":
			es := &jsonshape.Shape{}
			for _, ef := range x.collect(f.sel, "BatchError") {
				if ef.field.Name == "__typename" {
					es.Fields = append(es.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Typename, Typename: "BatchError"})
				} else {
					es.Fields = append(es.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Scalar, Src: ef.field.Name})
				}
			}
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Object, Src: "error", Sub: es})
		default:
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Scalar, Src: f.field.Name})
		}
	}
	return sh
}

// edge runs the relationship mutations. By-id mutations first find the
// edge's source (the store acts on edges of a record), then write.
func (x *execCtx) edge(rf model.RootField, cf *cfield, args map[string]any) ([]byte, error) {
	rel := rf.Rel
	op := map[model.RootKind]string{model.KindRelCreate: "create", model.KindRelUpdate: "update", model.KindRelDelete: "delete"}[rf.Kind]
	if err := x.p.Require("relationship", rel.Name, op); err != nil {
		return nil, err
	}
	props, _ := norm(args["properties"]).(map[string]any)
	var raw []byte
	var err error
	switch rf.Kind {
	case model.KindRelCreate:
		from, _ := args["from"].(string)
		to, _ := args["to"].(string)
		raw, err = x.e.store.CreateEdge(x.ctx, x.sc, rel.From, from, rel.Name, to, props)
	default:
		id, _ := args["id"].(string)
		source, serr := x.e.store.EdgeSource(x.ctx, x.sc, rel, id)
		if serr != nil {
			return nil, serr
		}
		if rf.Kind == model.KindRelUpdate {
			raw, err = x.e.store.UpdateEdgeByID(x.ctx, x.sc, rel.From, source, rel.Name, id, props)
		} else {
			raw, err = x.e.store.DeleteEdgeByID(x.ctx, x.sc, rel.From, source, rel.Name, id)
		}
	}
	if err != nil {
		return nil, err
	}
	if rf.Kind != model.KindRelCreate { // by-id writes answer {"items": [the edge]}
		ms, err := jsonshape.ObjectMembers(raw, nil)
		if err != nil {
			return nil, apperr.Wrap(err, "read result")
		}
		items, err := jsonshape.ArrayItems(jsonshape.Lookup(ms, "items"), nil)
		if err != nil || len(items) != 1 {
			return nil, apperr.Wrap(jsonshape.ErrBadJSON, "read result")
		}
		raw = items[0]
	}
	typ := "DeletedRelationship"
	if rf.Kind != model.KindRelDelete {
		typ = model.EdgeType(rel)
	}
	sh := x.edgeShape(rel, typ, cf.sel)
	var b bytes.Buffer
	if err := jsonshape.WriteObj(&b, sh, raw); err != nil {
		return nil, apperr.Wrap(err, "reshape result")
	}
	return b.Bytes(), nil
}

// edgeShape is the shape of an edge selection (a relationship mutation's
// result or a relationship event) of GraphQL type typ over an edge object
// as records and the outbox write it: {id, sourceId, targetId, createdAt,
// properties}.
func (x *execCtx) edgeShape(rel *schema.Relationship, typ string, set operation.SelectionSet) *jsonshape.Shape {
	sh := &jsonshape.Shape{}
	for _, f := range x.collect(set, typ) {
		src := map[string]string{"from": "sourceId", "to": "targetId"}[f.field.Name]
		if src == "" {
			src = f.field.Name
		}
		switch f.field.Name {
		case "__typename":
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Typename, Typename: typ})
		case "properties":
			ps := &jsonshape.Shape{}
			propsT := model.PropertiesType(rel)
			for _, pf := range x.collect(f.sel, propsT) {
				if pf.field.Name == "__typename" {
					ps.Fields = append(ps.Fields, jsonshape.OutField{Key: pf.key, Kind: jsonshape.Typename, Typename: propsT})
				} else {
					ps.Fields = append(ps.Fields, jsonshape.OutField{Key: pf.key, Kind: jsonshape.Scalar, Src: pf.field.Name})
				}
			}
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Object, Src: "properties", Sub: ps})
		default:
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: f.key, Kind: jsonshape.Scalar, Src: src})
		}
	}
	return sh
}

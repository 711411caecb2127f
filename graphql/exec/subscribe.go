package exec

import (
	"context"
	"fmt"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/graphql/protocol"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// Subscription is what a prepared subscription compiles to, once, when it
// is set up: the events its root field follows, and how the live feed
// writes each (its shape, the selection read per event, the filter).
type Subscription struct {
	// Key is the root field's response key.
	Key   string
	Scope *records.Scope
	// Name is the entity or relationship whose events it follows; Entity
	// is nil for relationship events.
	Name      string
	Entity    *schema.Entity
	EventType string
	Shape     *jsonshape.Shape
	// Sel is the record selection read per event when it needs more than
	// the event's record (relationship fields, file metadata); nil
	// otherwise.
	Sel *query.Selection
	// Match evaluates the where on an event's record; nil when there is
	// no where.
	Match *records.Match
	// After is the cursor to resume after ("": follow what is written
	// from now on).
	After string
	// Change is what a <singular>Changed frame writes, and Types the event
	// types it follows; nil for the other subscriptions (EventType).
	Change *ChangeShape
	Types  []string
}

// ChangeShape is the selection of a <singular>Changed frame's object.
type ChangeShape struct {
	Typename string
	Fields   []ChangeField
}

// ChangeField is one selected field of a change: Shape shapes a record.
type ChangeField struct {
	Key   string
	Kind  ChangeKind
	Shape *jsonshape.Shape
}

// ChangeKind says what a field of a change writes.
type ChangeKind uint8

// What the fields of a change write.
const (
	ChangeTypename ChangeKind = iota
	ChangeType
	ChangeCursor
	ChangeRecord
	ChangePrevious
)

// changeEventTypes map ChangeType values to event types.
var changeEventTypes = map[string]string{"CREATED": outbox.EntityCreated, "UPDATED": outbox.EntityUpdated, "DELETED": outbox.EntityDeleted}

// Subscribe compiles a prepared subscription for the scope's principal: exactly one
// root field, the scopes it needs, its where compiled once (a bad filter
// fails here, and events only bind the record). A refusal is a result to
// send as the subscription's error.
func (e *Executor) Subscribe(ctx context.Context, sc *records.Scope, pr *operation.Prepared) (*Subscription, *protocol.Result) {
	m := pr.Model
	if m.SubscriptionType() == "" {
		return nil, protocol.NewRequestError(apperr.Forbidden, "this credential may not read anything")
	}
	x := &execCtx{e: e, ctx: ctx, sc: sc, p: sc.Principal(), m: m, vars: pr.Vars}
	fields := x.collect(pr.Op.SelectionSet, m.SubscriptionType())
	if len(fields) != 1 {
		return nil, protocol.NewRequestError(apperr.BadRequest, "a subscription selects exactly one root field")
	}
	cf := fields[0]
	rf, ok := m.Root(cf.field.Name)
	if !ok {
		return nil, protocol.NewRequestError(apperr.BadRequest, "unknown subscription field "+cf.field.Name)
	}
	sub, err := x.subscriber(rf, cf)
	if err != nil {
		return nil, protocol.ErrorResult(ctx, err)
	}
	if after, ok := cf.field.ArgumentMap(x.vars)["after"].(string); ok {
		sub.After = after
	}
	return sub, nil
}

// subscriptionEvents maps a subscription root to the event type it follows.
var subscriptionEvents = map[model.RootKind]string{model.KindCreated: outbox.EntityCreated, model.KindUpdated: outbox.EntityUpdated, model.KindDeleted: outbox.EntityDeleted,
	model.KindRelCreated: outbox.RelationshipCreated, model.KindRelUpdated: outbox.RelationshipUpdated, model.KindRelDeleted: outbox.RelationshipDeleted}

func (x *execCtx) subscriber(rf model.RootField, cf *cfield) (*Subscription, error) {
	if rf.Rel != nil { // an edge event: the edge as written, no filter
		if err := x.p.Require("relationship", rf.Rel.Name, "read"); err != nil {
			return nil, err
		}
		sh := x.edgeShape(rf.Rel, model.EdgeType(rf.Rel), cf.sel)
		return &Subscription{Key: cf.key, Scope: x.sc, Name: rf.Rel.Name, EventType: subscriptionEvents[rf.Kind], Shape: sh}, nil
	}
	e := rf.Entity
	if err := x.p.Require("entity", e.Name, "read"); err != nil {
		return nil, err
	}
	where, err := x.where(e, cf.field.ArgumentMap(x.vars)["where"])
	if err != nil {
		return nil, err
	}
	var sel query.Selection
	var sub *Subscription
	if rf.Kind == model.KindChanged {
		if sub, err = x.changed(e, cf, &sel); err != nil {
			return nil, err
		}
	} else {
		sh, err := x.record(e, cf.sel, &sel)
		if err != nil {
			return nil, err
		}
		sub = &Subscription{Key: cf.key, Scope: x.sc, Name: e.Name, Entity: e, EventType: subscriptionEvents[rf.Kind], Shape: sh}
	}
	// The role's field list: frames are built from the event's record, so
	// a field the principal may not read must be refused here.
	for _, f := range sel.Fields {
		if !x.sc.Readable(e.Name, f) {
			return nil, &apperr.Error{Code: apperr.Forbidden,
				Message: "field " + f + " of " + e.Name + " may not be selected by the principal's roles (fields." + e.Name + ".read)",
				Details: []apperr.FieldError{{Field: cf.field.Name + "." + f, Message: "is not readable by the principal's roles"}}}
		}
	}
	if readsMore(&sel) {
		if rf.Kind == model.KindDeleted {
			return nil, apperr.New(apperr.BadRequest, "a deleted record has no relationships or files left to read: select its own fields in %s", cf.field.Name)
		}
		sub.Sel = &sel
	}
	if where != nil {
		// Compile once now: a bad filter fails the subscribe, and events
		// only bind the record ($1) to the prepared text.
		if sub.Match, err = records.CompileMatch(x.sc, e.Name, where); err != nil {
			return nil, err
		}
	}
	return sub, nil
}

// changed compiles the selection of a <singular>Changed field: record and
// previous share one record selection (sel), read per event when it
// needs more than the event's record.
func (x *execCtx) changed(e *schema.Entity, cf *cfield, sel *query.Selection) (*Subscription, error) {
	changeType := e.Name + "Change"
	ch := &ChangeShape{Typename: changeType}
	for _, f := range x.collect(cf.sel, changeType) {
		cfl := ChangeField{Key: f.key}
		switch f.field.Name {
		case "__typename":
			cfl.Kind = ChangeTypename
		case "type":
			cfl.Kind = ChangeType
		case "cursor":
			cfl.Kind = ChangeCursor
		case "record", "previous":
			cfl.Kind = ChangeRecord
			if f.field.Name == "previous" {
				cfl.Kind = ChangePrevious
			}
			sh, err := x.record(e, f.sel, sel)
			if err != nil {
				return nil, err
			}
			cfl.Shape = sh
		default:
			return nil, apperr.New(apperr.BadRequest, "unknown field %s of %s", f.field.Name, changeType)
		}
		ch.Fields = append(ch.Fields, cfl)
	}
	types := []string{outbox.EntityCreated, outbox.EntityUpdated, outbox.EntityDeleted}
	if v, ok := cf.field.ArgumentMap(x.vars)["types"].([]any); ok {
		types = types[:0]
		for _, t := range v {
			et, ok := changeEventTypes[fmt.Sprint(t)]
			if !ok {
				return nil, apperr.Field("types", "%v is not a ChangeType (CREATED, UPDATED, DELETED)", t)
			}
			types = append(types, et)
		}
	}
	return &Subscription{Key: cf.key, Scope: x.sc, Name: e.Name, Entity: e, Change: ch, Types: types}, nil
}

package exec

import (
	"bytes"
	"encoding/json"

	"github.com/google/uuid"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/graphql/jsonshape"
	"github.com/dds-project/dds/graphql/model"
	"github.com/dds-project/dds/graphql/operation"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
	"github.com/dds-project/dds/schema"
)

// MaxPage is the largest first/last of a connection (docs/graphql.md).
const MaxPage = 100

// resolveRoot writes the value of root field cf to b (on an error, what
// it wrote is for the caller to cut).
func (x *execCtx) resolveRoot(b *bytes.Buffer, root string, cf *cfield) error {
	if back, err := x.withDeleted(cf); err != nil {
		return err
	} else if back != nil {
		defer back()
	}
	rf, ok := x.m.Root(cf.field.Name)
	if ok && rf.Kind == model.KindList { // written straight into b: the value may be large
		if err := x.p.Require("entity", rf.Entity.Name, "read"); err != nil {
			return err
		}
		return x.list(b, rf.Entity, cf)
	}
	if ok && rf.Kind == model.KindOne { // the get by id: written straight into b, its one argument read without a map
		if err := x.p.Require("entity", rf.Entity.Name, "read"); err != nil {
			return err
		}
		id, _ := cf.field.Argument("id", x.vars).(string)
		return x.one(b, rf.Entity, cf, id)
	}
	v, err := x.resolveValue(root, cf)
	if err != nil {
		return err
	}
	b.Write(v)
	return nil
}

// resolveValue returns the value of root field cf (lists and gets by id aside).
func (x *execCtx) resolveValue(root string, cf *cfield) ([]byte, error) {
	switch cf.field.Name {
	case "__typename":
		return json.Marshal(root)
	case "__schema", "__type":
		return x.introspect(cf)
	}
	rf, ok := x.m.Root(cf.field.Name)
	if !ok {
		return nil, apperr.New(apperr.BadRequest, "unknown field %s", cf.field.Name)
	}
	if rf.Kind == model.KindNone {
		return []byte("null"), nil
	}
	args := cf.field.ArgumentMap(x.vars)
	e := rf.Entity
	switch rf.Kind {
	case model.KindCount, model.KindConnection, model.KindVectorSearch, model.KindAggregate, model.KindHistory:
		if err := x.p.Require("entity", e.Name, "read"); err != nil {
			return nil, err
		}
	}
	switch rf.Kind {
	case model.KindCount:
		where, err := x.where(e, args["where"])
		if err != nil {
			return nil, err
		}
		search, _ := args["search"].(string)
		return x.count(e.Name, where, search)
	case model.KindConnection:
		return x.connection(e, cf, args)
	case model.KindVectorSearch:
		return x.vectorSearchField(e, cf, args)
	case model.KindAggregate:
		return x.aggregateField(e, cf, args)
	case model.KindHistory:
		return x.history(e, cf, args)
	case model.KindCreate, model.KindUpdate, model.KindDelete, model.KindRestore:
		return x.mutate(rf, cf, args)
	case model.KindBatchCreate, model.KindBatchUpdate, model.KindBatchDelete:
		return x.batch(rf, cf, args)
	case model.KindUpsert, model.KindBatchUpsert:
		return x.upsert(rf, cf, args)
	case model.KindRelCreate, model.KindRelUpdate, model.KindRelDelete:
		return x.edge(rf, cf, args)
	}
	return nil, apperr.New(apperr.BadRequest, "%s is not available over this transport", cf.field.Name)
}

// list writes a list query's records to b (its arguments are read only
// when its statement is not kept).
func (x *execCtx) list(b *bytes.Buffer, e *schema.Entity, cf *cfield) error {
	l := query.List{Entity: e.Name}
	// The selection is built once, before the arguments (a kept flat
	// list's statement needs none of them); its error, though, comes after
	// theirs, as the arguments are the field's first part.
	sh, serr := x.recordOf(e, cf, &l.Select)
	// Postgres builds the response's own JSON when it can (exact.go): a
	// kept flat selection's members are built once, on its memo, and its
	// statement too when its arguments are literals.
	var kept *exactList
	var memo *records.Kept // the statement kept for a literal kept list
	exact := false
	if serr == nil && !x.e.noExact {
		if kept = x.flatOutput(e, cf, sh); kept != nil {
			sh, exact = kept.id, true
			if kept.literal {
				memo = &kept.st
			}
		}
	}
	plan := func() (query.List, error) {
		args := cf.field.ArgumentMap(x.vars)
		var err error
		if l.Where, err = x.where(e, args["where"]); err != nil {
			return l, err
		}
		l.Search, _ = args["search"].(string)
		l.Limit, _ = operation.IntArg(args["limit"])
		l.Offset, _ = operation.IntArg(args["offset"])
		if l.OrderBy, err = orderBy(args["orderBy"]); err != nil {
			return l, err
		}
		l.DistinctOn = stringList(args["distinctOn"])
		if serr != nil {
			return l, serr
		}
		if kept != nil {
			l.Select.Output = kept.out
		} else if !x.e.noExact {
			if id := exactOutput(sh, &l.Select); id != nil {
				sh, exact = id, true
			}
		}
		return l, nil
	}
	// plan runs (and sets sh and exact) before the items are written,
	// unless the kept statement serves.
	return x.runList(memo, e.Name, plan, func(raw []byte) error {
		return listWriter(b, sh, exact)(raw)
	})
}

// listWriter returns the function writing a list statement's items to b
// with shape sh, as Postgres wrote them when exact (the statement was
// compiled with sh's Output).
func listWriter(b *bytes.Buffer, sh *jsonshape.Shape, exact bool) func(raw []byte) error {
	// Written from the driver's bytes as they stand: {"items": [...]} is
	// not split first, nor copied out of the driver.
	return func(raw []byte) error {
		i, err := jsonshape.MemberAt(raw, "items")
		if err != nil {
			return apperr.Wrap(err, "read result")
		}
		// The response is about as long as Postgres' JSON (keys renamed,
		// whitespace between items dropped): grow once.
		b.Grow(len(raw) + len(raw)/8)
		if i < 0 {
			b.WriteString("[]")
			return nil
		}
		if exact && jsonshape.WriteExactItems(b, raw, i) {
			return nil
		}
		end, err := jsonshape.WriteListAt(b, sh, raw, i)
		if err == nil {
			if end = jsonshape.SkipWS(raw, end); end >= len(raw) || raw[end] != ',' && raw[end] != '}' {
				err = jsonshape.ErrBadJSON
			}
		}
		if err != nil {
			return apperr.Wrap(err, "reshape result")
		}
		return nil
	}
}

// one writes the record id names to b (null when there is none).
func (x *execCtx) one(b *bytes.Buffer, e *schema.Entity, cf *cfield, id string) error {
	if !isUUID(id) {
		// An id that is not a UUID names no record: the field is null, as for an absent id
		// (not an error, so the rest of the query still resolves).
		b.WriteString("null")
		return nil
	}
	return x.writeByID(b, e, cf, id)
}

// isUUID reports whether id is a well-formed UUID, the only form a record id takes.
func isUUID(id string) bool {
	_, err := uuid.Parse(id)
	return err == nil
}

// byID reads one record with a selection (null when absent): a kept flat
// selection through its own statement, which builds the response's object
// (exact.go); one with relationship lists or aggregates through a get
// compiled to build it too, when it can (exact.go's exactable); any other
// through the records store's read by id, the statement REST's GET runs
// (its text is kept per entity and selection, so only the id is bound per
// request).
func (x *execCtx) byID(e *schema.Entity, cf *cfield, id string) ([]byte, error) {
	var b bytes.Buffer
	if err := x.writeByID(&b, e, cf, id); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// writeByID is byID writing to b (on an error, what it wrote is for the
// caller to cut).
func (x *execCtx) writeByID(b *bytes.Buffer, e *schema.Entity, cf *cfield, id string) error {
	var sel query.Selection
	sh, err := x.recordOf(e, cf, &sel)
	if err != nil {
		return err
	}
	if l := x.exactGet(e, cf, sh); l != nil {
		if ran, err := x.writeExactGet(b, e, l, id); ran {
			return err
		}
	}
	// A selection with relationship lists or aggregates is compiled per
	// request (records keeps no text for it): compiled with Output when
	// Postgres can build the response's object (exact.go), as a list of
	// the same selection is.
	exact := false
	if !x.e.noExact && (len(sel.Nested) > 0 || len(sel.Aggregates) > 0) {
		if idShape := exactOutput(sh, &sel); idShape != nil {
			sh, exact = idShape, true
		}
	}
	raw, err := x.e.store.Get(x.ctx, x.sc, e.Name, id, sel)
	if err != nil {
		if apperr.As(err).Code == apperr.NotFound {
			b.WriteString("null")
			return nil
		}
		return err
	}
	if exact && jsonshape.WriteExactObject(b, raw) {
		return nil
	}
	b.Grow(len(raw) + len(raw)/4 + 16) // renamed keys and __typename may add a little
	if err := jsonshape.WriteKept(b, sh, raw); err != nil {
		return apperr.Wrap(err, "reshape result")
	}
	return nil
}

func (x *execCtx) connection(e *schema.Entity, cf *cfield, args map[string]any) ([]byte, error) {
	first, hasFirst := operation.IntArg(args["first"])
	last, hasLast := operation.IntArg(args["last"])
	after, _ := args["after"].(string)
	before, _ := args["before"].(string)
	switch {
	case hasFirst && hasLast:
		return nil, apperr.New(apperr.Validation, "first and last cannot be used together")
	case hasFirst && (first < 0 || first > MaxPage):
		return nil, apperr.Field("first", "must be between 0 and %d", MaxPage)
	case hasLast && (last < 0 || last > MaxPage):
		return nil, apperr.Field("last", "must be between 0 and %d", MaxPage)
	case after != "" && before != "":
		return nil, apperr.New(apperr.Validation, "after and before cannot be used together")
	case hasFirst && before != "":
		return nil, apperr.New(apperr.Validation, "before pages backward: use it with last")
	case hasLast && after != "":
		return nil, apperr.New(apperr.Validation, "after pages forward: use it with first")
	}
	backward := hasLast || before != ""
	n := query.DefaultLimit
	if hasFirst {
		n = first
	} else if hasLast {
		n = last
	}
	l := query.List{Entity: e.Name}
	var err error
	if l.Where, err = x.where(e, args["where"]); err != nil {
		return nil, err
	}
	l.Search, _ = args["search"].(string)
	order, err := orderBy(args["orderBy"])
	if err != nil {
		return nil, err
	}
	keys, err := x.orderKeys(e.Name, order)
	if err != nil {
		return nil, err
	}
	ck := newCursorKeys(keys) // cursor.go
	l.OrderBy = keys

	// Selection: edges' nodes, plus the key columns cursors are made of.
	connT, edgeT := e.Name+"Connection", e.Name+"Edge"
	l.Select.Fields = []string{}
	conn := x.collect(cf.sel, connT)
	var wantCount bool
	edges := map[string]*jsonshape.Shape{}
	for _, c := range conn {
		switch c.field.Name {
		case "totalCount":
			wantCount = true
		case "edges":
			sh := &jsonshape.Shape{}
			for _, ef := range x.collect(c.sel, edgeT) {
				switch ef.field.Name {
				case "__typename":
					sh.Fields = append(sh.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Typename, Typename: edgeT})
				case "cursor":
					sh.Fields = append(sh.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Scalar, Src: "\x00cursor"})
				case "node":
					node, err := x.record(e, ef.sel, &l.Select)
					if err != nil {
						return nil, err
					}
					sh.Fields = append(sh.Fields, jsonshape.OutField{Key: ef.key, Kind: jsonshape.Self, Sub: node})
				}
			}
			edges[c.key] = sh
		}
	}
	for _, k := range keys {
		addField(&l.Select, k.Field)
	}
	l.IncludeCount = wantCount
	l.Limit = n + 1
	reversed := false
	switch {
	case after != "":
		vals, err := ck.decode(after, "after")
		if err != nil {
			return nil, err
		}
		l.Seek = &query.Seek{Values: vals}
	case before != "":
		vals, err := ck.decode(before, "before")
		if err != nil {
			return nil, err
		}
		l.Seek = &query.Seek{Values: vals, Backward: true}
	case backward: // last n of the whole set: read the reversed order
		rev := make([]query.Order, len(keys))
		for i, k := range keys {
			rev[i] = query.Order{Field: k.Field, Desc: !k.Desc}
		}
		l.OrderBy = rev
		reversed = true
	}
	if n == 0 {
		l.Limit = 1
	}
	raw, err := x.listRaw(l)
	if err != nil {
		return nil, err
	}
	ms, err := jsonshape.ObjectMembers(raw, nil)
	if err != nil {
		return nil, apperr.Wrap(err, "read result")
	}
	items, err := jsonshape.ArrayItems(jsonshape.Lookup(ms, "items"), nil)
	if err != nil {
		return nil, apperr.Wrap(err, "read result")
	}
	more := len(items) > n
	if reversed {
		if more {
			items = items[:n]
		}
		for i, j := 0, len(items)-1; i < j; i, j = i+1, j-1 {
			items[i], items[j] = items[j], items[i]
		}
	} else if more {
		if backward {
			items = items[len(items)-n:]
		} else {
			items = items[:n]
		}
	}
	var hasNext, hasPrev bool
	if backward {
		hasPrev, hasNext = more, before != ""
	} else {
		hasNext, hasPrev = more, after != ""
	}
	// Only the cursors the response writes are made (an edge's cursor,
	// pageInfo's startCursor and endCursor).
	cursors := make([]string, len(items))
	cursorAt := func(i int) (string, error) {
		if cursors[i] == "" {
			c, err := ck.encode(items[i])
			if err != nil {
				return "", apperr.Wrap(err, "make cursor")
			}
			cursors[i] = c
		}
		return cursors[i], nil
	}

	var b bytes.Buffer
	b.WriteByte('{')
	for i, c := range conn {
		if i > 0 {
			b.WriteByte(',')
		}
		jsonshape.WriteKey(&b, c.key)
		switch c.field.Name {
		case "__typename":
			jsonshape.WriteString(&b, connT)
		case "totalCount":
			if v := jsonshape.Lookup(ms, "count"); v != nil {
				b.Write(v)
			} else {
				b.WriteString("0")
			}
		case "edges":
			sh := edges[c.key]
			b.WriteByte('[')
			for j, it := range items {
				if j > 0 {
					b.WriteByte(',')
				}
				b.WriteByte('{')
				for k, f := range sh.Fields {
					if k > 0 {
						b.WriteByte(',')
					}
					jsonshape.WriteKey(&b, f.Key)
					switch f.Kind {
					case jsonshape.Typename:
						jsonshape.WriteString(&b, f.Typename)
					case jsonshape.Scalar:
						c, err := cursorAt(j)
						if err != nil {
							return nil, err
						}
						jsonshape.WriteString(&b, c)
					case jsonshape.Self:
						if err := jsonshape.WriteObj(&b, f.Sub, it); err != nil {
							return nil, apperr.Wrap(err, "reshape result")
						}
					}
				}
				b.WriteByte('}')
			}
			b.WriteByte(']')
		case "pageInfo":
			b.WriteByte('{')
			for k, pf := range x.collect(c.sel, "PageInfo") {
				if k > 0 {
					b.WriteByte(',')
				}
				jsonshape.WriteKey(&b, pf.key)
				switch pf.field.Name {
				case "__typename":
					jsonshape.WriteString(&b, "PageInfo")
				case "hasNextPage":
					b.WriteString(boolJSON(hasNext))
				case "hasPreviousPage":
					b.WriteString(boolJSON(hasPrev))
				case "startCursor", "endCursor":
					if len(items) == 0 {
						b.WriteString("null")
						break
					}
					i := 0
					if pf.field.Name == "endCursor" {
						i = len(items) - 1
					}
					c, err := cursorAt(i)
					if err != nil {
						return nil, err
					}
					jsonshape.WriteString(&b, c)
				}
			}
			b.WriteByte('}')
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func boolJSON(v bool) string {
	if v {
		return "true"
	}
	return "false"
}

func (x *execCtx) vectorSearchField(e *schema.Entity, cf *cfield, args map[string]any) ([]byte, error) {
	in, _ := args["input"].(map[string]any)
	v := query.VectorSearch{Entity: e.Name}
	v.Field, _ = in["field"].(string)
	vec, _ := norm(in["vector"]).([]any)
	v.Vector = vec
	v.TopK, _ = operation.IntArg(in["topK"])
	if ef, ok := operation.IntArg(in["efSearch"]); ok {
		if ef < 1 {
			return nil, apperr.Field("efSearch", "must be between topK and %d", query.MaxEfSearch)
		}
		v.EfSearch = ef
	}
	var err error
	if v.Where, err = x.where(e, in["where"]); err != nil {
		return nil, err
	}
	resT := e.Name + "VectorSearchResult"
	sh := &jsonshape.Shape{}
	for _, c := range x.collect(cf.sel, resT) {
		switch c.field.Name {
		case "__typename":
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Typename, Typename: resT})
		case "score":
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Scalar, Src: "score"})
		case "data":
			d, err := x.record(e, c.sel, &v.Select)
			if err != nil {
				return nil, err
			}
			sh.Fields = append(sh.Fields, jsonshape.OutField{Key: c.key, Kind: jsonshape.Object, Src: "data", Sub: d})
		}
	}
	if v.Select.Fields == nil {
		v.Select.Fields = []string{}
	}
	raw, err := x.vectorSearch(v)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := jsonshape.WriteList(&b, sh, raw); err != nil {
		return nil, apperr.Wrap(err, "reshape result")
	}
	return b.Bytes(), nil
}

// mutate runs create/update/delete through records.Store (validation and
// the outbox event in the same statement as the write).
func (x *execCtx) mutate(rf model.RootField, cf *cfield, args map[string]any) ([]byte, error) {
	e := rf.Entity
	op := map[model.RootKind]string{model.KindCreate: "create", model.KindUpdate: "update", model.KindDelete: "delete", model.KindRestore: "delete"}[rf.Kind]
	if err := x.p.Require("entity", e.Name, op); err != nil {
		return nil, err
	}
	var sel query.Selection
	sh, err := x.record(e, cf.sel, &sel)
	if err != nil {
		return nil, err
	}
	if readsMore(&sel) { // reading related records or file metadata needs the entity read scope
		if err := x.p.Require("entity", e.Name, "read"); err != nil {
			return nil, err
		}
	}
	var raw []byte
	switch rf.Kind {
	case model.KindCreate:
		in, _ := norm(args["input"]).(map[string]any)
		raw, err = x.e.store.Create(x.ctx, x.sc, e.Name, in)
	case model.KindUpdate:
		in, _ := norm(args["input"]).(map[string]any)
		id, _ := args["id"].(string)
		raw, err = x.e.store.Update(x.ctx, x.sc, e.Name, id, in, records.Patch)
	case model.KindRestore:
		id, _ := args["id"].(string)
		raw, err = x.e.store.Restore(x.ctx, x.sc, e.Name, id)
	case model.KindDelete:
		id, _ := args["id"].(string)
		if _, perr := uuid.Parse(id); perr != nil {
			return nil, apperr.New(apperr.NotFound, "%s %q not found", e.Name, id)
		}
		if !readsMore(&sel) {
			// One statement: the delete returns the record it removed.
			raw, err = x.e.store.DeleteReturning(x.ctx, x.sc, e.Name, id)
			break
		}
		// Nested selections need the relationships (and files) as they
		// were: read them with the selection, then delete.
		out, rerr := x.byID(e, cf, id)
		if rerr != nil {
			return nil, rerr
		}
		if string(out) == "null" {
			return nil, apperr.New(apperr.NotFound, "%s %q not found", e.Name, id)
		}
		if err := x.e.store.Delete(x.ctx, x.sc, e.Name, id); err != nil {
			return nil, err
		}
		return out, nil
	}
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

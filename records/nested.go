package records

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jmoiron/sqlx"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/db"
	"github.com/dds-project/dds/outbox"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/schema"
)

// Nested writes (docs/rest.md, Nested writes). A create (single or batch)
// may carry, under a relationship field of its entity,
//
//	{"connect": [{"id", "properties"?}], "create": [{...fields, "properties"?}]}
//
// to link existing records and create new ones linked to the new record.
// A relationship field is the relationship's fromField on its source
// entity, its toField on its target entity, or (REST) its name. Every part
// is validated first, each failure naming its path
// ("categories.create[2].name", "categories.connect[0].id"); then every
// row, every edge and every event (entity.created for each record,
// relationship.created for each edge, as the relationship API writes) is
// one statement: one data-modifying CTE per entity's new records and per
// relationship's new edges, whose foreign keys Postgres checks at the end
// of the statement. So it all commits together or not at all. A connect
// id that names no record, or a soft-deleted one, fails that statement on
// the edge's foreign key; the ids are then looked up to name the missing
// one.
//
// Scopes: the relationship's create scope (as POST .../relationships
// requires) and, for nested creates, the far entity's create scope.

// nestedKeys reports whether input has a member that is not a field of e
// and either names a relationship field of e or holds an object: a nested
// write (or an attempt at one, whose relationship must then be named in
// the error). It runs only for inputs Prepare refused, so plain creates
// never pay for it.
func nestedKeys(def *schema.Definition, e *schema.Entity, input map[string]any) bool {
	var rels map[string]relEnd
	for k, v := range input {
		if _, isField := e.Field(k); isField || schema.IsReserved(k) {
			continue
		}
		if _, ok := v.(map[string]any); ok {
			return true
		}
		if rels == nil {
			rels = relFields(def, e)
		}
		if _, ok := rels[k]; ok {
			return true
		}
	}
	return false
}

// relEnd is a relationship field of an entity: the relationship, and
// whether the entity is its source (edges go out to the far records).
type relEnd struct {
	rel *schema.Relationship
	out bool
	far *schema.Entity
}

// relFields maps the relationship fields of e to their ends: fromField on
// the source, toField on the target, and the relationship's name (out
// where e is the source).
func relFields(def *schema.Definition, e *schema.Entity) map[string]relEnd {
	m := map[string]relEnd{}
	for i := range def.Relationships {
		r := &def.Relationships[i]
		from, _ := def.Entity(r.From)
		to, _ := def.Entity(r.To)
		if from == nil || to == nil {
			continue
		}
		if r.To == e.Name && r.ToField != "" {
			m[r.ToField] = relEnd{rel: r, out: false, far: from}
		}
		if r.To == e.Name {
			if _, ok := m[r.Name]; !ok {
				m[r.Name] = relEnd{rel: r, out: false, far: from}
			}
		}
		if r.From == e.Name {
			if r.FromField != "" {
				m[r.FromField] = relEnd{rel: r, out: true, far: to}
			}
			m[r.Name] = relEnd{rel: r, out: true, far: to}
		}
	}
	return m
}

// nestedPlan is the validated rows and edges of a create with nested
// writes, for one or more parent items.
type nestedPlan struct {
	e       *schema.Entity
	parents []Row
	ids     []string // the parents' new ids, in item order
	creates []*createGroup
	byFar   map[string]*createGroup
	edges   []*edgeGroup
	byRel   map[string]*edgeGroup
	// connects are the connect ids per far entity, with the item and path
	// of each, to name a missing one.
	connects map[string][]connectRef
	files    []fileRef
}

type createGroup struct {
	e    *schema.Entity
	ids  []string
	rows []Row
	refs []connectRef // each row's item and path (id: its new id)
}

type edgeGroup struct {
	rel                  *schema.Relationship
	ids, src, tgt, props []string
	// conn marks each edge's connected (existing) end: "s" or "t", or ""
	// when both ends are created by the statement. A connected end must be
	// a live record (soft delete): see liveEnd.
	conn []string
}

type connectRef struct {
	item int
	path string
	id   string
	// source: the connected record is the edge's source (the new record
	// its target), so under rules it must pass update.where too.
	source bool
}

type fileRef struct {
	item int
	path string // the record's path ("" for the parent, "categories.create[0]")
	row  Row
}

// itemErrs collects the field errors of one item.
type itemErrs []apperr.FieldError

func (ie *itemErrs) add(path, format string, args ...any) {
	*ie = append(*ie, apperr.FieldError{Field: path, Message: fmt.Sprintf(format, args...)})
}

// addPrefixed adds an error's field details under prefix.
func (ie *itemErrs) addPrefixed(prefix string, err error) {
	ae := apperr.As(err)
	if len(ae.Details) == 0 {
		*ie = append(*ie, apperr.FieldError{Field: strings.TrimSuffix(prefix, "."), Message: ae.Message})
		return
	}
	for _, d := range ae.Details {
		*ie = append(*ie, apperr.FieldError{Field: prefix + d.Field, Message: d.Message})
	}
}

func newNestedPlan(e *schema.Entity) *nestedPlan {
	return &nestedPlan{e: e, byFar: map[string]*createGroup{}, byRel: map[string]*edgeGroup{}, connects: map[string][]connectRef{}}
}

// add validates one parent item and adds its rows and edges; the item's
// problems are returned (nil: none). A scope the principal lacks is an
// error for the whole request.
func (p *nestedPlan) add(sc *Scope, rels map[string]relEnd, item int, input map[string]any) (itemErrs, error) {
	var errs itemErrs
	plain := make(map[string]any, len(input))
	nested := map[string]any{}
	for k, v := range input {
		if _, isField := p.e.Field(k); isField || schema.IsReserved(k) {
			plain[k] = v
			continue
		}
		if _, isRel := rels[k]; isRel {
			nested[k] = v
			continue
		}
		if _, isObj := v.(map[string]any); isObj {
			errs.add(k, "%s has no field or relationship %q (relationship fields: %s)", p.e.Name, k, relNames(rels))
			continue
		}
		plain[k] = v // Prepare reports the unknown field
	}
	row, ferrs := Prepare(p.e, plain, Create)
	errs = append(errs, ferrs...)
	id := uuid.Must(uuid.NewV7()).String()
	p.parents = append(p.parents, row)
	p.ids = append(p.ids, id)
	if len(row.Files) > 0 {
		p.files = append(p.files, fileRef{item: item, row: row})
	}
	keys := make([]string, 0, len(nested))
	for k := range nested {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		end := rels[k]
		if err := sc.principal.Require("relationship", end.rel.Name, "create"); err != nil {
			return nil, err
		}
		spec, ok := nested[k].(map[string]any)
		if !ok {
			errs.add(k, `must be an object {"connect": [...], "create": [...]}`)
			continue
		}
		for m := range spec {
			if m != "connect" && m != "create" {
				errs.add(k+"."+m, "unknown member (a nested write has connect and create)")
			}
		}
		edge := func(farID, props string, connect bool) {
			g := p.byRel[end.rel.Name]
			if g == nil {
				g = &edgeGroup{rel: end.rel}
				p.byRel[end.rel.Name] = g
				p.edges = append(p.edges, g)
			}
			src, tgt, conn := id, farID, "t"
			if !end.out {
				src, tgt, conn = farID, id, "s"
			}
			if !connect {
				conn = ""
			}
			g.ids = append(g.ids, uuid.Must(uuid.NewV7()).String())
			g.src, g.tgt, g.props = append(g.src, src), append(g.tgt, tgt), append(g.props, props)
			g.conn = append(g.conn, conn)
		}
		if v, ok := spec["connect"]; ok {
			list, ok := v.([]any)
			if !ok {
				errs.add(k+".connect", "must be an array of {\"id\", \"properties\"?}")
			}
			for j, it := range list {
				path := fmt.Sprintf("%s.connect[%d]", k, j)
				obj, ok := it.(map[string]any)
				if !ok {
					errs.add(path, "must be an object {\"id\", \"properties\"?}")
					continue
				}
				for m := range obj {
					if m != "id" && m != "properties" {
						errs.add(path+"."+m, "unknown member (a connect item has id and properties)")
					}
				}
				sid, _ := obj["id"].(string)
				u, err := uuid.Parse(sid)
				if err != nil {
					errs.add(path+".id", "must be the id of a %s (a UUID)", end.far.Name)
					continue
				}
				props, perr := edgeProperties(end.rel, obj["properties"])
				if perr != nil {
					errs.addPrefixed(path+".", perr)
					continue
				}
				p.connects[end.far.Name] = append(p.connects[end.far.Name], connectRef{item: item, path: path + ".id", id: u.String(), source: !end.out})
				edge(u.String(), props, true)
			}
		}
		if v, ok := spec["create"]; ok {
			if err := sc.principal.Require("entity", end.far.Name, "create"); err != nil {
				return nil, err
			}
			list, ok := v.([]any)
			if !ok {
				errs.add(k+".create", "must be an array of objects of %s fields", end.far.Name)
			}
			_, farHasProps := end.far.Field("properties")
			for j, it := range list {
				path := fmt.Sprintf("%s.create[%d]", k, j)
				obj, ok := it.(map[string]any)
				if !ok {
					errs.add(path, "must be an object of %s fields", end.far.Name)
					continue
				}
				var rawProps any
				if !farHasProps {
					if pv, has := obj["properties"]; has {
						rawProps = pv
						obj = without(obj, "properties")
					}
				}
				obj, rerr := sc.createRules(end.far, obj) // rulewrites.go
				if rerr != nil {
					errs.addPrefixed(path+".", rerr)
					continue
				}
				frow, ferrs := Prepare(end.far, obj, Create)
				for _, fe := range ferrs {
					errs.add(path+"."+fe.Field, "%s", fe.Message)
				}
				props, perr := edgeProperties(end.rel, rawProps)
				if perr != nil {
					errs.addPrefixed(path+".", perr)
				}
				if len(ferrs) > 0 || perr != nil {
					continue
				}
				g := p.byFar[end.far.Name]
				if g == nil {
					g = &createGroup{e: end.far}
					p.byFar[end.far.Name] = g
					p.creates = append(p.creates, g)
				}
				fid := uuid.Must(uuid.NewV7()).String()
				g.ids, g.rows = append(g.ids, fid), append(g.rows, frow)
				g.refs = append(g.refs, connectRef{item: item, path: path, id: fid})
				if len(frow.Files) > 0 {
					p.files = append(p.files, fileRef{item: item, path: path + ".", row: frow})
				}
				edge(fid, props, false)
			}
		}
	}
	return errs, nil
}

// edgeProperties validates a nested edge's properties (absent: none, and
// the relationship's defaults and required properties apply).
func edgeProperties(rel *schema.Relationship, v any) (string, error) {
	var props map[string]any
	if v != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return "", apperr.Field("properties", "must be an object")
		}
		props = m
	}
	pj, _, err := prepareProperties(rel, props, true)
	return pj, err
}

func without(m map[string]any, key string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

func relNames(rels map[string]relEnd) string {
	if len(rels) == 0 {
		return "none"
	}
	names := make([]string, 0, len(rels))
	for k := range rels {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// sql renders the plan's one statement: the far records to create, the
// parents, the edges, each with its events; it returns the parents as a
// JSON array in item order and the event ids.
func (p *nestedPlan) sql(sc *Scope) (string, []any, error) {
	var a query.Args
	var ctes, events []string
	n := 0
	for _, g := range p.creates {
		w := fmt.Sprintf("w%d", n)
		ins, err := insertCTE(sc, g.e, &a, w, g.ids, g.rows)
		if err != nil {
			return "", nil, err
		}
		ctes = append(ctes, ins, fmt.Sprintf("e%d AS (%s)", n, outbox.InsertCTE(&a, sc.Origin(), outbox.EntityCreated, g.e.Name, w)))
		events = append(events, fmt.Sprintf("SELECT id FROM e%d", n))
		n++
	}
	ins, err := insertCTE(sc, p.e, &a, "w", p.ids, p.parents)
	if err != nil {
		return "", nil, err
	}
	ctes = append(ctes, ins, fmt.Sprintf("e%d AS (%s)", n, outbox.InsertCTE(&a, sc.Origin(), outbox.EntityCreated, p.e.Name, "w")))
	events = append(events, fmt.Sprintf("SELECT id FROM e%d", n))
	n++
	for _, g := range p.edges {
		x := fmt.Sprintf("x%d", n)
		src, tgt, conn := "u.s::uuid", "u.t::uuid", ""
		// A connected end must be live and, under rules, one the
		// principal may link (rulewrites.go: edgeEnds).
		if slices.Contains(g.conn, "s") {
			live := sc.compiler.Live(g.rel.From, "f")
			r, err := sc.edgeSourceRule(g.rel, "f", &a)
			if err != nil {
				return "", nil, err
			}
			if live = andLive(live, r); live != "TRUE" {
				src, conn = liveEnd(sc, g.rel.From, "s", strings.TrimPrefix(live, "TRUE AND ")), ", "+a.Add(g.conn, "text[]")
			}
		}
		if slices.Contains(g.conn, "t") {
			live := andLive(sc.compiler.Live(g.rel.To, "f"), sc.compiler.ReadRule(g.rel.To, "f", &a))
			if live != "TRUE" {
				tgt = liveEnd(sc, g.rel.To, "t", strings.TrimPrefix(live, "TRUE AND "))
				if conn == "" {
					conn = ", " + a.Add(g.conn, "text[]")
				}
			}
		}
		cols := "i, s, t, p, ord"
		if conn != "" {
			cols = "i, s, t, p, c, ord"
		}
		ctes = append(ctes, fmt.Sprintf(`%s AS (INSERT INTO %s ("id", "source_id", "target_id", "properties")
  SELECT u.i::uuid, %s, %s, u.p::jsonb FROM unnest(%s, %s, %s, %s%s) WITH ORDINALITY AS u(%s) ORDER BY u.ord RETURNING *)`,
			x, sc.compiler.Table(schema.RelTable(g.rel)), src, tgt, a.Add(g.ids, "text[]"), a.Add(g.src, "text[]"), a.Add(g.tgt, "text[]"), a.Add(g.props, "text[]"), conn, cols),
			fmt.Sprintf("e%d AS (%s)", n, outbox.InsertEdgeCTE(&a, sc.Origin(), outbox.RelationshipCreated, g.rel.Name, g.rel.From, g.rel.To, x)))
		events = append(events, fmt.Sprintf("SELECT id FROM e%d", n))
		n++
	}
	q := fmt.Sprintf("WITH %s\nSELECT (SELECT count(*) FROM w), (SELECT coalesce(json_agg(w ORDER BY w.\"id\"), '[]'::json) FROM w), (SELECT string_agg(id::text, ',') FROM (%s) ev)",
		strings.Join(ctes, ",\n"), strings.Join(events, " UNION ALL "))
	return q, a.List(), nil
}

// liveEnd is the SQL of an edge's end u.<col> (of entity) that is, where
// u.c = col, a connected record: its id when it is live, else the nil
// UUID, which no record has, so the edge fails its foreign key exactly as
// a connect naming no record does, and missingConnects (which looks for
// live records) names its path. A soft-deleted record cannot be
// connected: it is as gone to writes as to reads.
func liveEnd(sc *Scope, entity, col, live string) string {
	return fmt.Sprintf(`CASE WHEN u.c = '%s' THEN coalesce((SELECT f."id" FROM %s f WHERE f."id" = u.%s::uuid AND %s), '00000000-0000-0000-0000-000000000000'::uuid) ELSE u.%s::uuid END`,
		col, sc.compiler.Table(entity), col, live, col)
}

// NestedCreateSQL is the statement a create of entity with nested writes
// runs (see nestedPlan.sql), for the benchmark's minimal handler, which
// must run the very statement DDS runs.
func NestedCreateSQL(sc *Scope, entity string, input map[string]any) (string, []any, error) {
	e, err := sc.compiler.Entity(entity)
	if err != nil {
		return "", nil, err
	}
	p := newNestedPlan(e)
	errs, err := p.add(sc, relFields(sc.Schema.Def, e), 0, input)
	if err != nil {
		return "", nil, err
	}
	if err := apperr.Fields(errs); err != nil {
		return "", nil, err
	}
	return p.sql(sc)
}

// createNested is Create of an input with nested writes.
func (s *Store) createNested(ctx context.Context, sc *Scope, e *schema.Entity, input map[string]any) (json.RawMessage, error) {
	p := newNestedPlan(e)
	errs, err := p.add(sc, relFields(sc.Schema.Def, e), 0, input)
	if err != nil {
		return nil, err
	}
	if err := apperr.Fields(errs); err != nil {
		return nil, err
	}
	for _, f := range p.files {
		if err := s.VerifyRowFiles(ctx, sc, f.row); err != nil {
			return nil, prefixed(f.path, err)
		}
	}
	out, _, failures, err := s.runNested(ctx, sc, p)
	if err != nil {
		return nil, err
	}
	if len(failures) > 0 {
		return nil, failures[0].error()
	}
	var list []json.RawMessage
	if err := json.Unmarshal(out, &list); err != nil || len(list) != 1 {
		return nil, apperr.New(apperr.Internal, "nested create returned %d records", len(list))
	}
	return sc.redact(e.Name, list[0]), nil
}

// prefixed puts prefix before the field of each detail of a validation
// error (a nested record's FILE field).
func prefixed(prefix string, err error) error {
	if prefix == "" {
		return err
	}
	ae := apperr.As(err)
	if ae.Code != apperr.Validation {
		return err
	}
	var ie itemErrs
	ie.addPrefixed(prefix, err)
	return apperr.Fields(ie)
}

type nestedFailure struct {
	item int
	errs []apperr.FieldError
	// code, when set, is the failure's code (else VALIDATION_ERROR): under
	// rules a connect naming no record the principal may link is
	// NOT_FOUND, a failed check FORBIDDEN.
	code apperr.Code
}

func (f nestedFailure) error() error {
	e := apperr.Fields(f.errs)
	if f.code != "" {
		e.Code = f.code
	}
	return e
}

// runNested runs the plan's statement and announces its events. A connect
// id naming no record fails the statement on the edge's foreign key: the
// connect ids are then looked up, and each missing one is a failure of its
// item naming its path.
func (s *Store) runNested(ctx context.Context, sc *Scope, p *nestedPlan) (json.RawMessage, int, []nestedFailure, error) {
	q, args, err := p.sql(sc)
	if err != nil {
		return nil, 0, nil, err
	}
	var n int
	var out []byte
	var events sql.NullString
	var failures []nestedFailure
	if sc.compiler.HasRules() { // rulewrites.go: the checks run in the write's transaction
		err = s.inTx(ctx, func(tx *sqlx.Tx) error {
			if err := tx.QueryRowxContext(ctx, q, sc.bind(args)...).Scan(&n, &out, &events); err != nil {
				return err
			}
			if failures, err = sc.nestedChecks(ctx, tx, p); err != nil {
				return err
			}
			if len(failures) > 0 {
				return errRolledBack
			}
			return nil
		})
		if errors.Is(err, errRolledBack) {
			return nil, 0, failures, nil
		}
	} else {
		err = s.write(ctx, func(qr sqlx.QueryerContext) error {
			return qr.QueryRowxContext(ctx, q, args...).Scan(&n, &out, &events)
		})
	}
	if err == nil {
		s.announce(sc.TenantID, events.String)
		return out, n, nil, nil
	}
	if pe, ok := db.PgError(err); ok && pe.Code == "23503" { // foreign_key_violation: a connect id is missing
		failures, ferr := s.missingConnects(ctx, sc, p)
		if ferr != nil {
			return nil, 0, nil, ferr
		}
		if len(failures) > 0 {
			return nil, 0, failures, nil
		}
	}
	return nil, 0, nil, p.mapError(sc, err)
}

// missingConnects names every connect id of p that names no live record
// (a soft-deleted record cannot be connected: liveEnd).
func (s *Store) missingConnects(ctx context.Context, sc *Scope, p *nestedPlan) ([]nestedFailure, error) {
	var failures []nestedFailure
	far := make([]string, 0, len(p.connects))
	for name := range p.connects {
		far = append(far, name)
	}
	sort.Strings(far)
	byItem := map[int]int{}
	for _, name := range far {
		refs := p.connects[name]
		have, err := s.linkable(ctx, sc, name, refs)
		if err != nil {
			return nil, err
		}
		for _, r := range refs {
			if have[linkKey(r)] {
				continue
			}
			fe := apperr.FieldError{Field: r.path, Message: fmt.Sprintf("no %s has id %s", name, r.id)}
			if k, ok := byItem[r.item]; ok {
				failures[k].errs = append(failures[k].errs, fe)
				continue
			}
			byItem[r.item] = len(failures)
			f := nestedFailure{item: r.item, errs: []apperr.FieldError{fe}}
			if sc.compiler.HasRules() {
				f.code = apperr.NotFound
			}
			failures = append(failures, f)
		}
	}
	sort.Slice(failures, func(i, j int) bool { return failures[i].item < failures[j].item })
	return failures, nil
}

// mapError maps a statement error, naming a unique field of a nested
// record by the relationship field it was created under.
func (p *nestedPlan) mapError(sc *Scope, err error) error {
	if pe, ok := db.PgError(err); ok && pe.Code == "23505" {
		for _, g := range p.creates {
			for i := range g.e.Fields {
				if schema.UniqueIndexName(g.e.Name, g.e.Fields[i].Name) == pe.ConstraintName {
					return &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("%s: a %s created by this request has a value another %s already has", g.e.Fields[i].Name, g.e.Name, g.e.Name),
						Details: []apperr.FieldError{{Field: g.e.Fields[i].Name, Message: "must be unique"}}, Err: err}
				}
			}
		}
	}
	return MapError(sc, p.e.Name, err)
}

// batchCreateNested is BatchCreate of items some of which carry nested
// writes: every item's parts are validated (failures name the item and
// the path), the parents' unique values and every FILE reference are
// checked, then one statement writes everything.
func (s *Store) batchCreateNested(ctx context.Context, sc *Scope, e *schema.Entity, items []any) (*BatchResult, error) {
	b := newBatch(len(items))
	p := newNestedPlan(e)
	rels := relFields(sc.Schema.Def, e)
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			b.fail(i, it, apperr.New(apperr.Validation, "item must be a JSON object of fields"))
			p.parents, p.ids = append(p.parents, Row{}), append(p.ids, "")
			continue
		}
		obj, err := sc.createRules(e, obj) // rulewrites.go
		if err != nil {
			b.fail(i, it, err)
			p.parents, p.ids = append(p.parents, Row{}), append(p.ids, "")
			continue
		}
		errs, err := p.add(sc, rels, i, obj)
		if err != nil {
			return nil, err
		}
		if len(errs) > 0 {
			b.fieldFail(i, it, errs)
		}
	}
	if len(b.res.Failed) == 0 {
		s.checkUnique(ctx, sc, e, items, p.parents, map[int]bool{}, nil, b)
	}
	if len(b.res.Failed) == 0 {
		t0 := time.Now()
		for _, f := range p.files {
			if err := s.VerifyRowFiles(ctx, sc, f.row); err != nil {
				b.fail(f.item, items[f.item], prefixed(f.path, err))
			}
		}
		b.dbTime += time.Since(t0)
	}
	if len(b.res.Failed) > 0 {
		return b.done(nil, 0), nil
	}
	b.checked = time.Now()
	t0 := time.Now()
	out, n, failures, err := s.runNested(ctx, sc, p)
	b.dbTime += time.Since(t0)
	if err != nil {
		return nil, err
	}
	for _, f := range failures {
		b.fail(f.item, items[f.item], f.error())
	}
	return b.done(sc.redactList(e.Name, out), n), nil
}

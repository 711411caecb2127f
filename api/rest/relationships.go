package rest

import (
	"encoding/json"
	"net/http"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
)

// Relationship endpoints (docs/rest.md, Relationships), guarded by relationship:<TYPE>:<op>.
//
// Edge objects (create, update, delete responses):
//
//	{"id", "type", "sourceId", "targetId", "properties", "createdAt"}
//
// List items are the far node's fields plus
//
//	"_relationship": {"id", "type", "direction": "out"|"in", "createdAt"}
//	"properties":    {...the edge's properties}
//
// in {"items": [...]}, ordered by edge creation unless orderBy names a field
// of the far node.
func (h *Handler) relationshipRoutes(r *api.Router) {
	const base = "/api/v1/dynamic/{entity}/{id}/relationships/{rel}"
	r.Handle("POST "+base, api.Func(h.createEdge))
	r.Handle("GET "+base, api.Func(h.listEdges))
	r.Handle("PATCH "+base+"/{target}", api.Func(h.updateEdges))
	r.Handle("PATCH "+base+"/by-id/{edge}", api.Func(h.updateEdge))
	r.Handle("DELETE "+base+"/{target}", api.Func(h.deleteEdges))
	r.Handle("DELETE "+base+"/by-id/{edge}", api.Func(h.deleteEdge))
}

// relScope authorises op on the path's relationship.
func (h *Handler) relScope(r *http.Request, op string) (*records.Scope, error) {
	p := api.Principal(r)
	if err := p.Require("relationship", r.PathValue("rel"), op); err != nil {
		return nil, err
	}
	sc, err := h.store.Scope(r.Context(), p)
	if err != nil {
		return nil, err
	}
	if _, err := sc.Entity(r.PathValue("entity")); err != nil {
		return nil, err
	}
	if _, err := sc.Relationship(r.PathValue("rel")); err != nil {
		return nil, err
	}
	if op == "read" {
		return withDeleted(r, sc, r.PathValue("entity"))
	}
	return sc, nil
}

func (h *Handler) createEdge(r *http.Request) (int, any, error) {
	sc, err := h.relScope(r, "create")
	if err != nil {
		return 0, nil, err
	}
	var body struct {
		TargetID   *string        `json:"targetId"`
		Properties map[string]any `json:"properties"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		return 0, nil, err
	}
	if body.TargetID == nil || *body.TargetID == "" {
		return 0, nil, apperr.Field("targetId", "is required")
	}
	out, err := h.store.CreateEdge(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), *body.TargetID, body.Properties)
	return http.StatusCreated, out, err
}

func (h *Handler) listEdges(r *http.Request) (int, any, error) {
	sc, err := h.relScope(r, "read")
	if err != nil {
		return 0, nil, err
	}
	q := r.URL.Query()
	n := query.Nested{Relationship: r.PathValue("rel"), Direction: query.Direction(q.Get("direction")), Edges: true}
	switch n.Direction {
	case "", query.DirOut, query.DirIn, query.DirBoth:
	default:
		return 0, nil, apperr.Field("direction", "must be out, in or both")
	}
	if err := pageParams(q, &n.Limit, &n.Offset); err != nil {
		return 0, nil, err
	}
	if n.Where, err = query.ParseWhereJSON(q.Get("where"), "where"); err != nil {
		return 0, nil, err
	}
	if n.EdgeWhere, err = query.ParseWhereJSON(q.Get("edgeWhere"), "edgeWhere"); err != nil {
		return 0, nil, err
	}
	if n.OrderBy, err = orderParams(q); err != nil {
		return 0, nil, err
	}
	if s := q.Get("select"); s != "" {
		n.Select.Fields = splitList(s)
	}
	out, err := h.store.ListEdges(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), n)
	return http.StatusOK, out, err
}

func (h *Handler) propertiesBody(r *http.Request) (map[string]any, error) {
	var body struct {
		Properties map[string]any `json:"properties"`
	}
	if err := api.DecodeJSON(r, &body); err != nil {
		return nil, err
	}
	if body.Properties == nil {
		return nil, apperr.Field("properties", "is required (an object)")
	}
	return body.Properties, nil
}

func (h *Handler) updateEdges(r *http.Request) (int, any, error) {
	sc, props, err := h.edgeUpdate(r)
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.UpdateEdges(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("target"), props)
	return http.StatusOK, out, err
}

func (h *Handler) updateEdge(r *http.Request) (int, any, error) {
	sc, props, err := h.edgeUpdate(r)
	if err != nil {
		return 0, nil, err
	}
	out, err := h.store.UpdateEdgeByID(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("edge"), props)
	return http.StatusOK, firstItem(out), err
}

// edgeUpdate authorises an edge update and decodes its properties body.
func (h *Handler) edgeUpdate(r *http.Request) (*records.Scope, map[string]any, error) {
	sc, err := h.relScope(r, "update")
	if err != nil {
		return nil, nil, err
	}
	props, err := h.propertiesBody(r)
	return sc, props, err
}

func (h *Handler) deleteEdges(r *http.Request) (int, any, error) {
	sc, err := h.relScope(r, "delete")
	if err != nil {
		return 0, nil, err
	}
	_, err = h.store.DeleteEdges(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("target"))
	return http.StatusNoContent, nil, err
}

func (h *Handler) deleteEdge(r *http.Request) (int, any, error) {
	sc, err := h.relScope(r, "delete")
	if err != nil {
		return 0, nil, err
	}
	_, err = h.store.DeleteEdgeByID(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("edge"))
	return http.StatusNoContent, nil, err
}

// firstItem unwraps {"items": [x]} to x.
func firstItem(out json.RawMessage) json.RawMessage {
	var v struct {
		Items []json.RawMessage `json:"items"`
	}
	if json.Unmarshal(out, &v) == nil && len(v.Items) == 1 {
		return v.Items[0]
	}
	return out
}

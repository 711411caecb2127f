package rest

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/dds-project/dds/api"
	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/query"
	"github.com/dds-project/dds/records"
)

// Relationship endpoints (spec §4.5), guarded by relationship:<TYPE>:<op>.
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
	r.HandleFunc("POST "+base, h.createEdge)
	r.HandleFunc("GET "+base, h.listEdges)
	r.HandleFunc("PATCH "+base+"/{target}", h.updateEdges)
	r.HandleFunc("PATCH "+base+"/by-id/{edge}", h.updateEdge)
	r.HandleFunc("DELETE "+base+"/{target}", h.deleteEdges)
	r.HandleFunc("DELETE "+base+"/by-id/{edge}", h.deleteEdge)
}

// relScope authorises op on the path's relationship.
func (h *Handler) relScope(r *http.Request, op string) (*records.Scope, error) {
	p := api.Principal(r)
	if err := p.Require("relationship", r.PathValue("rel"), op); err != nil {
		return nil, err
	}
	sc, err := h.store.Scope(r.Context(), p.TenantID)
	if err != nil {
		return nil, err
	}
	if _, err := sc.Compiler.Entity(r.PathValue("entity")); err != nil {
		return nil, err
	}
	if _, err := sc.Compiler.Relationship(r.PathValue("rel")); err != nil {
		return nil, err
	}
	return sc, nil
}

func (h *Handler) createEdge(w http.ResponseWriter, r *http.Request) {
	sc, err := h.relScope(r, "create")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	var body struct {
		TargetID   *string        `json:"targetId"`
		Properties map[string]any `json:"properties"`
	}
	if err := decodeStrict(r, &body, "targetId", "properties"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if body.TargetID == nil || *body.TargetID == "" {
		api.WriteError(w, r, apperr.Field("targetId", "is required"))
		return
	}
	out, err := h.store.CreateEdge(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), *body.TargetID, body.Properties)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusCreated, out)
}

func (h *Handler) listEdges(w http.ResponseWriter, r *http.Request) {
	sc, err := h.relScope(r, "read")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	q := r.URL.Query()
	n := query.Nested{Relationship: r.PathValue("rel"), Direction: query.Direction(q.Get("direction")), Edges: true}
	switch n.Direction {
	case "", query.DirOut, query.DirIn, query.DirBoth:
	default:
		api.WriteError(w, r, apperr.Field("direction", "must be out, in or both"))
		return
	}
	for _, p := range []struct {
		name string
		dst  *int
	}{{"limit", &n.Limit}, {"offset", &n.Offset}} {
		if v := q.Get(p.name); v != "" {
			x, err := strconv.Atoi(v)
			if err != nil {
				api.WriteError(w, r, apperr.Field(p.name, "must be an integer"))
				return
			}
			*p.dst = x
		}
	}
	if n.Where, err = query.ParseWhereJSON(q.Get("where"), "where"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if n.EdgeWhere, err = query.ParseWhereJSON(q.Get("edgeWhere"), "edgeWhere"); err != nil {
		api.WriteError(w, r, err)
		return
	}
	if f := q.Get("orderBy"); f != "" {
		if n.OrderBy, err = orderOne(f, q.Get("orderDirection"), "orderBy"); err != nil {
			api.WriteError(w, r, err)
			return
		}
	} else if d := q.Get("orderDirection"); d != "" {
		if _, err := direction(d, "orderDirection"); err != nil {
			api.WriteError(w, r, err)
			return
		}
	}
	if s := q.Get("select"); s != "" {
		n.Select.Fields = splitList(s)
	}
	out, err := h.store.ListEdges(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), n)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, out)
}

func (h *Handler) propertiesBody(r *http.Request) (map[string]any, error) {
	var body struct {
		Properties map[string]any `json:"properties"`
	}
	if err := decodeStrict(r, &body, "properties"); err != nil {
		return nil, err
	}
	if body.Properties == nil {
		return nil, apperr.Field("properties", "is required (an object)")
	}
	return body.Properties, nil
}

func (h *Handler) updateEdges(w http.ResponseWriter, r *http.Request) {
	sc, err := h.relScope(r, "update")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	props, err := h.propertiesBody(r)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	out, err := h.store.UpdateEdges(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("target"), props)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, out)
}

func (h *Handler) updateEdge(w http.ResponseWriter, r *http.Request) {
	sc, err := h.relScope(r, "update")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	props, err := h.propertiesBody(r)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	out, err := h.store.UpdateEdgeByID(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("edge"), props)
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	api.WriteRaw(w, http.StatusOK, firstItem(out))
}

func (h *Handler) deleteEdges(w http.ResponseWriter, r *http.Request) {
	sc, err := h.relScope(r, "delete")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if _, err := h.store.DeleteEdges(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("target")); err != nil {
		api.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (h *Handler) deleteEdge(w http.ResponseWriter, r *http.Request) {
	sc, err := h.relScope(r, "delete")
	if err != nil {
		api.WriteError(w, r, err)
		return
	}
	if _, err := h.store.DeleteEdgeByID(r.Context(), sc, r.PathValue("entity"), r.PathValue("id"), r.PathValue("rel"), r.PathValue("edge")); err != nil {
		api.WriteError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
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

// decodeStrict decodes an object body allowing only dst's members.
func decodeStrict(r *http.Request, dst any, _ ...string) error { return decodeBody(r, dst) }

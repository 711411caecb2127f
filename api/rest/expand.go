package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/files"
	"github.com/dds-project/dds/records"
)

// FileLookup resolves file ids to their metadata and presigns their
// downloads (the file service).
type FileLookup interface {
	GetMany(ctx context.Context, tenantID string, ids []string) (map[string]files.File, error)
	DownloadURL(ctx context.Context, tenantID, id string) (*files.Download, error)
}

// wantsFiles reports whether the request asked for ?expand=files.
func wantsFiles(r *http.Request) bool { return r.URL.Query().Get("expand") == "files" }

// expandFiles adds "_files": {field: metadata} to each record of out (a
// record, or a list envelope with "items") for the entity's FILE fields,
// with one lookup for the whole response. A field whose file is gone maps
// to null. No user field can start with "_", so the key cannot collide.
func (h *Handler) expandFiles(ctx context.Context, sc *records.Scope, entity string, out []byte, list bool) ([]byte, error) {
	e, _ := sc.Schema.Def.Entity(entity)
	var fields []string // only those the principal may read: "_files" names no hidden field
	for _, f := range e.FileFields() {
		if sc.Readable(entity, f) {
			fields = append(fields, f)
		}
	}
	if len(fields) == 0 || h.files == nil {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, apperr.Wrap(err, "expand files")
	}
	var recs []map[string]any
	if list {
		items, _ := doc["items"].([]any)
		for _, it := range items {
			if m, ok := it.(map[string]any); ok {
				recs = append(recs, m)
			}
		}
	} else {
		recs = []map[string]any{doc}
	}
	var ids []string
	for _, m := range recs {
		for _, f := range fields {
			if id, ok := m[f].(string); ok {
				ids = append(ids, id)
			}
		}
	}
	meta, err := h.files.GetMany(ctx, sc.TenantID, ids)
	if err != nil {
		return nil, err
	}
	for _, m := range recs {
		exp := map[string]any{}
		for _, f := range fields {
			if id, ok := m[f].(string); ok {
				if fm, found := meta[id]; found {
					exp[f] = fm
					continue
				}
			}
			exp[f] = nil
		}
		m["_files"] = exp
	}
	return json.Marshal(doc)
}

package openapi

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/dds-project/dds/apperr"
	"github.com/dds-project/dds/schema"
)

// View is what one credential may see of a schema (docs/auth.md, "A
// schema per role"): the operations its scopes allow and the fields its
// roles' field lists let it read (records, filters, selections, sort
// keys) and write (create, replace, patch, nested create and upsert
// bodies). A nil func allows everything.
type View struct {
	Allows   func(kind, name, op string) bool
	Readable func(entity, field string) bool
	Writable func(entity, field string) bool
}

func (v *View) can(kind, name, op string) bool { return v.Allows == nil || v.Allows(kind, name, op) }

func (v *View) visible(kind, name string) bool {
	for _, op := range []string{"read", "create", "update", "delete"} {
		if v.can(kind, name, op) {
			return true
		}
	}
	return false
}

// OpenAPIFor renders the document of a schema version as v sees it: the
// document of the schema projected to the entities and relationships it
// may reach and the fields it may read, with the write bodies of the
// projection to the fields it may write, then without the operations its
// scopes do not allow and the components no remaining operation uses.
// A nil v is OpenAPI.
func (g *Generator) OpenAPIFor(info schema.Info, v *View) ([]byte, error) {
	if v == nil {
		return g.OpenAPI(info)
	}
	read, err := g.documentMap(project(info, v, v.Readable, false))
	if err != nil {
		return nil, err
	}
	write, err := g.documentMap(project(info, v, v.Writable, true))
	if err != nil {
		return nil, err
	}
	schemas, _ := read["components"].(map[string]any)["schemas"].(map[string]any)
	for name, s := range write["components"].(map[string]any)["schemas"].(map[string]any) {
		if isWriteBody(name) {
			schemas[name] = s
		}
	}
	pruneOperations(read, v)
	pruneComponents(read)
	b, err := json.MarshalIndent(read, "", "  ")
	if err != nil {
		return nil, apperr.Wrap(err, "render OpenAPI document")
	}
	return append(b, '\n'), nil
}

// isWriteBody reports whether a component is a request body of a write
// (or part of one), whose properties are the writable fields.
func isWriteBody(name string) bool {
	for _, suf := range []string{".Input", ".Patch", ".CreateInput", ".Upsert"} {
		if strings.HasSuffix(name, suf) {
			return true
		}
	}
	return strings.Contains(name, ".Nested.")
}

// project is info with only the entities and relationships v may reach
// (with edges, only the relationships whose edges it may create: the
// nested writes of a create body) and, of those entities, only the fields
// keep admits.
func project(info schema.Info, v *View, keep func(entity, field string) bool, edges bool) schema.Info {
	out := info
	out.Entities = nil
	out.Relationships = nil
	for _, e := range info.Entities {
		if !v.visible("entity", e.Name) {
			continue
		}
		pe := e
		pe.Fields = nil
		for _, f := range e.Fields {
			if keep == nil || keep(e.Name, f.Name) {
				pe.Fields = append(pe.Fields, f)
			}
		}
		out.Entities = append(out.Entities, pe)
	}
	for _, r := range info.Relationships {
		if edges && !v.can("relationship", r.Name, "create") {
			continue
		}
		if v.visible("relationship", r.Name) && v.visible("entity", r.From) && v.visible("entity", r.To) {
			out.Relationships = append(out.Relationships, r)
		}
	}
	return out
}

func (g *Generator) documentMap(info schema.Info) (map[string]any, error) {
	b, err := json.Marshal(g.Document(info))
	if err != nil {
		return nil, apperr.Wrap(err, "render OpenAPI document")
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, apperr.Wrap(err, "render OpenAPI document")
	}
	return m, nil
}

var methods = []string{"get", "put", "post", "patch", "delete", "head", "options", "trace"}

// pruneOperations drops the operations whose x-dds-scope (one scope, or
// several separated by spaces, all needed) v's scopes do not allow, the
// paths left without an operation and the tags no operation names.
func pruneOperations(doc map[string]any, v *View) {
	paths, _ := doc["paths"].(map[string]any)
	tags := map[string]bool{}
	for p, it := range paths {
		item, _ := it.(map[string]any)
		n := 0
		for _, m := range methods {
			o, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			if !allowsAll(v, o["x-dds-scope"]) {
				delete(item, m)
				continue
			}
			n++
			if ts, ok := o["tags"].([]any); ok {
				for _, t := range ts {
					tags[t.(string)] = true
				}
			}
		}
		if n == 0 {
			delete(paths, p)
		}
	}
	if ts, ok := doc["tags"].([]any); ok {
		kept := []any{}
		for _, t := range ts {
			if m, ok := t.(map[string]any); ok && tags[m["name"].(string)] {
				kept = append(kept, t)
			}
		}
		doc["tags"] = kept
	}
}

func allowsAll(v *View, scope any) bool {
	s, _ := scope.(string)
	for _, sc := range strings.Fields(s) {
		parts := strings.SplitN(sc, ":", 3)
		if len(parts) != 3 || !v.can(parts[0], parts[1], parts[2]) {
			return false
		}
	}
	return true
}

// pruneComponents drops the component schemas no remaining operation
// reaches (through any chain of $refs): a role's document describes only
// what it may send and receive.
func pruneComponents(doc map[string]any) {
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	const prefix = "#/components/schemas/"
	reached := map[string]bool{}
	var queue []string
	var walk func(x any)
	walk = func(x any) {
		switch x := x.(type) {
		case map[string]any:
			if r, ok := x["$ref"].(string); ok && strings.HasPrefix(r, prefix) {
				name := strings.TrimPrefix(r, prefix)
				if !reached[name] {
					reached[name] = true
					queue = append(queue, name)
				}
			}
			for _, v := range x {
				walk(v)
			}
		case []any:
			for _, v := range x {
				walk(v)
			}
		}
	}
	walk(doc["paths"])
	for k, v := range comps {
		if k != "schemas" {
			walk(v) // shared responses reference dds.Error
		}
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		walk(schemas[name])
	}
	names := make([]string, 0, len(schemas))
	for name := range schemas {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !reached[name] {
			delete(schemas, name)
		}
	}
}

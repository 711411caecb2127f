package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"
	"strings"

	"github.com/dds-project/dds/roles"
	"github.com/dds-project/dds/schema"
)

// Roles in the schema file (docs/schemas.md, Schemas as code). A file with
// a "roles" member ({name: {scopes, rules, fields}}) stands for the
// tenant's whole set of roles: diff lists the roles added, removed and
// changed (each rule and field list), and push applies the file through
// POST /api/v1/schemas/push, which validates the roles against the pushed
// schema and writes schema and roles in one transaction. A file without
// "roles" leaves the tenant's roles alone; "roles": {} stands for a tenant
// with no roles (push deletes every role), and is what pull writes for
// a tenant that has none, so a pulled file always says what it holds.

// schemaFile is the file: a schema definition and, optionally, roles.
// Roles is nil when the file has no "roles" member and an empty map when
// it has "roles": {} (omitzero keeps the empty map in the file, where
// omitempty would drop it and turn "no roles" into "leave roles alone").
type schemaFile struct {
	schema.Definition
	Roles map[string]*roles.Definition `json:"roles,omitzero"`
}

// tenantRoles reads the tenant's roles as a file holds them.
func (c *apiClient) tenantRoles(ctx context.Context) (map[string]*roles.Definition, error) {
	var res struct {
		Roles []struct {
			Name string `json:"name"`
			roles.Definition
		} `json:"roles"`
	}
	if err := c.call(ctx, http.MethodGet, "/api/v1/roles", nil, &res); err != nil {
		return nil, err
	}
	out := make(map[string]*roles.Definition, len(res.Roles))
	for i := range res.Roles {
		out[res.Roles[i].Name] = &res.Roles[i].Definition
	}
	return out, nil
}

// pushAnswer is the answer of POST /api/v1/schemas/push.
type pushAnswer struct {
	ID      string `json:"id"`
	Version int    `json:"version"`
	Active  bool   `json:"active"`
	Created bool   `json:"created"`
	Plan    struct {
		Steps []planStep `json:"steps"`
	} `json:"plan"`
	Roles []roles.RoleChange `json:"roles"`
}

// pushWithRoles posts the file to POST /api/v1/schemas/push.
func (c *apiClient) pushWithRoles(ctx context.Context, f *schemaFile, allow, dryRun bool) (*pushAnswer, error) {
	path := "/api/v1/schemas/push"
	var q []string
	if allow {
		q = append(q, "allowDataLoss=true")
	}
	if dryRun {
		q = append(q, "dryRun=true")
	}
	if len(q) > 0 {
		path += "?" + strings.Join(q, "&")
	}
	var res pushAnswer
	err := c.call(ctx, http.MethodPost, path, map[string]any{"schema": &f.Definition, "roles": f.Roles}, &res)
	return &res, err
}

// schemaDiffWithRoles is diff for a file with roles: the server's dry run
// (the schema plan, the roles validated against the pushed schema) and the
// role changes.
func schemaDiffWithRoles(ctx context.Context, c *apiClient, f *schemaFile, out io.Writer) error {
	cur, err := c.named(ctx, f.Name)
	if err != nil {
		return err
	}
	have, err := c.tenantRoles(ctx)
	if err != nil {
		return err
	}
	res, err := c.pushWithRoles(ctx, f, false, true)
	if err != nil { // the roles as they would change, then why push would fail
		printRoleDiff(out, have, f.Roles)
		return fmt.Errorf("%w\npush would apply nothing", err)
	}
	var planErr error
	if cur == nil {
		fmt.Fprintf(out, "schema %s does not exist: push creates it (%d entities, %d relationships)\n", f.Name, len(f.Entities), len(f.Relationships))
	} else {
		planErr = printPlan(out, cur, res.Plan.Steps)
	}
	printRoleDiff(out, have, f.Roles)
	return planErr
}

// schemaPushWithRoles is push for a file with roles.
func schemaPushWithRoles(ctx context.Context, c *apiClient, f *schemaFile, allow, activate bool, out io.Writer) error {
	cur, err := c.named(ctx, f.Name)
	if err != nil {
		return err
	}
	res, err := c.pushWithRoles(ctx, f, allow, false)
	var ae *apiError
	if errors.As(err, &ae) && ae.status == http.StatusConflict && ae.plan != nil && cur != nil {
		_ = printPlan(out, cur, ae.plan)
		return fmt.Errorf("%s: nothing was applied (schema nor roles); repeat with --allow-data-loss to apply it", ae.message)
	}
	if err != nil {
		return fmt.Errorf("%w\nnothing was applied (schema nor roles)", err)
	}
	if res.Created {
		fmt.Fprintf(out, "created schema %s (version %d)\n", f.Name, res.Version)
	} else {
		fmt.Fprintf(out, "pushed schema %s: version %d -> %d (%d steps applied)\n", f.Name, cur.Version, res.Version, len(res.Plan.Steps))
	}
	if len(res.Roles) == 0 {
		fmt.Fprintf(out, "roles: no changes (%d roles)\n", len(f.Roles))
	}
	for _, rc := range res.Roles {
		fmt.Fprintf(out, "role %s %s\n", rc.Name, rc.Change)
	}
	if activate && !res.Active {
		if err := c.call(ctx, http.MethodPost, "/api/v1/schemas/"+res.ID+"/activate", nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(out, "activated schema %s\n", f.Name)
	}
	return nil
}

// printRoleDiff prints the roles of want against those the tenant has:
// "+ role NAME" (added, with its parts), "- role NAME" (removed) and
// "~ role NAME" (changed) with one line per changed part: a rule's
// filter old -> new, a field or scope list's added and removed names.
func printRoleDiff(out io.Writer, have, want map[string]*roles.Definition) {
	names := map[string]bool{}
	for n := range have {
		names[n] = true
	}
	for n := range want {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	var lines []string
	for _, n := range sorted {
		h, w := have[n], want[n]
		switch {
		case h == nil:
			lines = append(lines, "+ role "+n+" (new)")
			for _, p := range roleParts(w) {
				lines = append(lines, "    + "+p.path+": "+p.show())
			}
		case w == nil:
			lines = append(lines, "- role "+n+" (removed: credentials holding it lose it)")
		default:
			if ch := roleChanges(h, w); len(ch) > 0 {
				lines = append(lines, "~ role "+n)
				for _, l := range ch {
					lines = append(lines, "    "+l)
				}
			}
		}
	}
	if len(lines) == 0 {
		fmt.Fprintf(out, "roles: no changes (%d roles)\n", len(want))
		return
	}
	fmt.Fprintln(out, "roles:")
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
}

// rolePart is one rule or list of a role, by its path in the file.
type rolePart struct {
	path   string
	list   []string // scopes and field lists
	json   string   // rules: the filter as compact JSON
	isList bool
}

func (p rolePart) show() string {
	if p.isList {
		return "[" + strings.Join(p.list, ", ") + "]"
	}
	return p.json
}

// roleParts flattens a role into its parts, in path order.
func roleParts(d *roles.Definition) []rolePart {
	var out []rolePart
	out = append(out, rolePart{path: "scopes", list: d.Scopes, isList: true})
	rule := func(path string, m map[string]any) {
		if m != nil {
			out = append(out, rolePart{path: path, json: compactJSON(m)})
		}
	}
	for _, e := range sortedNames(d.Rules) {
		r := d.Rules[e]
		if r == nil {
			continue
		}
		p := "rules." + e
		rule(p+".read", r.Read)
		if r.Create != nil {
			rule(p+".create.check", r.Create.Check)
			rule(p+".create.preset", r.Create.Preset)
		}
		if r.Update != nil {
			rule(p+".update.where", r.Update.Where)
			rule(p+".update.check", r.Update.Check)
		}
		rule(p+".delete", r.Delete)
	}
	for _, e := range sortedNames(d.Fields) {
		fl := d.Fields[e]
		if fl == nil {
			continue
		}
		if fl.Read != nil {
			out = append(out, rolePart{path: "fields." + e + ".read", list: fl.Read, isList: true})
		}
		if fl.Write != nil {
			out = append(out, rolePart{path: "fields." + e + ".write", list: fl.Write, isList: true})
		}
	}
	return out
}

// roleChanges lists the parts that differ between two versions of a role.
func roleChanges(h, w *roles.Definition) []string {
	hp, wp := map[string]rolePart{}, map[string]rolePart{}
	var paths []string
	for _, p := range roleParts(h) {
		hp[p.path] = p
		paths = append(paths, p.path)
	}
	for _, p := range roleParts(w) {
		wp[p.path] = p
		if _, ok := hp[p.path]; !ok {
			paths = append(paths, p.path)
		}
	}
	sort.Strings(paths)
	var out []string
	for _, path := range paths {
		a, inH := hp[path]
		b, inW := wp[path]
		switch {
		case !inH:
			out = append(out, "+ "+path+": "+b.show())
		case !inW:
			out = append(out, "- "+path+": "+a.show())
		case a.isList:
			var plus, minus []string
			for _, x := range b.list {
				if !slices.Contains(a.list, x) {
					plus = append(plus, "+"+x)
				}
			}
			for _, x := range a.list {
				if !slices.Contains(b.list, x) {
					minus = append(minus, "-"+x)
				}
			}
			if len(plus)+len(minus) > 0 {
				out = append(out, "~ "+path+": "+strings.Join(append(plus, minus...), " "))
			}
		case a.json != b.json:
			out = append(out, "~ "+path+": "+a.json+" -> "+b.json)
		}
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// compactJSON renders a filter with sorted members, so equal filters read
// the same whatever the order they were written in.
func compactJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var n any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if d.Decode(&n) != nil {
		return string(b)
	}
	b, _ = json.Marshal(n)
	return string(b)
}
